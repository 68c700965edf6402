"""Every Error ``code`` the server can emit, in one table, and the Error body.

The README's table of codes is generated from ``ERROR_CODES`` (see
``tests/test_docs.py``), so the two cannot drift apart.
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
        ErrorCode("validation_failed", 400, "createPet body is not a valid NewPet."),
        ErrorCode("invalid_parameter", 400, "A query or path parameter is invalid or repeated."),
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
        ErrorCode("key_banned", 429, "Key temporarily banned for sending on after 429s."),
        ErrorCode(
            "headers_too_large", 431, "The request line and headers are over `--max-header-bytes`."
        ),
        ErrorCode("internal_error", 500, "An unexpected error in mockstore itself (logged)."),
        ErrorCode("not_implemented", 501, "GET /store/orders, unless a scenario scripts it."),
        ErrorCode("server_busy", 503, "Every connection is busy (`--max-connections`)."),
        ErrorCode(
            "store_full", 507, "No int64 id is left, or `behaviour.max_store_bytes` is used up."
        ),
    )
}


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


def compact_json(value: Any) -> bytes:
    """JSON with no spaces and non-ASCII escaped: any string, even a lone surrogate, encodes."""
    return json.dumps(value, separators=(",", ":")).encode("ascii")


class ApiError(Exception):
    """A refusal, the one way the domain says "no": an Error ``code``, its message,
    the HTTP status (the code's own unless given) and any headers it needs
    (``WWW-Authenticate``, ``Allow``, ...), as (name, value) byte pairs.
    """

    __slots__ = ("code", "headers", "message", "status")

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = ERROR_CODES[code].status if status is None else status
        self.headers = headers

    def body(self) -> bytes:
        return error_body(self.code, self.message, self.status)
