"""Every Error ``code`` the server can emit, in one table, and the Error body.

The docs' table of codes (``docs/reference/error-codes.md``) is generated from
``ERROR_CODES`` by ``docs/generate.py``, and ``tests/test_docs.py`` fails while they differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: str
    status: int
    when: str


ERROR_CODES: dict[str, ErrorCode] = {
    e.code: e
    for e in (
        ErrorCode("malformed_json", 400, "createPet body is not valid JSON."),
        ErrorCode("missing_body", 400, "createPet was sent without a body."),
        ErrorCode(
            "validation_failed",
            400,
            "createPet body is not a valid NewPet, or breaks `collections.constraints`.",
        ),
        ErrorCode(
            "unknown_field",
            400,
            "createPet body has a field NewPet does not name (`behaviour.unknown_fields: refuse`).",
        ),
        ErrorCode(
            "invalid_parameter",
            400,
            "A query or path parameter is invalid or repeated (a cursor the mock did not make).",
        ),
        ErrorCode("bad_request", 400, "The request is not valid HTTP/1.1 (a broken chunk, say)."),
        ErrorCode("unauthorized", 401, "Authorization header missing or not `Bearer <key>`."),
        ErrorCode("invalid_token", 401, "The bearer key is unknown or was revoked."),
        ErrorCode("not_found", 404, "No such pet (getPet), or no such path."),
        ErrorCode("method_not_allowed", 405, "Known path, wrong method (see `Allow`)."),
        ErrorCode("request_timeout", 408, "The head or the body did not arrive in time."),
        ErrorCode("gone", 410, "getPet at or after its sunset (`behaviour.sunset`)."),
        ErrorCode("payload_too_large", 413, "Request body over `behaviour.max_body_bytes`."),
        ErrorCode("unsupported_media_type", 415, "createPet body not sent as application/json."),
        ErrorCode("rate_limited", 429, "Over the plan's per-minute or per-day allowance."),
        ErrorCode(
            "cors_rejected",
            403,
            "A CORS preflight from an origin, for a method or with a header the scenario's "
            "`http.cors` does not allow (when `rejected_status` is set).",
        ),
        ErrorCode("key_banned", 429, "Key temporarily banned for sending on after 429s."),
        ErrorCode(
            "headers_too_large", 431, "The request line and headers are over `--max-header-bytes`."
        ),
        ErrorCode("internal_error", 500, "An unexpected error in mockstore itself (logged)."),
        ErrorCode("not_implemented", 501, "GET /store/orders, unless a scenario scripts it."),
        ErrorCode(
            "upstream_unreachable", 502, "`mockstore record`: the upstream failed to answer."
        ),
        ErrorCode("server_busy", 503, "Every connection is busy (`--max-connections`)."),
        ErrorCode(
            "maintenance",
            503,
            "A path in one of the scenario's `maintenance` windows (its default).",
        ),
        ErrorCode(
            "state_unavailable", 503, "The shared state (`--state redis://…`) cannot be reached."
        ),
        ErrorCode(
            "upstream_timeout", 504, "`mockstore record`: the upstream did not answer in time."
        ),
        ErrorCode(
            "store_full", 507, "No int64 id is left, or `behaviour.max_store_bytes` is used up."
        ),
        ErrorCode(
            "memory_budget",
            507,
            "The server's memory budget (`--memory-budget`) has no room for what this needs.",
        ),
    )
}


@dataclass(frozen=True, slots=True)
class Condition:
    """One situation the service refuses, and mockstore's own Error ``code`` for it.

    Several conditions may share a code (a bad ``limit`` and a bad ``petId`` are
    both ``invalid_parameter``), because a provider may tell them apart: the
    scenario setting ``behaviour.error_codes.<condition>`` gives each its own.
    ``parameter`` names the OpenAPI parameter a ``bad_*`` condition is about.
    """

    name: str
    code: str
    parameter: str | None = None


CONDITIONS: dict[str, Condition] = {
    c.name: c
    for c in (
        Condition("missing_key", "unauthorized"),
        Condition("malformed_authorization", "unauthorized"),
        Condition("unknown_key", "invalid_token"),
        Condition("malformed_json", "malformed_json"),
        Condition("missing_body", "missing_body"),
        Condition("invalid_body", "validation_failed"),
        Condition("unknown_field", "unknown_field"),
        Condition("field_constraint", "validation_failed"),
        Condition("bad_limit", "invalid_parameter", "limit"),
        Condition("limit_above_maximum", "invalid_parameter"),
        Condition("bad_status_filter", "invalid_parameter", "status"),
        Condition("bad_pet_id", "invalid_parameter", "petId"),
        # The page's parameter is named by the scenario (collections.pagination.parameter).
        Condition("bad_cursor", "invalid_parameter"),
        Condition("bad_offset", "invalid_parameter"),
        Condition("pet_not_found", "not_found"),
        Condition("unknown_path", "not_found"),
        Condition("method_not_allowed", "method_not_allowed"),
        Condition("gone", "gone"),
        Condition("payload_too_large", "payload_too_large"),
        Condition("unsupported_media_type", "unsupported_media_type"),
        Condition("rate_limited", "rate_limited"),
        Condition("key_banned", "key_banned"),
        Condition("not_implemented", "not_implemented"),
        Condition("store_full", "store_full"),
    )
}
# The condition of an invalid request parameter, by the parameter's OpenAPI name
# (a limit above its maximum is limit_above_maximum: see validation.py).
PARAMETER_CONDITIONS = {c.parameter: c.name for c in CONDITIONS.values() if c.parameter}
# The condition of a parameter above its maximum, where a provider may answer it otherwise.
ABOVE_MAXIMUM_CONDITIONS = {"limit": "limit_above_maximum"}
# Request validation failures: their status is ``behaviour.validation_status`` (400 or 422).
VALIDATION_CONDITIONS = frozenset(
    {
        "malformed_json",
        "missing_body",
        "invalid_body",
        "unknown_field",
        "field_constraint",
        "bad_limit",
        "limit_above_maximum",
        "bad_status_filter",
        "bad_pet_id",
        "bad_cursor",
        "bad_offset",
    }
)


def error_body(code: str, message: str, status: int | None = None, **extra: Any) -> bytes:
    """An Error body as JSON bytes; ``status`` defaults to the code's own.

    The one Error builder of the whole server (API and control API alike).
    ``extra`` adds fields after the three the Error schema requires (a refused
    scenario's ``problems``, say). Non-ASCII is escaped, so any string a client
    sent, even a lone surrogate, can be echoed back.
    """
    if status is None:
        status = ERROR_CODES[code].status
    return compact_json({"code": code, "message": message, "status": status, **extra})


# ``json.dumps`` with any option builds an encoder per call; this is the one it would build.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def compact_json(value: Any) -> bytes:
    """JSON with no spaces and non-ASCII escaped: any string, even a lone surrogate, encodes."""
    return _COMPACT.encode(value).encode("ascii")


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One invalid field of a request, for an Error body's ``details`` (``error_bodies.py``).

    ``location`` is ``body``, ``query`` or ``path``; ``field`` the field's place in
    the body (``("tags", 0)``) or the parameter's name; ``reason`` the rule it
    breaks, in JSON Schema's words (``required``, ``type``, ``enum``, ``minimum``,
    ``additionalProperties``, ...); ``value`` what was sent (``sent`` is False for a
    field that is missing).
    """

    location: str
    field: tuple[str | int, ...]
    reason: str
    message: str
    value: Any = None
    sent: bool = True


class ApiError(Exception):
    """A refusal, the one way the domain says "no": an Error ``code``, its message,
    the HTTP status (the code's own unless given) and any headers it needs
    (``WWW-Authenticate``, ``Allow``, ...), as (name, value) byte pairs.

    ``condition`` says which situation it is (one of ``CONDITIONS``; the code
    itself when only one condition has that code), so that a scenario's
    ``behaviour.error_codes`` and ``validation_status`` can restyle it.

    ``value``, ``parameter`` and ``details`` say what in the request is at fault
    (the offending value as sent, the parameter or field it was given as, every
    invalid field), and ``retry_at`` the instant a client may try again where the
    refusal is not the limiter's (a maintenance window's end): what a scenario's
    Error message templates and computed fields may state (``error_bodies.py``).
    """

    __slots__ = (
        "code",
        "condition",
        "details",
        "headers",
        "message",
        "parameter",
        "retry_at",
        "status",
        "value",
    )

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        condition: str | None = None,
        value: Any = None,
        parameter: str | None = None,
        details: tuple[FieldProblem, ...] = (),
        retry_at: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = ERROR_CODES[code].status if status is None else status
        self.headers = headers
        self.condition = condition or code
        self.value = value
        self.parameter = parameter
        self.details = details
        self.retry_at = retry_at

    def body(self) -> bytes:
        return error_body(self.code, self.message, self.status)

    def kept(self) -> ApiError:
        """This refusal, let go of the frames it was raised through, to be kept in an answer.

        A caught exception refers to its traceback, the traceback to every frame
        it passed, and those frames to their locals: the request's exchange, which
        keeps the answer, which keeps this error. Every refused request made such
        a cycle (about 40 objects), which only the cyclic garbage collector could
        free: in ``bench/held_mix.py`` (thousands of refusals a minute) they were
        most of what its collections walked and freed, on the event loop, 100 ms
        and more each. Everything an answer needs of a refusal is in its fields.
        """
        self.__traceback__ = None
        self.__context__ = None
        self.__cause__ = None
        return self
