"""A mock whose state is in Redis answers as the in-memory mock does, from any number of processes.

Against a real ``redis-server`` (``tests/redis_server.py``). The first tests
compare, byte for byte, a Redis-backed server with the in-memory one on the
same request sequences (hypothesis draws them), control calls included; the
others run several ``mockstore serve --state`` processes on one Redis and
check that they behave as one mock: exact allowances under concurrent load,
pets, bans and control calls seen everywhere, ``--workers``, and Redis lost
and back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockstore import MockServer
from mockstore.scenario import load_scenario
from tests.redis_server import RedisServer, redis_available, required
from tests.support import TOOL, examples, live_server

# Every kind of answer: faults (creates a rule stops), limits and bans, per-key
# stores, created pets past the scenario's, request ids and dates on the
# scenario clock (so whole answers compare byte for byte).
SCENARIO = """\
version: 1
name: shared
description: Tight limits, bans, faults and per-key stores on a manual clock.
seed: 7
clock: {start: "2026-03-01T12:00:30Z", mode: manual, headers: scenario}
isolation: per_key
keys:
  - {key: tight-key, plan: {per_minute: 4, per_day: 30}}
  - {key: pro-key, plan: pro, tenant: team}
  - {key: pro-key-2, plan: pro, tenant: team}
  - {key: used-key, plan: {per_minute: 10, per_day: 12}, used: {minute: 3, day: 9}}
ban: {after_rejections: 3, within_seconds: 30, duration_seconds: 90}
behaviour: {max_store_bytes: 6000}
generate: {pets: 6}
faults:
  - match: {operation: createPet, key: pro-key-2, probability: 0.5}
    respond: {status: 503, body: {code: unavailable, message: later, status: 503}}
  - match: {operation: getPet, key: pro-key-2, probability: 0.3}
    fault: connection_reset
"""

# The same keys under a provider profile that changes how limits and lists work:
# windows from a key's first request, bans after consecutive 429s, the day
# window described, newest pets first, a page size over the maximum clamped.
PROFILED = """\
version: 1
name: shared-profiled
seed: 3
clock: {start: "2026-03-01T12:00:30Z", mode: manual, headers: scenario}
keys:
  - {key: tight-key, plan: {per_minute: 4, per_day: 30}}
  - {key: pro-key, plan: pro, tenant: team}
  - {key: pro-key-2, plan: pro, tenant: team}
  - {key: used-key, plan: {per_minute: 10, per_day: 12}, used: {minute: 3, day: 9}}
ban: {after_rejections: 3, within_seconds: 30, duration_seconds: 90, trigger: consecutive}
behaviour:
  max_store_bytes: 6000
  ratelimit_windows: first_request
  ratelimit_describes: day
  ratelimit_describes_refusals: described
  list_order: descending
  limit_above_maximum: clamp
generate: {pets: 6}
"""
SCENARIOS = {"shared": SCENARIO, "profiled": PROFILED}

Request = tuple[str, str, dict[str, Any]]
PRO = {"Authorization": "Bearer pro-key"}
PRO2 = {"Authorization": "Bearer pro-key-2"}
TIGHT = {"Authorization": "Bearer tight-key"}
USED = {"Authorization": "Bearer used-key"}
EXTRA = {"Authorization": "Bearer extra-key"}
REQUESTS: list[Request] = [
    ("GET", "/v1/pets", {"headers": PRO}),
    ("GET", "/v1/pets", {"headers": PRO, "params": {"limit": 9, "status": "sold"}}),
    ("GET", "/v1/pets", {"headers": PRO2, "params": {"limit": 100}}),
    ("GET", "/v1/pets", {"headers": TIGHT, "params": {"limit": 2}}),
    ("GET", "/v1/pets", {"headers": PRO, "params": {"limit": 0}}),
    ("GET", "/v1/pets/3", {"headers": PRO}),
    ("GET", "/v1/pets/7", {"headers": PRO}),
    ("GET", "/v1/pets/8", {"headers": PRO2}),
    ("GET", "/v1/pets/9", {"headers": TIGHT}),
    ("GET", "/v1/pets/abc", {"headers": PRO}),
    ("POST", "/v1/pets", {"headers": PRO, "json": {"name": "Nova", "categoryId": 2}}),
    ("POST", "/v1/pets", {"headers": PRO2, "json": {"name": "Ünë", "categoryId": 4}}),
    (
        "POST",
        "/v1/pets",
        {"headers": TIGHT, "json": {"name": "Iris", "categoryId": 4, "status": "sold"}},
    ),
    ("POST", "/v1/pets", {"headers": USED, "json": {"name": "Zed", "categoryId": 1}}),
    ("POST", "/v1/pets", {"headers": EXTRA, "json": {"name": "Extra", "categoryId": 1}}),
    ("POST", "/v1/pets", {"headers": PRO, "json": {"name": 5}}),
    ("POST", "/v1/pets", {"headers": PRO, "content": b"{", "headers_extra": "json"}),
    ("GET", "/v1/pets", {"headers": USED}),
    ("GET", "/v1/pets", {}),
    ("GET", "/v1/pets", {"headers": {"Authorization": "Bearer nobody"}}),
    ("DELETE", "/v1/pets", {"headers": PRO}),
    ("POST", "/__mockstore/clock", {"json": {"advance_seconds": 13}}),
    ("POST", "/__mockstore/clock", {"json": {"set": "2026-03-01T12:00:00Z"}}),
    ("POST", "/__mockstore/reset", {"headers": TOOL}),
    (
        "POST",
        "/__mockstore/keys",
        {"json": {"key": "extra-key", "plan": {"per_minute": 2, "per_day": 3}}},
    ),
    ("DELETE", "/__mockstore/keys/extra-key", {}),
    ("DELETE", "/__mockstore/bans/tight-key", {}),
    ("GET", "/__mockstore/keys", {}),
    ("GET", "/v1/pets/999", {"headers": PRO}),
    ("GET", "/v1/pets", {"headers": PRO, "params": {"limit": 150, "status": "pending"}}),
]
# A sequence that reaches every kind of answer: bans, a full store, creates a rule stops.
RECORDED: list[Request] = [
    *(REQUESTS[i] for i in (0, 10, 11, 11, 11, 12, 12, 12, 12, 12, 3, 3, 8, 8)),
    *(REQUESTS[i] for i in (13, 13, 17, 17, 24, 14, 14, 14, 26, 27, 1, 2, 2, 6, 7, 7)),
    *(REQUESTS[10] for _ in range(40)),
    *(REQUESTS[i] for i in (21, 3, 3, 22, 3, 8, 26, 9, 15, 16, 18, 19, 20, 4, 25, 14, 23)),
    *(REQUESTS[i] for i in (0, 2, 12, 5, 27, 28, 6, 29)),
]

pytestmark = pytest.mark.skipif(
    not redis_available() and not required(), reason="redis-server is not installed"
)


def _send(send: Callable[..., httpx.Response], request: Request) -> tuple[Any, ...]:
    method, path, kwargs = request
    kwargs = dict(kwargs)
    if kwargs.pop("headers_extra", None) == "json":
        kwargs["headers"] = {**kwargs["headers"], "Content-Type": "application/json"}
    if path.startswith("/__mockstore") and method != "GET":
        kwargs["headers"] = {**kwargs.get("headers", {}), **TOOL}
    try:
        response = send(method, path, **kwargs)
    except httpx.TransportError as exc:  # a scripted connection reset
        return ("broken", type(exc).__name__)
    if path.startswith("/__mockstore"):
        # A control answer: its JSON, without the headers of the control API's own framework.
        return (response.status_code, response.content)
    return (response.status_code, response.headers.raw, response.content)


def run(send: Callable[..., httpx.Response], sequence: Sequence[Request]) -> list[tuple[Any, ...]]:
    return [_send(send, request) for request in sequence]


def served(
    scenario_name: str, sequence: Sequence[Request], state: str | None = None
) -> list[tuple[Any, ...]]:
    return served_with(SCENARIOS[scenario_name], sequence, state)


def served_with(
    text: str, sequence: Sequence[Request], state: str | None = None
) -> list[tuple[Any, ...]]:
    """The answers of a fresh server (over a socket: faults break real connections)."""
    scenario = load_scenario(text, "scenario.yaml")
    with (
        MockServer(scenario, state=state) as server,
        httpx.Client(base_url=server.base_url, timeout=10) as client,
    ):
        return run(client.request, sequence)


def in_memory(scenario: str, sequence: Sequence[Request]) -> list[tuple[Any, ...]]:
    return served(scenario, sequence)


def in_redis(
    redis: RedisServer, scenario: str, sequence: Sequence[Request]
) -> list[tuple[Any, ...]]:
    return in_redis_with(redis, SCENARIOS[scenario], sequence)


def in_memory_with(text: str, sequence: Sequence[Request]) -> list[tuple[Any, ...]]:
    """The answers of one in-memory process under the scenario ``text``."""
    return served_with(text, sequence)


def in_redis_with(
    redis: RedisServer, text: str, sequence: Sequence[Request]
) -> list[tuple[Any, ...]]:
    """The answers of one process on a fresh shared state under the scenario ``text``."""
    redis.command("FLUSHALL")
    return served_with(text, sequence, redis.url)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_recorded_sequence_is_answered_byte_for_byte_as_in_memory(
    redis_server: RedisServer, scenario: str
) -> None:
    expected = in_memory(scenario, RECORDED)
    got = in_redis(redis_server, scenario, RECORDED)
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"request {index}: {RECORDED[index][:2]}"
    # The sequence reaches what could drift: bans, a full store, faults, refusals.
    bodies = b" ".join(answer[-1] for answer in expected if isinstance(answer[-1], bytes))
    for code in (b"key_banned", b"rate_limited", b"store_full", b"not_found"):
        assert code in bodies, code
    if scenario == "shared":  # its fault rules: scripted answers and reset connections
        assert b"unavailable" in bodies
        assert any(answer[0] == "broken" for answer in expected)
    assert len({a[2] for a in expected if a[0] == 201 and len(a) == 3}) > 5


@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.sampled_from(sorted(SCENARIOS)),
    st.lists(st.sampled_from(range(len(REQUESTS))), min_size=1, max_size=30),
)
def test_any_request_sequence_is_answered_as_in_memory(
    redis_server: RedisServer, scenario: str, indexes: list[int]
) -> None:
    sequence = [REQUESTS[i] for i in indexes]
    assert in_redis(redis_server, scenario, sequence) == in_memory(scenario, sequence)


# -- several processes, one Redis ------------------------------------------------

PROCESS_SCENARIO = """\
version: 1
name: shared-processes
clock: {start: "2026-03-01T12:00:05Z", mode: manual}
keys:
  - {key: free-key, plan: free}
  - {key: pro-key, plan: pro}
ban: {after_rejections: 5, within_seconds: 60, duration_seconds: 300}
"""


@pytest.fixture
def scenario_file(tmp_path: Path) -> str:
    path = tmp_path / "shared.yaml"
    path.write_text(PROCESS_SCENARIO)
    return str(path)


def _spread(urls: list[str], count: int, headers: dict[str, str]) -> Counter[int]:
    """``count`` GETs at once, spread round-robin over ``urls``; the statuses they got."""

    def one(index: int) -> int:
        url = urls[index % len(urls)]
        return httpx.get(url + "/v1/pets", headers=headers, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=24) as pool:
        return Counter(pool.map(one, range(count)))


def test_three_processes_admit_exactly_the_plan_under_concurrent_load(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as a, live_server(*state) as b, live_server(*state) as c:
        statuses = _spread([a.url, b.url, c.url], 200, {"Authorization": "Bearer free-key"})
        assert statuses == Counter({200: 60, 429: 140})
        # Each process states the same standing for the key.
        for server in (a, b, c):
            keys = httpx.get(server.url + "/__mockstore/keys").json()
            free = next(k for k in keys if k["key"] == "free-key")
            assert free["minute"]["used"] == 60
            assert free["banned"] is True


def test_pets_bans_and_control_calls_reach_every_process(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    pro = {"Authorization": "Bearer pro-key"}
    free = {"Authorization": "Bearer free-key"}
    with live_server(*state) as a, live_server(*state) as b:
        created = httpx.post(
            a.url + "/v1/pets", json={"name": "Nova", "categoryId": 2}, headers=pro
        )
        assert created.status_code == 201
        pet = created.json()
        # Created through one, fetched and listed through the other.
        assert httpx.get(f"{b.url}/v1/pets/{pet['id']}", headers=pro).json() == pet
        assert httpx.get(b.url + "/v1/pets", headers=pro, params={"limit": 100}).json()[-1] == pet
        ids = {
            httpx.post(url + "/v1/pets", json={"name": "X", "categoryId": 1}, headers=pro).json()[
                "id"
            ]
            for url in (a.url, b.url, a.url, b.url)
        }
        assert len(ids) == 4 and pet["id"] not in ids
        # The control API's pets are the same from either process, created ones included.
        listed = httpx.get(b.url + "/__mockstore/pets").json()
        assert listed == httpx.get(a.url + "/__mockstore/pets").json()
        assert [p["id"] for p in listed[-5:]] == sorted([pet["id"], *ids])
        # Spend the free key's minute through a, get it banned through b...
        for index in range(60 + 5):
            httpx.get((a.url, b.url)[index % 2] + "/v1/pets", headers=free)
        banned = httpx.get(a.url + "/v1/pets", headers=free)
        assert banned.status_code == 429 and banned.json()["code"] == "key_banned"
        # ...lift the ban through a: b admits nothing more this minute, but says rate_limited.
        lifted = httpx.delete(a.url + "/__mockstore/bans/free-key").json()
        assert lifted == {"key": "free-key", "lifted": True}
        assert httpx.get(b.url + "/v1/pets", headers=free).json()["code"] == "rate_limited"
        # A key issued through b works through a, and its revocation through a ends it on b.
        issued = httpx.post(
            b.url + "/__mockstore/keys", json={"key": "new-key", "plan": "pro"}, headers=TOOL
        )
        assert issued.status_code == 201
        new = {"Authorization": "Bearer new-key"}
        assert httpx.get(a.url + "/v1/pets", headers=new).status_code == 200
        assert httpx.delete(a.url + "/__mockstore/keys/new-key").status_code == 204
        assert httpx.get(b.url + "/v1/pets", headers=new).status_code == 401
        # The clock moved through a is b's clock.
        moved = httpx.post(a.url + "/__mockstore/clock", json={"advance_seconds": 60}).json()
        assert httpx.get(b.url + "/__mockstore/clock").json()["now"] == moved["now"]
        assert httpx.get(b.url + "/v1/pets", headers=free).status_code == 200
        # Reset through b: a has the scenario's pets and allowances again at once.
        assert httpx.post(b.url + "/__mockstore/reset", headers=TOOL).status_code == 200
        assert httpx.get(f"{a.url}/v1/pets/{pet['id']}", headers=pro).status_code == 404
        fresh = httpx.get(a.url + "/v1/pets", headers=free)
        assert fresh.headers["x-ratelimit-remaining"] == "59"
        assert httpx.get(a.url + "/__mockstore/clock").json()["now"] == "2026-03-01T12:00:05Z"
        # A scenario put in service through a is the one b serves.
        swapped = httpx.put(a.url + "/__mockstore/scenario", content=b"empty-store")
        assert swapped.status_code == 200
        assert httpx.get(b.url + "/__mockstore/scenario").json()["name"] == "empty-store"


def test_workers_serve_one_port_as_one_mock(redis_server: RedisServer, scenario_file: str) -> None:
    with live_server(
        "--scenario", scenario_file, "--state", redis_server.url, "--workers", "2"
    ) as server:
        assert server.process is not None
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
        assert len(children.read_text().split()) == 2
        statuses = _spread([server.url], 120, {"Authorization": "Bearer free-key"})
        assert statuses == Counter({200: 60, 429: 60})
        server.process.terminate()  # SIGTERM: every worker stops cleanly, and so does serve
        assert server.process.wait(30) == 0


def test_workers_without_a_shared_state_are_refused_with_a_sentence() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "serve", "--port", "0", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "MOCKSTORE_STATE"},
    )
    assert done.returncode == 2
    assert "--workers 2 needs --state redis://HOST:PORT/DB" in done.stderr


def test_an_unreachable_redis_at_start_is_said_and_exits_3() -> None:
    with RedisServer() as redis:
        url = redis.url
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "serve", "--port", "0", "--state", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert f"cannot reach the shared state at {url}" in done.stderr
    assert "not starting" in done.stderr


def test_redis_lost_mid_run_is_503_state_unavailable_and_service_resumes_by_itself(
    redis_server: RedisServer, scenario_file: str
) -> None:
    pro = {"Authorization": "Bearer pro-key"}
    with live_server("--scenario", scenario_file, "--state", redis_server.url) as server:
        # Requests at once: the process holds several connections to Redis when it goes.
        assert _spread([server.url], 40, pro) == Counter({200: 40})
        redis_server.stop()
        lost = httpx.get(server.url + "/v1/pets", headers=pro)
        assert lost.status_code == 503
        assert lost.json()["code"] == "state_unavailable"
        assert lost.json()["status"] == 503
        assert lost.headers["retry-after"] == "1"
        assert "x-ratelimit-remaining" not in lost.headers
        health = httpx.get(server.url + "/__mockstore/health")
        assert health.status_code == 503
        assert health.json()["state"]["reachable"] is False
        created = httpx.post(
            server.url + "/v1/pets", json={"name": "A", "categoryId": 1}, headers=pro
        )
        assert created.status_code == 503
        redis_server.start()
        deadline = time.monotonic() + 30
        while True:
            back = httpx.get(server.url + "/v1/pets", headers=pro)
            if back.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert back.status_code == 200
        # Redis came back empty (no persistence): the scenario started again.
        assert back.headers["x-ratelimit-remaining"] == "299"
        assert httpx.get(server.url + "/__mockstore/health").status_code == 200
        # Not one answer more fails for a connection made before Redis went.
        for _ in range(10):
            again = httpx.post(
                server.url + "/v1/pets", json={"name": "A", "categoryId": 1}, headers=pro
            )
            assert again.status_code == 201
        assert _spread([server.url], 40, pro) == Counter({200: 40})


def test_a_process_killed_mid_load_loses_nothing_the_others_answered(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    pro = {"Authorization": "Bearer pro-key"}
    with live_server(*state) as a, live_server(*state) as b:
        assert a.process is not None
        answered: list[dict[str, Any]] = []
        killed = threading.Event()

        def create(index: int) -> None:
            url = (a.url, b.url)[index % 2]
            try:
                response = httpx.post(
                    url + "/v1/pets", json={"name": f"P{index}", "categoryId": 1}, headers=pro
                )
            except httpx.TransportError:
                return  # a's connection died with it: never answered
            if response.status_code == 201:
                answered.append(response.json())
            if len(answered) >= 30 and not killed.is_set():
                killed.set()
                a.process.kill()  # SIGKILL, with requests in flight

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(create, range(120)))
        assert killed.is_set()
        assert a.process.wait(10) != 0
        # b serves every pet any process answered 201 for, whole, and ids never repeat.
        stored = httpx.get(b.url + "/__mockstore/pets").json()
        by_id = {pet["id"]: pet for pet in stored}
        assert len(by_id) == len(stored)
        for pet in answered:
            assert by_id[pet["id"]] == pet
        assert len(answered) > 30


def test_every_process_journals_every_processs_traffic(
    redis_server: RedisServer, scenario_file: str
) -> None:
    """The report, HAR and dashboard of any process cover all of them (a moment later)."""
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    pro = {"Authorization": "Bearer pro-key"}
    with live_server(*state) as a, live_server(*state) as b:
        for index in range(10):
            url = (a.url, b.url)[index % 2]
            httpx.post(url + "/v1/pets", json={"name": f"J{index}", "categoryId": 1}, headers=pro)
        sent = {f"J{index}" for index in range(10)}
        for server in (a, b):
            deadline = time.monotonic() + 30
            while True:
                entries = httpx.get(server.url + "/__mockstore/requests").json()["entries"]
                names = {json.loads(e["request"]["body"])["name"] for e in entries}
                if names == sent or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert names == sent
            assert all(e["response"]["status"] == 201 for e in entries)
            assert len({e["seq"] for e in entries}) == 10
            har = httpx.get(server.url + "/__mockstore/requests.har").json()
            assert len(har["log"]["entries"]) == 10


def test_concurrent_control_calls_through_different_processes_all_take_effect(
    redis_server: RedisServer, scenario_file: str
) -> None:
    """Keys issued at once through two processes: none overwrites another's."""
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as a, live_server(*state) as b:

        def issue(index: int) -> int:
            url = (a.url, b.url)[index % 2]
            body = {"key": f"k-{index}", "plan": "pro"}
            return httpx.post(url + "/__mockstore/keys", json=body, headers=TOOL).status_code

        with ThreadPoolExecutor(max_workers=8) as pool:
            assert set(pool.map(issue, range(16))) == {201}
        wanted = {f"k-{index}" for index in range(16)}
        for server in (a, b):
            listed = {k["key"] for k in httpx.get(server.url + "/__mockstore/keys").json()}
            assert wanted <= listed
            for index in range(16):
                answer = httpx.get(
                    server.url + "/v1/pets", headers={"Authorization": f"Bearer k-{index}"}
                )
                assert answer.status_code == 200
