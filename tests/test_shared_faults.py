"""Fault rules and request ids with a shared state: one mock, whatever the number of processes.

A rule's call count, its probability draws and the request numbers live in
Redis, counted inside the one script each API request runs: a rule on the
3rd call fires on the 3rd call the mock receives, through whichever process;
the answers of a sequence spread over processes are those one in-memory
process gives; a rule that answers in place of a create stops it in the same
round trip (nothing stored), a delivery fault lets it through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import cycle
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.redis_server import RedisServer, redis_available, required
from tests.support import TOOL, live_server
from tests.test_shared_state import Request, in_memory_with, in_redis_with

pytestmark = pytest.mark.skipif(
    not redis_available() and not required(), reason="redis-server is not installed"
)

UNAVAILABLE = "{status: 503, body: {code: unavailable, message: later, status: 503}}"

# Every kind of rule condition and action the engine knows, on uuid request ids and
# Error bodies with a uuid field (both hashes of the seed and the request's number).
RULED = f"""\
version: 1
name: ruled
seed: 11
clock: {{start: "2026-03-01T12:00:30Z", mode: manual, headers: scenario}}
behaviour:
  request_id: {{format: uuid, prefix: "r-"}}
  error_fields: [{{name: traceId, generate: uuid}}]
keys:
  - {{key: pro-key, plan: pro}}
  - {{key: other-key, plan: pro}}
generate: {{pets: 4}}
faults:
  - name: third-and-fifth-list
    match: {{operation: listPets, calls: [3, 5]}}
    respond: {UNAVAILABLE}
  - name: sold-listing
    match: {{operation: listPets, query: {{status: sold}}, until_call: 2}}
    fault: truncated_body
  - name: every-third-create
    match: {{operation: createPet, every: 3}}
    fault: connection_reset
  - name: sold-creates
    match: {{operation: createPet, body: {{status: sold}}, probability: 0.6}}
    fault: malformed_json
  - name: flaky-other
    match: {{operation: getPet, key: other-key, probability: 0.4}}
    respond: {UNAVAILABLE}
  - name: traced
    match: {{operation: getPet, headers: {{x-case: slow}}, from_call: 2}}
    delay: {{uniform_ms: [1, 3]}}
  - name: late-gets
    match: {{operation: getPet, between_seconds: [60, 120]}}
    fault: empty_response
  - name: orders
    match: {{operation: listOrders, every: 2}}
    respond: {UNAVAILABLE}
routes:
  - operation: listOrders
    respond: {{status: 200, body: []}}
"""

PRO = {"Authorization": "Bearer pro-key"}
OTHER = {"Authorization": "Bearer other-key"}
REQUESTS: list[Request] = [
    ("GET", "/v1/pets", {"headers": PRO}),
    ("GET", "/v1/pets", {"headers": OTHER, "params": {"status": "sold"}}),
    ("GET", "/v1/pets/2", {"headers": OTHER}),
    ("GET", "/v1/pets/3", {"headers": {**PRO, "x-case": "slow"}}),
    ("GET", "/v1/pets/9", {"headers": PRO}),
    ("POST", "/v1/pets", {"headers": PRO, "json": {"name": "Nova", "categoryId": 2}}),
    (
        "POST",
        "/v1/pets",
        {"headers": OTHER, "json": {"name": "Iris", "categoryId": 4, "status": "sold"}},
    ),
    ("POST", "/v1/pets", {"headers": PRO, "json": {"name": 5}}),
    ("GET", "/v1/orders", {"headers": PRO}),
    ("POST", "/__mockstore/clock", {"json": {"advance_seconds": 45}}),
    ("POST", "/__mockstore/reset", {"headers": TOOL}),
]
RECORDED: list[Request] = [
    *(REQUESTS[i] for i in (0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3)),
    *(REQUESTS[i] for i in (5, 6, 5, 6, 5, 6, 6, 6, 7, 0, 4, 8, 8, 8, 8)),
    *(REQUESTS[i] for i in (9, 3, 2, 9, 4, 2, 9, 2, 10, 0, 0, 0, 2, 2, 5, 5, 5)),
]


def test_every_rule_kind_answers_byte_for_byte_as_in_memory(redis_server: RedisServer) -> None:
    expected = in_memory_with(RULED, RECORDED)
    got = in_redis_with(redis_server, RULED, RECORDED)
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"request {index}: {RECORDED[index][:2]}"
    # The sequence reaches every action: scripted answers, broken connections,
    # damaged deliveries (a truncated body fails the client's read).
    bodies = b" ".join(answer[-1] for answer in expected if isinstance(answer[-1], bytes))
    assert b"unavailable" in bodies
    assert sum(answer[0] == "broken" for answer in expected) >= 3
    assert any(answer[0] == 201 for answer in expected)
    assert b'"traceId":"' in bodies


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.sampled_from(range(len(REQUESTS))), min_size=1, max_size=30))
def test_any_sequence_under_fault_rules_is_answered_as_in_memory(
    redis_server: RedisServer, indexes: list[int]
) -> None:
    sequence = [REQUESTS[i] for i in indexes]
    assert in_redis_with(redis_server, RULED, sequence) == in_memory_with(RULED, sequence)


# -- several processes -------------------------------------------------------------

PROCESSES = f"""\
version: 1
name: shared-rules
seed: 5
clock: {{start: "2026-03-01T12:00:05Z", mode: manual}}
keys:
  - {{key: pro-key, plan: pro}}
generate: {{pets: 3}}
faults:
  - name: third-and-sixth
    match: {{operation: listPets, calls: [3, 6]}}
    respond: {UNAVAILABLE}
  - name: coin
    match: {{operation: getPet, probability: 0.5}}
    respond: {UNAVAILABLE}
  - name: stop-create
    match: {{operation: createPet, body: {{name: Stopped}}}}
    fault: connection_reset
  - name: damage-create
    match: {{operation: createPet, body: {{name: Damaged}}}}
    fault: malformed_json
"""


@pytest.fixture
def two(redis_server: RedisServer, tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "rules.yaml"
    path.write_text(PROCESSES)
    state = ("--scenario", str(path), "--state", redis_server.url)
    with live_server(*state) as a, live_server(*state) as b:
        yield a, b


def _alternate(urls: Sequence[str], requests: Sequence[tuple[str, str, dict[str, Any]]]):  # type: ignore[no-untyped-def]
    """Each request through the next process in turn; (status or 'broken', request id)."""
    answers = []
    for url, (method, path, kwargs) in zip(cycle(urls), requests, strict=False):
        try:
            response = httpx.request(method, url + path, timeout=10, **kwargs)
        except httpx.TransportError:
            answers.append(("broken", None))
            continue
        answers.append((response.status_code, response.headers.get("x-request-id")))
    return answers


def test_a_rules_call_count_and_draws_are_the_mocks_not_a_processs(two, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    lists = [("GET", "/v1/pets", {"headers": PRO})] * 7
    gets = [("GET", "/v1/pets/1", {"headers": PRO})] * 24
    spread = _alternate([a.url, b.url], lists + gets)
    # The 3rd and 6th listing the mock received, whichever process took them.
    assert [status for status, _ in spread[:7]] == [200, 200, 503, 200, 200, 503, 200]
    # The same 24 gets through one in-memory process: the same rule fires on the same calls.
    path = tmp_path / "rules.yaml"
    with live_server("--scenario", str(path)) as alone:
        one = _alternate([alone.url], lists + gets)
    assert [status for status, _ in spread] == [status for status, _ in one]
    assert {s for s, _ in spread[7:]} == {200, 503}
    # Request ids: numbered by the mock, one sequence through both processes.
    assert [rid for _, rid in spread] == [f"req-{n:06d}" for n in range(1, 32)]


def test_a_stopped_create_is_not_stored_and_a_damaged_one_is(
    two, redis_server: RedisServer
) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    for server in (a, b):  # the script is loaded, each process connected
        answer = httpx.get(server.url + "/v1/pets/1", headers=PRO, timeout=10)
        assert answer.status_code in (200, 503)  # the coin rule may answer
    redis_server.command("CONFIG", "RESETSTAT")
    stopped = {"name": "Stopped", "categoryId": 1}
    damaged = {"name": "Damaged", "categoryId": 1}
    kept = {"name": "Kept", "categoryId": 1}
    answers = _alternate(
        [a.url, b.url],
        [
            ("POST", "/v1/pets", {"headers": PRO, "json": stopped}),
            ("POST", "/v1/pets", {"headers": PRO, "json": damaged}),
            ("POST", "/v1/pets", {"headers": PRO, "json": kept}),
        ],
    )
    assert answers[0][0] == "broken"
    assert answers[1][0] == 201 and answers[2][0] == 201
    # One script call per API request, rules or not (two round trips before). The
    # request script goes as EVALSHA; the journal's own scripts, off the request path,
    # as EVAL (``mockstore.shared.streams``).
    stats = redis_server.command("INFO", "commandstats").decode()
    calls = dict(re.findall(r"cmdstat_(\w+):calls=(\d+)", stats))
    assert int(calls.get("evalsha", 0)) == 3
    for server in (a, b):  # the mock's 1st and 2nd listings: no rule answers them
        names = [
            pet["name"]
            for pet in httpx.get(
                server.url + "/v1/pets", params={"limit": 100}, headers=PRO, timeout=10
            ).json()
        ]
        assert "Stopped" not in names
        assert names.count("Damaged") == 1 and names.count("Kept") == 1
