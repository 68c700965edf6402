"""A refused request leaves nothing for the cyclic garbage collector.

In ``bench/held_mix.py`` the attacked server's full collections took 100 to
300 ms each, on the event loop, several a minute, and most of the good
client's slowest answers waited on one. What they freed (``gc.DEBUG_SAVEALL``
in ``bench/loop_probe.py``) was refusals: a caught error refers to its
traceback, the traceback to the frames it passed, and those to the exchange
and the answer that kept the error (about 40 objects a refused request); a
scenario refused in its worker thread kept every YAML node of the composer
alive through the future that carried the error back; a verify scan refused
507 kept the journal entries it had made. Each is now let go of as it is
answered (``ApiError.kept``, the control API's handlers), so reference
counting frees it at once.

In process (``MockServer`` runs in this process, so its garbage is ours to
count), with raw sockets, so that no client library's own cycles are counted.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator

import pytest

from tests.attacks import alias_bomb
from tests.rawhttp import request
from tests.support import LiveServer, mock_server

KEY = {"Authorization": "Bearer good-key"}
SCENARIO = """\
version: 1
name: refusals
keys:
  - {key: good-key, plan: {per_minute: 1000000000, per_day: 100000000000}}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with mock_server(SCENARIO) as running:
        yield running


def _garbage_of_mockstore(server: LiveServer, send: object, times: int = 30) -> list[str]:
    """The kinds of cyclic garbage ``send()`` leaves, ``times`` over: mockstore's objects,
    frames and tracebacks (none is made by the raw client)."""
    send()  # type: ignore[operator]  # anything made once (caches) is made before counting
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(times):
            send()  # type: ignore[operator]
        gc.collect()
        found = [
            f"{type(thing).__module__}.{type(thing).__qualname__}"
            for thing in gc.garbage
            if type(thing).__module__.startswith(("mockstore", "yaml"))
            or type(thing).__name__ in ("frame", "traceback")
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


@pytest.mark.parametrize(
    ("method", "target", "headers", "body", "status"),
    [
        ("POST", "/v1/pets", {**KEY, "Content-Type": "application/json"}, b"{bad", 400),
        ("POST", "/v1/pets", {**KEY, "Content-Type": "application/json"}, b'{"name": 1}', 400),
        ("GET", "/v1/pets/1", {}, b"", 401),
        ("GET", "/v1/pets/999", KEY, b"", 404),
        ("GET", "/v1/pets?limit=-1", KEY, b"", 400),
    ],
)
def test_a_refused_api_request_leaves_no_cycle(
    server: LiveServer, method: str, target: str, headers: dict, body: bytes, status: int
) -> None:
    def send() -> None:
        answer = request(server.url, method, target, headers, body)
        assert answer.status == status, answer.body[:200]

    assert _garbage_of_mockstore(server, send) == []


def test_a_refused_scenario_leaves_no_cycle(server: LiveServer) -> None:
    bomb = alias_bomb().encode()

    def send() -> None:
        answer = request(server.url, "PUT", "/__mockstore/scenario", {}, bomb)
        assert answer.status in (400, 507), answer.body[:200]
        assert json.loads(answer.body)["code"] in ("invalid_scenario", "memory_budget")

    assert _garbage_of_mockstore(server, send, times=3) == []
