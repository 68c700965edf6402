"""Error bodies as a scenario's provider writes them: message templates and computed fields.

Every refusal is an Error (``code``, ``message``, ``status``; ``errors.py``).
A provider words its own: ``behaviour.error_messages`` gives a condition's
message as a template that may embed what the request got wrong, and
``behaviour.error_fields`` adds fields, each a constant, a template, or a value
computed per answer:

- ``uuid``, ``request_id``, ``timestamp``: a random-looking UUID (a hash of the
  seed and the answer's request id, so the same requests give the same bodies),
  the answer's request id, the answer's instant;
- ``trace_id``: the trace id of a request id that is a W3C ``traceparent``
  (``00-<trace id>-<span id>-01``; else the whole id);
- ``retry_after_s``, ``retry_after_ms``: the wait the answer states (the
  limiter's ``Decision.retry_at``, or a maintenance window's end), rounded up;
- ``value``, ``parameter``: the offending value as sent and the parameter or
  field it was sent as;
- ``details``: one item per invalid field (every one a body's validation found,
  or the one parameter), each shaped by the field's ``item`` templates.

A placeholder names only what the answer knows (``MESSAGE_FIELDS``,
``ITEM_FIELDS``): the scenario is refused at load time otherwise
(``check_error_bodies``). ``{key}`` is the key the caller sent, masked as
providers print one (``sk_t****abcd``): never whole. Values quoted from a
request are cut to ``QUOTE_LIMIT`` characters: an answer never echoes kilobytes.

Pure Python: no HTTP.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mockstore.errors import ApiError, FieldProblem, error_body
from mockstore.scenario.model import Behaviour, ErrorField
from mockstore.templates import fill

# The longest value quoted from a request.
QUOTE_LIMIT = 200


def timestamp(now: float) -> str:
    """RFC 3339 UTC with milliseconds, as APIs write an Error's instant."""
    moment = datetime.fromtimestamp(now, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def trace_id(request_id: str) -> str:
    """The trace id of a ``traceparent`` request id (the whole id if it is none)."""
    parts = request_id.split("-")
    if len(parts) == 4 and len(parts[1]) == 32:
        return parts[1]
    return request_id


def masked(token: str | None) -> str:
    """A key as a provider prints one: its first and last four characters, if it has 12."""
    if not token:
        return ""
    if len(token) < 12:
        return "****"
    return f"{token[:4]}****{token[-4:]}"


def shown(value: Any) -> str:
    """A value as a template prints it: a string as it is, anything else as JSON; cut short."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + "..."


def _kept(value: Any) -> Any:
    """A value an Error field carries as sent (JSON), a long string cut short."""
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return value[:QUOTE_LIMIT] + "..."
    if isinstance(value, (dict, list)) and len(json.dumps(value)) > QUOTE_LIMIT:
        return shown(value)
    return value


@dataclass(slots=True)
class ErrorFacts:
    """What an Error body may state about the answer beyond the refusal itself.

    ``retry_at`` is the instant a retry may be allowed (the limiter's, for a
    refusal of the allowance); ``limit`` the allowance it states.
    """

    request_id: str
    now: float
    method: str = ""
    path: str = ""
    token: str | None = None
    retry_at: float | None = None
    limit: int | None = None


class ErrorBodies:
    """A scenario's Error bodies: the fields it adds and the messages it words."""

    __slots__ = ("_seed", "fields", "messages")

    def __init__(self, behaviour: Behaviour, seed: int) -> None:
        self._seed = f"mockstore-error-field-{seed}"
        self.fields: tuple[ErrorField, ...] = behaviour.error_fields
        self.messages = dict(behaviour.error_messages)

    @property
    def rewrites(self) -> bool:
        """Whether an Error body of this scenario differs from ``ApiError.body``'s."""
        return bool(self.fields or self.messages)

    def body(self, error: ApiError, facts: ErrorFacts) -> bytes:
        """``error``'s Error body, worded and completed as the scenario says."""
        retry_at = error.retry_at if error.retry_at is not None else facts.retry_at
        values: dict[str, str] | None = None
        message = error.message
        template = self.messages.get(error.condition)
        if template is not None:
            values = self._values(error, facts, retry_at)
            message = fill(template, values)
        extra: dict[str, Any] = {}
        for item in self.fields:
            if item.conditions is not None and error.condition not in item.conditions:
                continue
            if item.template is not None:
                values = values or self._values(error, facts, retry_at)
                extra[item.name] = fill(item.template, {**values, "message": message})
                continue
            kind = item.generate
            if kind is None:
                extra[item.name] = item.value
            elif kind == "request_id":
                extra[item.name] = facts.request_id
            elif kind == "trace_id":
                extra[item.name] = trace_id(facts.request_id)
            elif kind == "uuid":
                extra[item.name] = self._uuid(item.name, facts.request_id)
            elif kind == "timestamp":
                extra[item.name] = timestamp(facts.now)
            elif kind in ("retry_after_s", "retry_after_ms"):
                wait = _wait(retry_at, facts.now, kind == "retry_after_ms")
                if wait is not None:
                    extra[item.name] = wait
            elif kind == "value":
                if error.value is not None:
                    extra[item.name] = _kept(error.value)
            elif kind == "parameter":
                if error.parameter is not None:
                    extra[item.name] = error.parameter
            elif kind == "details":
                extra[item.name] = [_item(item.item, problem) for problem in error.details]
        return error_body(error.code, message, error.status, **extra)

    def _values(self, error: ApiError, facts: ErrorFacts, retry_at: float | None) -> dict[str, str]:
        seconds = _wait(retry_at, facts.now, False)
        millis = _wait(retry_at, facts.now, True)
        return {
            "message": error.message,
            "code": error.code,
            "status": str(error.status),
            "condition": error.condition,
            "value": shown(error.value),
            "parameter": error.parameter or "",
            "method": facts.method,
            "path": shown(facts.path),
            "key": masked(facts.token),
            "request_id": facts.request_id,
            "retry_after_s": "" if seconds is None else str(seconds),
            "retry_after_ms": "" if millis is None else str(millis),
            "limit": "" if facts.limit is None else str(facts.limit),
        }

    def _uuid(self, field: str, request_id: str) -> str:
        """A random-looking UUID for one answer's field: a hash of the seed, the field and
        the answer's request id, so the same scenario and requests give the same bodies
        (and every process of a shared state the same as one)."""
        text = f"{self._seed}:{field}:{request_id}".encode()
        return str(uuid.UUID(bytes=hashlib.blake2b(text, digest_size=16).digest(), version=4))


def _wait(retry_at: float | None, now: float, millis: bool) -> int | None:
    """The wait until ``retry_at``, rounded up (never early); None without one."""
    if retry_at is None or not retry_at:
        return None
    left = max(0.0, retry_at - now)
    # Rounded first to the microsecond: float noise must not add a whole unit.
    return math.ceil(round(left * 1000, 3)) if millis else math.ceil(round(left, 6))


def _item(shape: tuple[tuple[str, str], ...], problem: FieldProblem) -> dict[str, Any]:
    """One entry of a ``details`` field, each of its fields a template of the problem."""
    values = {
        "field": ".".join(str(part) for part in problem.field),
        "pointer": "".join(f"/{part}" for part in problem.field),
        "location": problem.location,
        "reason": problem.reason,
        "message": problem.message,
        "value": shown(problem.value) if problem.sent else "",
    }
    return {name: fill(template, values) for name, template in shape}


__all__ = [
    "ErrorBodies",
    "ErrorFacts",
    "masked",
    "shown",
    "timestamp",
]
