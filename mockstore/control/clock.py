"""Endpoints over the scenario clock: read it, move it."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from mockstore.clock import format_time, outside_range, parse_time
from mockstore.control.http import error_response, json_object, json_response, state_unavailable
from mockstore.control.operations import (
    NUMBER,
    STRING,
    Answer,
    Body,
    Example,
    Operation,
    Schema,
    described,
    doc,
    obj,
    setting,
)
from mockstore.shared.backend import StateUnavailable
from mockstore.state import Runtime

CLOCK = Schema(
    "Clock",
    obj(
        {
            "now": doc(STRING, "The scenario's now, RFC 3339 UTC"),
            "unix": doc(NUMBER, "The same instant in Unix seconds"),
            "mode": setting("clock", "mode"),
            "start": doc(STRING, "Where the clock started, RFC 3339 UTC"),
            "elapsed_seconds": doc(NUMBER, "Scenario seconds since the start"),
        },
        description="The scenario clock",
    ),
)
MOVE = Body(
    "Move the clock by a number of seconds (negative: back), or set it to an instant",
    {
        "application/json": {
            "oneOf": [
                obj({"advance_seconds": NUMBER}) | {"additionalProperties": False},
                obj({"set": doc(STRING, "An ISO 8601 instant (UTC when it names no zone)")})
                | {"additionalProperties": False},
            ]
        }
    },
    examples=(
        Example("advance", "A minute later: the next minute's allowance", {"advance_seconds": 60}),
        Example("set", "Just after getPet's sunset", {"set": "2030-12-05T00:00:01Z"}),
    ),
    required=True,
)


class ClockEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def _clock_json(self) -> dict[str, Any]:
        clock = self.runtime.state.clock
        now = clock.now()
        return {
            "now": format_time(now),
            "unix": now,
            "mode": clock.mode,
            "start": format_time(clock.start),
            "elapsed_seconds": clock.elapsed(),
        }

    @described(
        Operation("getClock", "Read the scenario clock", "clock", {200: Answer("The clock", CLOCK)})
    )
    async def show(self, request: Request) -> Response:
        return json_response(self._clock_json())

    @described(
        Operation(
            "moveClock",
            "Advance the scenario clock, or set it",
            "clock",
            {200: Answer("The clock where it now is", CLOCK)},
            errors={400: ("invalid_request", "malformed_json"), 503: ("state_unavailable",)},
            body=MOVE,
            description="Moving it back begins a run, with the windows recounted at the new "
            "instant; a time outside 1970-01-01T00:00:00Z to 9000-01-01T00:00:00Z is refused "
            "and the clock stays.",
        )
    )
    async def move(self, request: Request) -> Response:
        body = await json_object(request)
        clock = self.runtime.state.clock
        if set(body) == {"advance_seconds"}:
            seconds = body["advance_seconds"]
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                return error_response("invalid_request", "advance_seconds must be a number", 400)
            try:
                target = clock.now() + seconds
            except OverflowError:  # an integer too large for a float: far out of range
                target = float("inf")
        elif set(body) == {"set"}:
            try:
                target = parse_time(str(body["set"]))
            except (ValueError, OverflowError):
                return error_response(
                    "invalid_request", f"set: not an ISO 8601 time: {body['set']!r}", 400
                )
        else:
            return error_response(
                "invalid_request",
                'send {"advance_seconds": N} or {"set": "2030-12-05T00:00:00Z"}',
                400,
            )
        # Refused before it is applied: a clock at NaN or near year 9999 would
        # break every later request.
        problem = outside_range(target)
        if problem is not None:
            return error_response("invalid_request", f"the clock stays where it is: {problem}", 400)
        # Back in time: a new run, limits and bans recomputed for the new instant.
        shared = self.runtime.shared
        if shared is None:
            self.runtime.move_clock(target)
            return json_response(self._clock_json())
        try:
            await shared.move_clock(target)
        except StateUnavailable as exc:
            return state_unavailable(exc)
        return json_response(self._clock_json())
