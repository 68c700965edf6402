"""Checks of the bench's own parsing and arithmetic, so a figure it prints can be trusted.

    .venv/bin/pytest -q bench/test_bench.py

No server is started and nothing is timed: the parts tested here are the ones
that turn wrk's and py-spy's output into the numbers of the report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

# bench/ is not a package: its modules are imported from beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ceiling
import run
from hotspots import frame_name, summarise

# Real wrk 4.1 output (Debian), from a run against mockstore with the free key:
# almost every answer was a 429.
WRK_RATE_LIMITED = """\
Running 1s test @ http://127.0.0.1:18766/v1/pets?limit=20
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.39ms    2.53ms  27.30ms   91.71%
    Req/Sec     6.31k     2.90k   14.37k    90.00%
  Latency Distribution
     50%  395.00us
     75%    1.71ms
     90%    3.56ms
     99%   13.20ms
  6324 requests in 1.01s, 2.12MB read
  Non-2xx or 3xx responses: 6264
Requests/sec:   6285.54
Transfer/sec:      2.11MB
"""
WRK_CLEAN = WRK_RATE_LIMITED.replace("  Non-2xx or 3xx responses: 6264\n", "")
# wrk prints this line only when a count is not zero (src/wrk.c).
WRK_SOCKET_ERRORS = WRK_CLEAN.replace(
    "  6324 requests in 1.01s, 2.12MB read\n",
    "  6324 requests in 1.01s, 2.12MB read\n"
    "  Socket errors: connect 0, read 3, write 0, timeout 12\n",
)


def test_a_clean_wrk_run_is_read_and_valid() -> None:
    result = run.parse_wrk(WRK_CLEAN, "mockstore", 2)
    assert result.requests_per_second == pytest.approx(6285.54)
    assert result.p50_ms == pytest.approx(0.395)
    assert result.p99_ms == pytest.approx(13.2)
    assert result.requests == 6324
    assert (result.side, result.round) == ("mockstore", 2)
    assert result.valid and result.problems == []


def test_non_2xx_answers_invalidate_a_run() -> None:
    result = run.parse_wrk(WRK_RATE_LIMITED)
    assert result.non_2xx == 6264
    assert not result.valid
    assert result.problems == ["6264 non-2xx/3xx responses"]


def test_socket_errors_invalidate_a_run() -> None:
    result = run.parse_wrk(WRK_SOCKET_ERRORS)
    assert result.socket_errors == {"connect": 0, "read": 3, "write": 0, "timeout": 12}
    assert not result.valid
    assert "read 3" in result.problems[0] and "timeout 12" in result.problems[0]


def test_output_without_the_latency_distribution_is_refused() -> None:
    without = WRK_CLEAN.replace("     50%  395.00us\n", "")
    with pytest.raises(run.BenchError, match="--latency"):
        run.parse_wrk(without)


@pytest.mark.parametrize(
    ("text", "ms"),
    [("395.00us", 0.395), ("1.71ms", 1.71), ("2.00s", 2000.0), ("1.50m", 90_000.0)],
)
def test_wrk_durations_convert_to_milliseconds(text: str, ms: float) -> None:
    assert run._ms(text) == pytest.approx(ms)


def test_an_unknown_duration_unit_is_an_error() -> None:
    with pytest.raises(ValueError):
        run._ms("3.0ns")


@given(st.integers(min_value=2, max_value=70_000))
def test_the_ceiling_body_is_json_of_exactly_the_asked_size(size: int) -> None:
    body = ceiling.constant_body(size)
    assert len(body) == size
    assert isinstance(json.loads(body), str)


def test_the_ceiling_app_serves_its_body_on_the_benchmarked_path() -> None:
    body = ceiling.constant_body(1135)
    with TestClient(ceiling.build_app(body)) as client:
        response = client.get("/v1/pets?limit=20", headers={"Authorization": "Bearer bench-key"})
    assert response.status_code == 200
    assert response.content == body
    assert response.headers["content-type"] == "application/json"


def _run(side: str, round_: int, rps: float, cpu_us: float, share: float = 1.0) -> run.WrkRun:
    result = run.parse_wrk(WRK_CLEAN, side, round_)
    result.requests_per_second = rps
    result.cpu_us_per_request = cpu_us
    result.server_cpu_share = share
    return result


def _side(side_id: str, runs: list[run.WrkRun]) -> run.Side:
    server = run.Server(side_id, [], 0, Path("/nonexistent"))
    return run.Side(side_id, side_id, run.LIST_20, server, runs=runs)


def test_a_comparison_uses_medians_and_pairs_rounds() -> None:
    top = _side("mockstore", [_run("mockstore", r, v, 40) for r, v in ((1, 80), (2, 90), (3, 85))])
    bottom = _side("ceiling", [_run("ceiling", r, v, 25) for r, v in ((1, 100), (2, 100), (3, 90))])
    stack = next(c for c in run.COMPARISONS if c.id == "stack")
    result = run.compare({"mockstore": top, "ceiling": bottom}, stack)
    assert result["ratio"] == pytest.approx(85 / 100)
    assert result["per_round_ratios"] == pytest.approx([0.8, 0.9, 85 / 90])
    assert result["cpu_cost_ratio"] == pytest.approx(25 / 40)
    assert result["verdict"] == "met"


def test_a_strict_target_is_missed_at_exactly_the_target() -> None:
    faults = next(c for c in run.COMPARISONS if c.id == "faults_50")
    top = _side("faults-50", [_run("faults-50", 1, 90, 10)])
    bottom = _side("mockstore", [_run("mockstore", 1, 100, 9)])
    result = run.compare({"faults-50": top, "mockstore": bottom}, faults)
    assert result["ratio"] == pytest.approx(0.9)
    assert result["verdict"] == "MISSED"


def test_an_invalid_or_contended_run_is_flagged_in_the_verdict() -> None:
    journal = next(c for c in run.COMPARISONS if c.id == "journal")
    on = _side("mockstore", [_run("mockstore", 1, 95, 10, share=0.5)])
    off = _side("journal-off", [_run("journal-off", 1, 100, 9)])
    result = run.compare({"mockstore": on, "journal-off": off}, journal)
    assert result["verdict"] == "met (noisy)"
    assert result["contended_runs"] == ["mockstore round 1"]
    on.runs[0].problems.append("12 non-2xx/3xx responses")
    result = run.compare({"mockstore": on, "journal-off": off}, journal)
    assert result["verdict"].startswith("INVALID")


def test_in_process_figures_predict_the_server_ratio() -> None:
    journal = next(c for c in run.COMPARISONS if c.id == "journal")
    on = _side("mockstore", [_run("mockstore", 1, 95, 33)])
    off = _side("journal-off", [_run("journal-off", 1, 100, 30)])
    on.inprocess_us, off.inprocess_us = [12.0, 13.0, 14.0], [9.0, 10.0, 30.0]
    result = run.compare({"mockstore": on, "journal-off": off}, journal)
    assert result["inprocess_added_us"] == pytest.approx(3.0)
    assert result["inprocess_predicted_ratio"] == pytest.approx(30 / 33)


def test_py_spy_frames_are_merged_across_lines_and_counted() -> None:
    raw = [
        "main (mockstore/cli.py:10);PetStoreAPI.__call__ (mockstore/api.py:200) 3",
        "main (mockstore/cli.py:10);PetStoreAPI.__call__ (mockstore/api.py:210) 2",
        "main (mockstore/cli.py:10);RequestResponseCycle.send (uvicorn/h.py:501) 5",
        "not a sample line",
    ]
    total, leaf, inclusive = summarise(raw)
    assert total == 10
    assert leaf["PetStoreAPI.__call__ (mockstore/api.py)"] == 5
    assert leaf["RequestResponseCycle.send (uvicorn/h.py)"] == 5
    assert inclusive["main (mockstore/cli.py)"] == 10
    assert "RequestResponseCycle.send (uvicorn/h.py)" not in inclusive
    assert frame_name("<module> (<frozen runpy>:88)") == "<module> (<frozen runpy>)"


# A callgrind output file in the shape callgrind 3.19 writes (compressed names,
# relative positions): stage_app_step calls stage_auth twice and another function once.
CALLGRIND = """\
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 1000
fl=(1) markers.c
fn=(1) stage_app_step
5 10
cfl=(1)
cfn=(2) stage_auth
calls=2 9
+1 300
cfn=(3) helper
calls=1 20
* 50
fn=(2)
9 250
cfn=(3)
calls=1 20
-2 50
fn=(4) stage_receive
3 40
totals: 1000
"""


def test_callgrind_output_gives_inclusive_costs_and_calls() -> None:
    from stages import read_callgrind

    profile = read_callgrind(CALLGRIND.splitlines())
    assert profile.total == 1000
    assert profile.inclusive["stage_app_step"] == 10 + 300 + 50
    assert profile.inclusive["stage_auth"] == 250 + 50
    assert profile.inclusive["stage_receive"] == 40
    assert (profile.calls["stage_auth"], profile.calls["helper"]) == (2, 2)


def test_a_stage_table_takes_the_markers_own_cost_out() -> None:
    from collections import Counter

    from stages import STAGES, Measured, Overhead, Profile, breakdown

    # 10 requests: one app call, two sends of 500 and one auth call each.
    inclusive = Counter(
        {"stage_app_step": 10 * 5000, "stage_send_step": 10 * 1000, "stage_auth": 10 * 700,
         "stage_receive": 10 * 2000, "gc_collect_main": 10 * 30}
    )  # fmt: skip
    calls = Counter({"stage_app_step": 10, "stage_send_step": 20, "stage_auth": 10,
                     "stage_receive": 10})  # fmt: skip
    profile = Profile(total=10 * 9000, inclusive=inclusive, calls=calls)
    overhead = Overhead(inside=50, wrapper=100, app_inside=200, app_wrapper=300, send_wrapper=40)
    figures = breakdown(Measured("mockstore", 10, profile, [], 0), overhead)
    assert figures["auth"] == 700 - 50
    assert figures["receive"] == 2000 - 50
    assert figures["send"] == 1000  # two sends, 500 each
    # The app less the auth wrapper, its own and the sends': 5000 - 100 - 200 - 2 * 40.
    assert figures["app"] == 4620
    assert figures["dispatch"] == 4620 - 1000 - 650
    # The total less every wrapper: the auth's and receive's, the app's and the sends'.
    assert figures["total"] == 9000 - 2 * 100 - 300 - 2 * 40
    assert figures["loop"] == figures["total"] - figures["receive"] - figures["app"]
    assert figures["gc"] == 30
    assert set(STAGES) <= set(figures)


# The attacked server's log of a held_mix run on main (uvloop's error for a write after
# the client left, logged by the app, then uvicorn's line), with a chained one after it.
HELD_MIX_LOG = """\
mockstore 0.1.0 serving http://127.0.0.1:45803/v1
2026-11-29T15:42:31.479+00:00 error unexpected error answering GET /v1/pets/1 (no answer)
    Traceback (most recent call last):
      File "/work/mockstore/fast_answer.py", line 87, in send_answer
        transport.writelines(
      File "uvloop/handles/handle.pyx", line 159, in uvloop.loop.UVHandle._ensure_alive
    RuntimeError: unable to perform operation on <TCPTransport closed=True>; the handler is closed
2026-11-29T15:42:31.480+00:00 error ASGI callable returned without completing response.
Traceback (most recent call last):
  File "x.py", line 1, in <module>
KeyError: 'a'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "x.py", line 3, in <module>
ValueError: b
"""


def test_held_mix_finds_each_traceback_with_its_first_and_last_lines() -> None:
    import held_mix

    found = held_mix.tracebacks_in(HELD_MIX_LOG)
    assert found == [
        {
            "first": "2026-11-29T15:42:31.479+00:00 error unexpected error answering "
            "GET /v1/pets/1 (no answer)",
            "last": "RuntimeError: unable to perform operation on <TCPTransport closed=True>; "
            "the handler is closed",
        },
        {
            "first": "2026-11-29T15:42:31.480+00:00 error ASGI callable returned without "
            "completing response.",
            "last": "KeyError: 'a'",
        },
        {"first": "Traceback (most recent call last):", "last": "ValueError: b"},
    ]
    assert held_mix.tracebacks_in("no traceback here\n") == []
