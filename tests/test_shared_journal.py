"""The journal and ``--watch`` with a shared state: every process and every tool sees one mock.

Against a real ``redis-server`` (``tests/redis_server.py``) and real mockstore
processes. ``DELETE /__mockstore/requests`` through one process clears the
journal as every process shows it (the list, the report, ``mockstore report``,
verify, the HAR, the dashboard's feed), and what any process answers after it
is all there; ``serve --watch`` puts each valid edit in service in every
process. Conditions are waited for with deadlines, never for a time; a check
that something did NOT come waits for a later sign that it would have come by
then (a request sent after it, seen everywhere: each process's entries travel
in order).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockstore.journal import Entry, Journal
from mockstore.scenario import load_scenario
from mockstore.shared import SharedState
from mockstore.shared import journal as sharing
from mockstore.state import Runtime
from tests.redis_server import RedisServer, redis_available, required
from tests.support import TOOL, LiveServer, examples, live_server

pytestmark = pytest.mark.skipif(
    not redis_available() and not required(), reason="redis-server is not installed"
)

SCENARIO = """\
version: 1
name: shared-journal
clock: {start: "2026-03-01T12:00:05Z", mode: manual}
keys:
  - {key: pro-key, plan: pro}
"""
PRO = {"Authorization": "Bearer pro-key"}


@pytest.fixture
def scenario_file(tmp_path: Path) -> str:
    path = tmp_path / "shared.yaml"
    path.write_text(SCENARIO)
    return str(path)


def _until(condition: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def _create(server: LiveServer, name: str) -> None:
    answer = httpx.post(
        server.url + "/v1/pets", json={"name": name, "categoryId": 1}, headers=PRO, timeout=10
    )
    assert answer.status_code == 201, answer.text


def _names(server: LiveServer) -> list[str]:
    """The pets' names the journal of ``server`` shows created, in its order."""
    entries = httpx.get(server.url + "/__mockstore/requests", timeout=10).json()["entries"]
    return [json.loads(e["request"]["body"])["name"] for e in entries if e["request"]["body"]]


def _har_names(server: LiveServer) -> list[str]:
    har = httpx.get(server.url + "/__mockstore/requests.har", timeout=10).json()
    return [
        json.loads(e["request"]["postData"]["text"])["name"]
        for e in har["log"]["entries"]
        if e["request"].get("postData")
    ]


def _verified(server: LiveServer) -> int:
    """How many creates ``POST /__mockstore/verify`` counts in the journal of ``server``."""
    answer = httpx.post(
        server.url + "/__mockstore/verify",
        json={"operation": "createPet", "at_least": 0},
        headers=TOOL,
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return int(answer.json()["count"])


def _report_requests(server: LiveServer) -> int:
    report = httpx.get(server.url + "/__mockstore/report", timeout=30).json()
    return int(report["summary"]["requests"])


def _cli_report_requests(server: LiveServer) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "report", "--url", server.url, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["summary"]["requests"])


def _dashboard_names(server: LiveServer) -> list[str]:
    """The names in the dashboard feed's first ``requests`` event (its backlog)."""
    with httpx.stream("GET", server.url + "/__mockstore/events", timeout=10) as stream:
        event = None
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "requests":
                entries = json.loads(line.removeprefix("data: "))["entries"]
                return [
                    json.loads(e["request"]["body"])["name"]
                    for e in entries
                    if e["request"]["body"]
                ]
            elif (
                line.startswith("data: ")
                and event == "hello"
                and json.loads(line.removeprefix("data: "))["last_seq"] == 0
            ):
                return []  # nothing ever recorded: no batch comes
    raise AssertionError("the feed ended before its first batch")


def _everywhere(servers: tuple[LiveServer, ...], names: list[str]) -> None:
    """Wait until every server's journal shows exactly ``names`` (in any order)."""
    for server in servers:
        _until(
            lambda server=server: sorted(_names(server)) == sorted(names),
            f"{server.url} shows exactly {names} (it shows {_names(server)})",
        )


def test_a_clear_through_one_process_clears_the_journal_every_process_shows(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as a, live_server(*state) as b:
        before = [f"before-{index}" for index in range(6)]
        for index, name in enumerate(before[:4]):
            _create((a, b)[index % 2], name)
        _everywhere((a, b), before[:4])  # shipped and taken in everywhere
        # Two more just before the clear: b's is not shipped yet, or in flight to a.
        _create(b, before[4])
        _create(a, before[5])
        cleared = httpx.delete(a.url + "/__mockstore/requests", headers=TOOL, timeout=10)
        assert cleared.status_code == 204

        # At once, through the other process, every tool sees none of them.
        assert _names(b) == []
        assert _har_names(b) == []
        assert _report_requests(b) == 0
        assert _verified(b) == 0
        assert _names(a) == []

        after = [f"after-{index}" for index in range(6)]
        for index, name in enumerate(after):
            _create((b, a)[index % 2], name)
        # All of them everywhere, and nothing from before: each process's entries
        # travel in order, so once each shows the other's last one, all the other
        # shipped before it (a batch from before the clear included) has been taken in.
        _everywhere((a, b), after)
        for server in (a, b):
            assert _har_names(server) == _names(server)
            assert _report_requests(server) == len(after)
            assert _verified(server) == len(after)


def test_a_clear_while_redis_is_away_is_refused_and_clears_nothing(
    redis_server: RedisServer, scenario_file: str
) -> None:
    with live_server("--scenario", scenario_file, "--state", redis_server.url) as server:
        _create(server, "kept")
        assert _names(server) == ["kept"]  # a read ships and takes in what was answered
        redis_server.stop()
        refused = httpx.delete(server.url + "/__mockstore/requests", headers=TOOL, timeout=10)
        assert refused.status_code == 503
        assert refused.json()["code"] == "state_unavailable"
        assert refused.headers["retry-after"] == "1"
        # The journal is still there to look at (the 503s it holds say what happened).
        assert _names(server) == ["kept"]
        redis_server.start()
        _until(
            lambda: (
                httpx.delete(
                    server.url + "/__mockstore/requests", headers=TOOL, timeout=10
                ).status_code
                == 204
            ),
            "a clear once Redis is back",
        )
        assert _names(server) == []


@pytest.mark.slow
def test_a_clear_under_load_splits_the_requests_at_it_in_every_process_and_tool(
    redis_server: RedisServer, scenario_file: str
) -> None:
    """``mockstore report`` and the dashboard's feed too; and requests in flight across it:
    every request answered before the clear was sent is gone, every one sent after it
    was answered is there, and every process shows the same."""
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as a, live_server(*state) as b:
        for index in range(4):
            _create((a, b)[index % 2], f"quiet-{index}")
        _everywhere((a, b), [f"quiet-{index}" for index in range(4)])
        assert httpx.delete(b.url + "/__mockstore/requests", headers=TOOL).status_code == 204
        assert _cli_report_requests(a) == 0
        assert _dashboard_names(a) == []

        sent: dict[str, tuple[float, float]] = {}  # name -> (sent, answered), monotonic
        stop = threading.Event()

        def traffic(server: LiveServer, prefix: str) -> None:
            with httpx.Client(base_url=server.url, timeout=10) as client:
                for index in range(400):  # bounded, whatever happens
                    if stop.is_set():
                        return
                    name = f"{prefix}-{index}"
                    began = time.monotonic()
                    answer = client.post(
                        "/v1/pets", json={"name": name, "categoryId": 1}, headers=PRO
                    )
                    assert answer.status_code == 201
                    sent[name] = (began, time.monotonic())

        threads = [
            threading.Thread(target=traffic, args=(server, name))
            for name, server in (("a", a), ("b", b))
        ]
        for thread in threads:
            thread.start()
        _until(lambda: len(sent) >= 20, "traffic through both processes")
        clearing = time.monotonic()
        assert httpx.delete(a.url + "/__mockstore/requests", headers=TOOL).status_code == 204
        cleared = time.monotonic()
        _until(lambda: sum(began > cleared for began, _ in sent.values()) >= 20, "traffic after")
        stop.set()
        for thread in threads:
            thread.join(30)
        _create(a, "last-a")
        _create(b, "last-b")
        for server in (a, b):
            _until(
                lambda server=server: {"last-a", "last-b"} <= set(_names(server)),
                "the last requests everywhere",
            )
        shown = {server.url: set(_names(server)) for server in (a, b)}
        assert shown[a.url] == shown[b.url]
        gone = {name for name, (_, answered) in sent.items() if answered < clearing}
        kept = {name for name, (began, _) in sent.items() if began > cleared}
        assert gone and kept
        assert not gone & shown[a.url]
        assert kept | {"last-a", "last-b"} <= shown[a.url]
        assert _cli_report_requests(b) == len(shown[b.url])
        feed = _dashboard_names(b)  # the journal's newest entries, in its order
        assert feed and feed == _names(b)[-len(feed) :]


# -- serve --watch with a shared state ---------------------------------------------

FIRST = """\
version: 1
name: first
keys: [{key: watch-key, plan: pro}]
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
SECOND = FIRST.replace("name: first", "name: second").replace("Rex", "Bella")
BROKEN = SECOND.replace("name: second", "name: broken").replace("plan: pro", "plan: platinum")
WATCHED = ("--watch", "--log-level", "info")


def _serving(server: LiveServer) -> tuple[str, list[str]]:
    """The scenario ``server`` serves, by its control API and by its Pet Store API
    (an answer that is not 200, Redis just back, by its status)."""
    scenario = httpx.get(server.url + "/__mockstore/scenario", timeout=10)
    pets = httpx.get(
        server.url + "/v1/pets", headers={"Authorization": "Bearer watch-key"}, timeout=10
    )
    if scenario.status_code != 200 or pets.status_code != 200:
        return str(scenario.status_code), [str(pets.status_code)]
    return scenario.json()["name"], [pet["name"] for pet in pets.json()]


def _logged(server: LiveServer, text: str) -> int:
    return server.log().count(text)


def _epoch(redis: RedisServer) -> int:
    """The shared state's epoch: one more each time a scenario is put in service (or reset)."""
    reply = redis.command("HGET", "mockstore:config", "epoch")  # $<length>\r\n<epoch>\r\n
    return int(reply.split(b"\r\n")[1])


def test_an_edit_seen_by_one_watching_process_is_served_by_every_process(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    state = ("--scenario", str(path), "--state", redis_server.url)
    with live_server(*state, *WATCHED) as watching, live_server(*state) as other:
        _until(lambda: _logged(watching, f"watching {path} for") == 1, "the watch begins")
        assert _serving(other) == ("first", ["Rex"])

        path.write_text(SECOND)
        _until(lambda: _serving(other) == ("second", ["Bella"]), "the edit, through the other")
        assert _serving(watching) == ("second", ["Bella"])
        _until(
            lambda: _logged(watching, "now serving scenario 'second' in every process") == 1,
            "the reload is logged",
        )

        # An invalid edit is refused, said where, and changes nothing anywhere.
        path.write_text(BROKEN)
        column = BROKEN.splitlines()[2].index("platinum") + 1
        problem = f"{path}:3:{column}: $.keys[0].plan: unknown plan 'platinum'"
        _until(lambda: problem in watching.log(), "the bad edit is reported")
        assert "still serving scenario 'second'" in watching.log()
        assert _serving(other) == ("second", ["Bella"])
        assert _serving(watching) == ("second", ["Bella"])


def test_replicas_watching_one_file_put_each_edit_in_service_once(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Two processes watch the same file (a ConfigMap in every pod): one new epoch an edit."""
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    state = ("--scenario", str(path), "--state", redis_server.url, *WATCHED)
    with live_server(*state) as a, live_server(*state) as b:
        for server in (a, b):
            _until(
                lambda server=server: _logged(server, f"watching {path} for") == 1,
                "the watches begin",
            )
        before = _epoch(redis_server)
        path.write_text(SECOND)
        reloaded = ("now serving scenario 'second' in every process", "is in service already")

        def seen_by_both() -> bool:
            return all(any(_logged(s, line) for line in reloaded) for s in (a, b))

        _until(seen_by_both, "both processes see the edit")
        assert sum(_logged(s, reloaded[0]) for s in (a, b)) == 1
        assert sum(_logged(s, reloaded[1]) for s in (a, b)) == 1
        assert _epoch(redis_server) == before + 1
        assert _serving(a) == _serving(b) == ("second", ["Bella"])


def test_workers_watch_once_and_every_worker_serves_each_edit(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    with live_server(
        "--scenario", str(path), "--state", redis_server.url, "--workers", "2", *WATCHED
    ) as server:
        # Both workers started (their background tasks with them): one watches.
        _until(lambda: _logged(server, "Application startup complete") == 2, "two workers")
        _until(lambda: _logged(server, f"watching {path} for") == 1, "the watch begins")
        before = _epoch(redis_server)
        path.write_text(SECOND)
        _until(lambda: _serving(server)[0] == "second", "the edit is served")
        # From then on every answer, whichever worker gives it, is the new scenario's.
        for _ in range(10):
            with httpx.Client(timeout=10) as fresh:  # a new connection: any worker
                answer = fresh.get(
                    server.url + "/v1/pets", headers={"Authorization": "Bearer watch-key"}
                )
                assert [pet["name"] for pet in answer.json()] == ["Bella"]
        _until(
            lambda: _logged(server, "now serving scenario 'second' in every process") == 1,
            "the reload is logged",
        )
        assert _logged(server, f"watching {path} for") == 1
        assert _logged(server, "in service already") == 0
        assert _epoch(redis_server) == before + 1


@pytest.mark.slow
def test_an_edit_made_while_redis_is_away_is_put_in_service_once_it_is_back(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    state = ("--scenario", str(path), "--state", redis_server.url)
    with live_server(*state, *WATCHED) as watching, live_server(*state) as other:
        _until(lambda: _logged(watching, f"watching {path} for") == 1, "the watch begins")
        redis_server.stop()
        path.write_text(SECOND)
        _until(
            lambda: _logged(watching, "the shared state cannot take it") == 1,
            "the waiting edit is said",
        )
        redis_server.start()
        _until(lambda: _serving(other) == ("second", ["Bella"]), "the edit, once Redis is back")
        assert _serving(watching) == ("second", ["Bella"])
        assert _logged(watching, "the shared state cannot take it") == 1  # said once


# -- one journal under any interleaving ----------------------------------------------
# Three processes' journal sharing on one Redis, driven step by step: recording an
# answer (into a process's outbox), shipping, taking in, clearing and reading through
# any process. A read or a clear first ships every process's outbox (what the
# others do when a barrier asks them: their background tasks are not running here).
# Whatever the order: a read shows every answer recorded before it but the cleared
# ones, and once everything is shipped and taken in, every process shows the same
# entries under the same sequence numbers, in the same order.

Step = tuple[str, int]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["record", "record", "record", "ship", "take_in", "clear", "read"]),
        st.integers(0, 2),  # the process
    ),
    max_size=40,
)


def _entry(runtime: Runtime, name: str, came: float = 1000.0) -> Entry:
    outbox = runtime.outbox
    return Entry(
        outbox.next_seq(), name, came, 0.0, "POST", "/v1/pets", b"", (), name.encode(),
        "127.0.0.1", "createPet", None, "pro", 201, (), b"{}", 1.0, None, "response", came,
        outbox.run, outbox.last_seq - 1,
    )  # fmt: skip


def _shown(runtime: Runtime) -> list[tuple[int, str]]:
    return [(e.seq, e.request_body.decode()) for e in runtime.journal]


async def _interleave(url: str, steps: list[Step]) -> None:
    scenario = load_scenario(SCENARIO, "shared-journal.yaml")
    runtimes = [Runtime(scenario) for _ in range(3)]
    states = [SharedState(url, runtime) for runtime in runtimes]
    sharers = [
        sharing.JournalSharing(state, runtime)
        for state, runtime in zip(states, runtimes, strict=True)
    ]
    recorded: list[str] = []
    cleared: set[str] = set()
    try:
        for index, (step, process) in enumerate(steps):
            sharer, runtime = sharers[process], runtimes[process]
            if step == "record":
                runtime.outbox.append(_entry(runtime, f"r{index}"))
                recorded.append(f"r{index}")
            elif step == "ship":
                await sharer.ship()
            elif step == "take_in":
                await sharer.take_in()
            else:
                for other in sharers:
                    await other.ship()
                if step == "clear":
                    await sharer.clear()
                    cleared = set(recorded)
                else:
                    await sharer.barrier()
                    shown = [name for _, name in _shown(runtime)]
                    assert sorted(shown) == sorted(set(recorded) - cleared), (shown, recorded)
        for sharer in sharers:
            await sharer.ship()
        for sharer in sharers:
            await sharer.take_in()
        views = [_shown(runtime) for runtime in runtimes]
        assert views[0] == views[1] == views[2]
        assert sorted(name for _, name in views[0]) == sorted(set(recorded) - cleared)
        seqs = [seq for seq, _ in views[0]]
        assert seqs == sorted(set(seqs))  # the mock's numbers: unique, in order
    finally:
        for state in states:
            await state.close()


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_any_interleaving_shows_one_journal_numbered_alike_through_every_process(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch, steps: list[Step]
) -> None:
    monkeypatch.setattr(sharing, "BARRIER_WAIT", 0.0)  # the others shipped already
    redis_server.command("FLUSHALL")
    asyncio.run(_interleave(redis_server.url, steps))


@given(
    walls=st.lists(st.integers(0, 20), max_size=30),
    mark=st.integers(0, 20),
    size=st.integers(1, 40),
    body=st.integers(0, 300),
)
def test_a_journal_cleared_before_an_instant_holds_what_one_given_only_the_rest_would(
    walls: list[int], mark: int, size: int, body: int
) -> None:
    """Entries, bytes, the dropped count: as if the ones before the instant never came."""
    scenario = load_scenario(SCENARIO, "shared-journal.yaml")
    runtime = Runtime(scenario)
    whole = Journal(size, 10_000)
    for index, wall in enumerate(walls):
        entry = _entry(runtime, "x" * (body + index), float(wall))
        whole.append(entry._replace(seq=whole.next_seq()))
    kept = [entry for entry in whole if entry.wall is not None and entry.wall >= mark]
    gone = len(whole) - len(kept)
    assert whole.clear(before=float(mark)) == gone
    assert list(whole) == kept
    alone = Journal(size, 10_000)
    for entry in kept:
        alone.append(entry)
    assert whole.bytes == alone.bytes
    assert whole.dropped == 0
    # What is recorded next counts from there: one more entry, its own bytes more.
    late = _entry(runtime, "late", float(mark))._replace(seq=whole.next_seq())
    whole.append(late)
    alone.append(late)
    assert whole.bytes == alone.bytes and list(whole)[-1] == late
