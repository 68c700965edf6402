"""The ASGI entry point: the control API under ``/__mockstore``, the Pet Store elsewhere."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mockstore.api import PetStoreAPI
from mockstore.clock import Clock
from mockstore.control import ControlAPI
from mockstore.errors import error_body
from mockstore.limits import Limits
from mockstore.scenario import Scenario, load_scenario_file
from mockstore.state import Runtime
from mockstore.urls import CONTROL_PREFIX as PREFIX
from mockstore.urls import is_control_path, is_disguised_control_path


class MockstoreApp:
    """Routes each request by path prefix; everything else is the API's to answer.

    Every path outside ``/__mockstore`` goes through the API's pipeline, so an
    unknown path without a key is a 401, not a 404: a caller without a valid
    key learns nothing about what exists. The prefix is matched on the decoded,
    normalised path, and served only when it is also spelled literally: a proxy
    that guards ``/__mockstore`` by its raw path cannot be walked around with
    ``/%5F_mockstore`` or ``/v1/../__mockstore``, which are refused (404).
    """

    def __init__(
        self,
        scenario: Scenario | str = "default",
        *,
        control: bool = True,
        control_token: str | None = None,
        clock: Clock | None = None,
        limits: Limits | None = None,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        if isinstance(scenario, str):
            scenario = load_scenario_file(scenario)
        limits = limits or Limits()
        self.runtime = Runtime(scenario, clock)
        self.api = PetStoreAPI(self.runtime, body_timeout=limits.body_timeout)
        self.control = (
            ControlAPI(self.runtime, control_token, limits=limits, allowed_hosts=allowed_hosts)
            if control
            else None
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "http":
            path: str = scope["path"]
            # Only a path under the prefix, or one with dot or empty segments,
            # can be a disguised spelling of it: an ordinary API path costs two
            # substring searches.
            control = is_control_path(path)
            if (control or "//" in path or "/." in path) and is_disguised_control_path(
                path, scope.get("raw_path")
            ):
                await _not_found(
                    send,
                    f"no such path: {path} (the control API answers only under {PREFIX}, "
                    "spelled literally: no percent-encoding, dot segments or doubled slashes)",
                )
                return
            if control:
                if self.control is None:
                    await _not_found(send, f"no such path: {path} (the control API is off)")
                    return
                inner = dict(scope)
                inner["path"] = path[len(PREFIX) :] or "/"
                inner["root_path"] = scope.get("root_path", "") + PREFIX
                await self.control(inner, receive, send)
                return
            await self.api(scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return


async def _not_found(send: Any, message: str) -> None:
    body = error_body("not_found", message)
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def create_app(
    scenario: Scenario | str = "default",
    *,
    control: bool = True,
    control_token: str | None = None,
    clock: Clock | None = None,
    limits: Limits | None = None,
    allowed_hosts: Iterable[str] = (),
) -> MockstoreApp:
    """An ASGI app serving ``scenario`` (a bundled name, a path, or a loaded Scenario).

    Use it in-process with ``httpx.ASGITransport(app=create_app())``.
    """
    return MockstoreApp(
        scenario,
        control=control,
        control_token=control_token,
        clock=clock,
        limits=limits,
        allowed_hosts=allowed_hosts,
    )
