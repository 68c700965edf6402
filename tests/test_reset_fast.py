"""``POST /__mockstore/reset`` answered without Starlette's router: the route's own answer.

``ControlAPI`` calls the reset endpoint itself (a test suite resets before every
test; issue 29). These tests hold its answer to the one the route table gives,
byte for byte, on a success and on a failure, and check that everything around
it (the token, other methods, a trailing slash, tenants) still goes the old way.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest

from mockstore import MockServer
from mockstore.app import create_app
from tests.support import PATIENT


def scope_of(method: str, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8080"), *(headers or [])],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }


async def _call(asgi: Any, scope: Any) -> list[Any]:
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    with contextlib.suppress(RuntimeError):  # re-raised for the log once answered, both ways
        await asgi(scope, receive, send)
    return sent


def through_the_router(app: Any, method: str = "POST", path: str = "/reset") -> list[Any]:
    """The answer of the control API's route table (Starlette's router and middleware)."""
    return asyncio.run(_call(app.control.app, scope_of(method, path)))


def through_the_front_door(app: Any, method: str = "POST", path: str = "/reset") -> list[Any]:
    return asyncio.run(_call(app, scope_of(method, "/__mockstore" + path)))


@pytest.mark.parametrize("scenario", ["default", "large-inventory", "flaky-create"])
def test_a_reset_answers_as_its_route_does(scenario: str) -> None:
    routed, direct = create_app(scenario), create_app(scenario)
    for _ in range(3):  # the same run numbers, the same journal: the same bytes
        assert through_the_front_door(direct) == through_the_router(routed)
    assert direct.runtime.run == routed.runtime.run


def test_a_failing_reset_answers_as_its_route_does(monkeypatch: pytest.MonkeyPatch) -> None:
    routed, direct = create_app("default"), create_app("default")

    def broken() -> None:
        raise RuntimeError("a bug")

    for app in (routed, direct):
        through_the_router(app)  # the table built
        monkeypatch.setattr(app.runtime, "reset", broken)
    expected = through_the_router(routed)
    assert expected[0]["status"] == 500
    assert through_the_front_door(direct) == expected


@pytest.mark.parametrize(("method", "path"), [("GET", "/reset"), ("POST", "/reset/")])
def test_what_is_not_a_reset_still_goes_through_the_router(method: str, path: str) -> None:
    routed, direct = create_app("default"), create_app("default")
    expected = through_the_router(routed, method, path)
    assert expected[0]["status"] in (307, 405)
    assert through_the_front_door(direct, method, path) == expected


def test_a_reset_over_http_keeps_the_token_and_the_tenants() -> None:
    with MockServer("default", control_token="s3cret") as server:
        url = server.base_url + "/__mockstore/reset"
        refused = httpx.post(url, timeout=PATIENT)
        assert refused.status_code == 401
        assert refused.json()["status"] == 401
        done = httpx.post(url, headers={"Authorization": "Bearer s3cret"}, timeout=PATIENT)
        assert done.status_code == 200
        assert done.json()["status"] == "reset"
        tenant = server.control.create_tenant()
        inner = httpx.post(
            f"{tenant.url}/__mockstore/reset",
            headers={"Authorization": "Bearer s3cret"},
            timeout=PATIENT,
        )
        assert inner.status_code == 200
        assert inner.json()["run"] >= 1
