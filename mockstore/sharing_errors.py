"""The two ways a request in a shared state stops short of its answer: start again, or 503.

``mockstore.sharing`` (the request's round trip to Redis) and ``shaping`` raise
them; the API's pipeline catches them on every request, so they live apart from
the Redis backend, which an in-memory server never imports (its start, issue 29).
"""

from __future__ import annotations

from starlette.types import Receive

from mockstore.errors import ApiError


class Restart(Exception):
    """The configuration changed and this process reloaded it: serve the request again."""

    def __init__(self, receive: Receive) -> None:
        self.receive = receive


class Unavailable(Exception):
    """The shared state cannot be reached: the request is answered ``error`` (503)."""

    def __init__(self, error: ApiError) -> None:
        self.error = error


__all__ = ["Restart", "Unavailable"]
