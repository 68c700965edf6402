"""The ASGI entry point: the control API under ``/__mockstore``, the Pet Store elsewhere."""

from __future__ import annotations

from typing import Any

from mockstore.api import PetStoreAPI
from mockstore.clock import Clock
from mockstore.control import ControlAPI
from mockstore.errors import error_body
from mockstore.scenario import Scenario, load_scenario_file
from mockstore.state import Runtime
from mockstore.urls import CONTROL_PREFIX as PREFIX
from mockstore.urls import is_control_path


class MockstoreApp:
    """Routes each request by path prefix; everything else is the API's to answer.

    Every path outside ``/__mockstore`` goes through the API's pipeline, so an
    unknown path without a key is a 401, not a 404: a caller without a valid
    key learns nothing about what exists.
    """

    def __init__(
        self,
        scenario: Scenario | str = "default",
        *,
        control: bool = True,
        control_token: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        if isinstance(scenario, str):
            scenario = load_scenario_file(scenario)
        self.runtime = Runtime(scenario, clock)
        self.api = PetStoreAPI(self.runtime)
        self.control = ControlAPI(self.runtime, control_token) if control else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "http":
            path: str = scope["path"]
            # startswith first: most paths are the API's, and it is the cheaper test.
            if path.startswith(PREFIX) and is_control_path(path):
                if self.control is None:
                    await _not_found(send, path)
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


async def _not_found(send: Any, path: str) -> None:
    body = error_body("not_found", f"no such path: {path} (the control API is off)")
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
) -> MockstoreApp:
    """An ASGI app serving ``scenario`` (a bundled name, a path, or a loaded Scenario).

    Use it in-process with ``httpx.ASGITransport(app=create_app())``.
    """
    return MockstoreApp(scenario, control=control, control_token=control_token, clock=clock)
