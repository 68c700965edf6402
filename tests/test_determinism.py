"""Same scenario + same requests + manual clock = byte-identical responses, headers included.

Byte for byte needs the headers' instants on the scenario clock
(``clock.headers: scenario``): on the wall clock (the default) ``Date`` and
every instant name the real time of each answer.

The scenario mixes everything that could drift: probabilistic faults (answers
and seeded delays), rate limits and their headers, created ids, request ids,
the Date header, a scripted route, clock moves. Responses are compared raw:
status, the exact header list in order, and the body bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.scenario import load_scenario
from tests.support import TOOL, examples, mock_server

SCENARIO = """\
version: 1
name: determinism
description: Probabilistic faults, tight limits and generated pets on a manual clock.
seed: 99
clock: {start: "2026-03-01T12:00:30Z", mode: manual, headers: scenario}
keys:
  - {key: tight-key, plan: {per_minute: 5, per_day: 40}}
  - {key: pro-key, plan: pro}
generate: {pets: 30}
faults:
  - match: {operation: listPets, probability: 0.3}
    respond:
      status: 503
      body: {code: unavailable, message: later, status: 503}
      headers: {Retry-After: "1"}
  - match: {operation: getPet, probability: 0.3}
    delay: {uniform_ms: [0, 2]}
  - match: {operation: getPet, probability: 0.25}
    respond: {status: 500, body: {code: internal_error, message: boom, status: 500}}
  - match: {operation: createPet, probability: 0.4}
    respond: {status: 503, body: {code: unavailable, message: later, status: 503}}
routes:
  - operation: listOrders
    respond: {status: 200, body: []}
"""

Request = tuple[str, str, dict[str, Any]]
Raw = tuple[int, list[tuple[bytes, bytes]], bytes]

PRO = {"Authorization": "Bearer pro-key"}
TIGHT = {"Authorization": "Bearer tight-key"}
# Every kind of request the sequence is made of.
REQUESTS: list[Request] = [
    ("GET", "/v1/pets", {"headers": PRO}),
    ("GET", "/v1/pets", {"headers": PRO, "params": {"limit": 3, "status": "sold"}}),
    ("GET", "/v1/pets", {"headers": TIGHT, "params": {"limit": 2}}),
    ("GET", "/v1/pets", {"headers": PRO, "params": {"limit": 0}}),
    ("GET", "/v1/pets/7", {"headers": PRO}),
    ("GET", "/v1/pets/9999", {"headers": TIGHT}),
    ("GET", "/v1/pets/abc", {"headers": PRO}),
    ("POST", "/v1/pets", {"headers": PRO, "json": {"name": "Nova", "categoryId": 2}}),
    ("POST", "/v1/pets", {"headers": TIGHT, "json": {"name": "Iris", "categoryId": 4}}),
    ("POST", "/v1/pets", {"headers": PRO, "json": {"name": 5}}),
    ("GET", "/v1/store/orders", {"headers": PRO}),
    ("GET", "/v1/pets", {}),
    ("GET", "/v1/pets", {"headers": {"Authorization": "Bearer nobody"}}),
    ("DELETE", "/v1/pets", {"headers": PRO}),
    ("POST", "/__mockstore/clock", {"json": {"advance_seconds": 7}}),
]
RECORDED = [REQUESTS[i % len(REQUESTS)] for i in range(0, 7 * len(REQUESTS), 3)] + REQUESTS * 2


def run(send: Callable[..., httpx.Response], sequence: Sequence[Request]) -> list[Raw]:
    """Send each request; keep exactly what came back."""
    out = []
    for method, path, kwargs in sequence:
        response = send(method, path, **kwargs)
        out.append((response.status_code, list(response.headers.raw), response.content))
    return out


def fresh_client() -> TestClient:
    return TestClient(create_app(load_scenario(SCENARIO, "determinism.yaml")))


def test_recorded_sequence_is_byte_identical_across_fresh_runs_and_resets() -> None:
    with fresh_client() as first, fresh_client() as second:
        one = run(first.request, RECORDED)
        two = run(second.request, RECORDED)
        assert first.post("/__mockstore/reset", headers=TOOL).status_code == 200
        three = run(first.request, RECORDED)
    assert one == two
    assert one == three
    # The sequence really exercises what could drift.
    statuses = {status for status, _, _ in one}
    assert {200, 201, 400, 401, 404, 405, 429, 500, 503} <= statuses
    assert len({body for status, _, body in one if status == 201}) > 1


def test_the_same_bytes_come_over_a_real_socket_run_after_run(tmp_path: Any) -> None:
    scenario = tmp_path / "determinism.yaml"
    scenario.write_text(SCENARIO)
    with mock_server(str(scenario)) as server:
        with server.client() as http:
            one = run(http.request, RECORDED)
        with server.client() as http:
            assert http.post("/__mockstore/reset", headers=TOOL).status_code == 200
            two = run(http.request, RECORDED)
    assert one == two
    # In-process and over the wire, the API answers the same bytes.
    with fresh_client() as local:
        assert run(local.request, RECORDED) == one


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.sampled_from(range(len(REQUESTS))), min_size=1, max_size=40))
def test_any_request_sequence_replays_identically(indexes: list[int]) -> None:
    sequence = [REQUESTS[i] for i in indexes]
    with fresh_client() as first, fresh_client() as second:
        assert run(first.request, sequence) == run(second.request, sequence)
