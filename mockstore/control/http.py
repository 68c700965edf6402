"""How control endpoints read requests and write answers.

Every answer is JSON encoded the same way: compact, with non-ASCII escaped, so
any stored string (even a lone surrogate a client sent) can be echoed back.
Every Error body comes from ``mockstore.errors.error_body``, the server's one
Error builder.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from mockstore.control.scope import HOLDS
from mockstore.errors import ApiError, error_body
from mockstore.errors import compact_json as encode_json
from mockstore.limits import WRITE_CHUNK
from mockstore.memory import Account, OverBudget
from mockstore.transport import send_in_pieces, take_turns

JSON = "application/json"
_TRUE = {"1", "true", "yes", "on"}


class PiecewiseResponse(Response):
    """A ``Response`` whose body goes out ``WRITE_CHUNK`` at a time when it is larger.

    Starlette sends a body in one message; a report or a scenario of several
    megabytes would then sit whole in the buffer of a client that does not read.
    A larger body is held until its last piece went out, for as long as the
    client takes (up to the write timeout): it is charged to the connections'
    share of the memory budget meanwhile (``HOLDS``), or answered 507.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if len(self.body) <= WRITE_CHUNK or scope.get("method") == "HEAD":
            await Response.__call__(self, scope, receive, send)
            return
        account: Account | None = scope.get(HOLDS)
        size = len(self.body)
        if account is not None and not account.reserve(size):
            await over_budget(account, size, "this answer")(scope, receive, send)
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            await send_in_pieces(send, self.body)
        finally:
            if account is not None:
                account.release(size)


def over_budget(account: Account, size: int, what: str) -> Response:
    """507: ``size`` more bytes for ``what`` do not fit ``account``."""
    refusal = OverBudget(what, size, account)
    return error_response("memory_budget", f"{refusal}; retry shortly", 507)


class HeldStream(StreamingResponse):
    """A document made a batch at a time in a worker (``json_stream``), sent in pieces.

    Each batch goes out ``WRITE_CHUNK`` at a time, so a client that does not
    read holds a piece in the connection's buffer rather than a batch (one
    journal entry may be megabytes). ``size`` bytes of ``account`` stay
    reserved until the stream ends: the entries it was made from, which the
    journal may drop meanwhile while a slow reader keeps them alive. Made by
    ``held_stream``, which refuses it first when the budget has no room.
    """

    def __init__(
        self,
        chunks: Iterator[bytes],
        account: Account | None,
        size: int,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(_in_pieces(in_worker(chunks)), media_type=JSON, headers=headers)
        self.account = account
        self.size = size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.account is not None:
                self.account.release(self.size)
                self.account = None


def held_stream(
    chunks: Iterator[bytes],
    account: Account | None,
    size: int,
    what: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A ``HeldStream`` with ``size`` bytes of ``account`` reserved, or 507 when they do not fit."""
    if account is not None and size and not account.reserve(size):
        return over_budget(account, size, what)
    return HeldStream(chunks, account if size else None, size, headers)


async def _in_pieces(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        if len(chunk) <= WRITE_CHUNK:
            yield chunk
            continue
        for start in range(0, len(chunk), WRITE_CHUNK):
            if start:
                await take_turns()  # one piece a turn: a batch may hold megabytes
            yield chunk[start : start + WRITE_CHUNK]


def json_response(
    content: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return PiecewiseResponse(encode_json(content), status, headers, media_type=JSON)


def error_response(
    code: str,
    message: str,
    status: int,
    *,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    """An Error answer; ``extra`` adds fields after ``code``, ``message`` and ``status``."""
    return Response(error_body(code, message, status, **extra), status, headers, media_type=JSON)


# A streamed document's items are handed to the socket about this much at a time.
STREAM_BATCH_BYTES = WRITE_CHUNK


def json_stream(
    document: Mapping[str, Any], items: Iterable[Any], encode: Callable[[Any], Any]
) -> Iterator[bytes]:
    """``document`` as compact JSON, its ``STREAMED`` value replaced by the list of ``items``.

    The same bytes as ``encode_json`` of the whole (each item made by
    ``encode``), written a batch of items at a time: a full journal's JSON is
    never whole in memory (a HAR of 48 MiB of entries peaked at three times
    that). ``STREAMED`` must appear exactly once in ``document``.
    """
    marker = secrets.token_hex(16)
    head, tail = encode_json(_placed(document, marker)).split(b'"' + marker.encode() + b'"')
    batch = [head, b"["]
    size = 0
    first = True
    for item in items:
        piece = encode_json(encode(item))
        batch.append(piece if first else b"," + piece)
        first = False
        size += len(piece)
        if size >= STREAM_BATCH_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
    batch.append(b"]" + tail)
    yield b"".join(batch)


async def in_worker(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks``, each made in a worker thread (the event loop keeps answering meanwhile).

    Not Starlette's ``iterate_in_threadpool``: it ends the iteration by raising,
    and each such exception, with its traceback, is a reference cycle left to
    the collector once per stream.
    """
    done: Any = object()
    while True:
        chunk = await run_in_threadpool(next, chunks, done)
        if chunk is done:
            return
        yield chunk


class _Streamed:
    """The place of the streamed list in a document (``STREAMED``)."""

    def __repr__(self) -> str:
        return "STREAMED"


STREAMED: Any = _Streamed()


def _placed(value: Any, marker: str) -> Any:
    """``value`` with ``STREAMED`` replaced by ``marker`` (a copy of the containers on the way)."""
    if value is STREAMED:
        return marker
    if isinstance(value, Mapping):
        return {key: _placed(item, marker) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_placed(item, marker) for item in value]
    return value


# The readers below raise ApiError rather than return an answer, so an endpoint
# reads its input in one line; ControlAPI turns the ApiError into error_response.


async def json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object; an empty body is ``{}``."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ApiError("malformed_json", f"the body is not valid JSON: {exc}", status=400) from None
    if not isinstance(value, dict):
        raise ApiError("invalid_request", "the body must be a JSON object", status=400)
    return value


# An integer as a query parameter spells it: ASCII digits, an optional sign (not
# everything Python's int() reads: "1_000", " 7", Unicode digits).
INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


def int_param(request: Request, name: str) -> int | None:
    """An integer query parameter; absent or empty is ``None``."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not INTEGER_TEXT.fullmatch(raw):
        message = f"query parameter {name!r} must be an integer, got {raw!r}"
        raise ApiError("invalid_request", message, status=400)
    return int(raw)


_FALSE = {"0", "false", "no", "off"}


def yes_no(request: Request, name: str, *, default: bool) -> bool:
    """A yes/no query parameter with a default when absent; anything else is a 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    value = raw.lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    message = f"query parameter {name!r} must be true or false, got {raw!r}"
    raise ApiError("invalid_request", message, status=400)


def state_unavailable(exc: Exception) -> Response:
    """503 for a control call the shared state (Redis) could not take: retry shortly."""
    return error_response(
        "state_unavailable",
        f"{exc}; the change was not confirmed: retry shortly",
        503,
        headers={"retry-after": "1"},
    )
