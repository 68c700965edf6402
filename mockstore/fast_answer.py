"""The answer in one message: uvicorn's ``send`` for a cycle, and the check that it fits.

mockstore's protocol (``protocol.py``) offers the app the ``RESPONSE``
extension (``limits.RESPONSE``): an answer whose header block the app built
itself goes out in one ``writelines``, skipping uvicorn's per-header checks.
That ``send`` uses uvicorn's ``RequestResponseCycle`` attributes, which are
not a public API: ``probe`` drives the installed uvicorn's protocol through a
request, a pipelined one and a one-message answer on a fake transport, and
only when everything it relies on behaves as it expects is the fast path
used; otherwise the server answers the standard way (two ASGI messages,
uvicorn's own ``send``), byte for byte the same answers, a little slower.

The probe also asks whether uvicorn itself closes a connection after a
request that says ``Connection: close`` (uvicorn 0.30 kept it open after a
200 or 201): where it does not, the protocol marks such a request's cycle
itself, on either path.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

from mockstore.headers import parse_block
from mockstore.limits import RESPONSE

log = logging.getLogger("mockstore.server")

# Every request's scope names the one-message answer (limits.RESPONSE): shared,
# never written.
EXTENSIONS: dict[str, dict[str, Any]] = {RESPONSE: {}}
_END = b"\r\n"
_END_AND_CLOSE = b"connection: close\r\n\r\n"


async def send_answer(cycle: RequestResponseCycle, message: Any) -> None:
    """uvicorn's ``send`` for one request, which also takes an answer in one message.

    Bound to each request's cycle as its ``send`` (``protocol.py``'s ``on_headers_complete``).
    For a ``RESPONSE`` message (``limits.RESPONSE``) it writes the status line,
    the app's header block and the body with one ``writelines`` (one
    ``writev`` under uvloop: the body is not copied), where uvicorn writes
    twice and first checks each header against two regular
    expressions, lower-cases its name and reads it for ``Content-Length`` and
    ``Connection`` (about 3,000 instructions a header). It keeps uvicorn's
    bookkeeping: flow control, a client that left, ``connection: close`` when
    the connection will not be kept alive, the end-of-response callback. Any
    other message goes to uvicorn's ``send`` unchanged.

    The app sends it only for a body of at most ``WRITE_CHUNK``: a larger one
    goes the standard way, in pieces, so that a client that does not read
    paces it (``pause_writing``) instead of finding it all in the buffer.

    The hidden costs: the block is written as the app built it, so it is only
    for headers mockstore made itself (``api.py`` sends scripted ones, which
    may say anything, the standard way): no ``Content-Length`` check, no
    ``Connection`` or ``Transfer-Encoding`` header in it. And it relies on
    uvicorn's cycle attributes, which ``probe`` checks on the installed uvicorn
    before a server uses it, and ``tests/test_fast_answer.py`` on the wire
    against the standard path.
    """
    if message["type"] != RESPONSE:
        await RequestResponseCycle.send(cycle, message)
        if cycle.response_complete:
            unbind(cycle)
        return
    if cycle.flow.write_paused and not cycle.disconnected:
        await cycle.flow.drain()
    if cycle.disconnected:
        return
    if cycle.response_started or cycle.access_log or cycle.default_headers:
        # Misuse (uvicorn's send says what), or headers uvicorn adds itself.
        await _as_two_messages(cycle, message)
        if cycle.response_complete:
            unbind(cycle)
        return
    cycle.response_started = True
    cycle.waiting_for_100_continue = False
    keep_alive = cycle.keep_alive
    transport = cycle.transport
    transport.writelines(
        (
            STATUS_LINE[message["status"]],
            message["head"],
            _END if keep_alive else _END_AND_CLOSE,
            message["body"],
        )
    )
    cycle.response_complete = True
    cycle.message_event.set()
    if not keep_alive:
        transport.close()
    cycle.on_response()
    unbind(cycle)


def unbind(cycle: RequestResponseCycle) -> None:
    """Drop the cycle's own ``send`` once its answer is complete.

    The bound method refers to the cycle that holds it: left there, that
    reference cycle would keep every finished request (its scope, headers and
    buffers) alive until the cyclic garbage collector ran, which then cost
    more than the rest of the request (about 8,000 instructions each). The
    app keeps the method it was handed, so a late call still lands here.
    """
    # ``del``, not ``__dict__.pop``: reading ``__dict__`` would make CPython 3.11
    # give the instance a real dict, and every later attribute read slower.
    try:  # noqa: SIM105 - contextlib.suppress costs more than this whole function
        del cycle.send
    except AttributeError:
        pass


async def _as_two_messages(cycle: RequestResponseCycle, message: Any) -> None:
    start = {
        "type": "http.response.start",
        "status": message["status"],
        "headers": list(parse_block(message["head"])),
    }
    await RequestResponseCycle.send(cycle, start)  # type: ignore[arg-type]
    body = {"type": "http.response.body", "body": message["body"]}
    await RequestResponseCycle.send(cycle, body)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Fit:
    """What the installed uvicorn allows: the fast path (or why not), and who honours ``close``."""

    fast: bool
    # uvicorn itself ends a connection whose request said ``Connection: close``.
    honours_close: bool
    reason: str | None = None


class _ProbeTransport(asyncio.Transport):
    """A transport that keeps what is written, for the probe."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False
        self.reading = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 1), "peername": ("127.0.0.1", 2)}.get(name, default)

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass


_PROBE_GET = b"GET /probe HTTP/1.1\r\nHost: probe\r\n\r\n"
_PROBE_CLOSE = b"GET /probe HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n"
_PROBE_ANSWER = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"


async def _probe(base: type[HttpToolsProtocol]) -> Fit:
    from uvicorn.config import Config
    from uvicorn.server import ServerState

    sends: list[Any] = []  # each started request's ``send``, in order
    done = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        sends.append(send)
        await done.wait()  # the probe answers the first itself; the others at the end
        if not getattr(send, "__self__", None) or not send.__self__.response_started:
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    config = Config(
        app,
        http=base,
        ws="none",  # as the server's: "auto" would import websockets (issue 29's start)
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        date_header=False,
    )
    state = ServerState()
    protocol = base(config=config, server_state=state, app_state={})
    transport = _ProbeTransport()
    protocol.connection_made(transport)
    try:
        protocol.data_received(_PROBE_GET + _PROBE_GET)
        await asyncio.sleep(0)  # the first request's task starts
        if len(protocol.pipeline) != 1 or len(sends) != 1:
            return Fit(False, False, "a pipelined request is not queued in `pipeline`")
        if not (protocol.flow.read_paused and not transport.reading):
            return Fit(False, False, "reading is not paused while a request is queued")
        reason = await _answer_fast(protocol, transport, getattr(sends[0], "__self__", None))
        if reason is not None:
            return Fit(False, False, reason)
        await asyncio.sleep(0)  # the queued request's task starts
        if len(sends) != 2:
            return Fit(False, False, "the queued request did not start after the answer")
        protocol.data_received(_PROBE_CLOSE)
        return Fit(True, not protocol.cycle.keep_alive)
    except Exception as exc:  # any difference at all: the standard path
        return Fit(False, False, f"{type(exc).__name__}: {exc}")
    finally:
        done.set()
        for _ in range(100):  # each answer starts the next queued request
            if not state.tasks:
                break
            await asyncio.gather(*state.tasks, return_exceptions=True)
        protocol.connection_lost(None)


# What ``send_answer`` reads and writes on a cycle.
_NEEDED = (
    "flow",
    "transport",
    "keep_alive",
    "response_started",
    "response_complete",
    "disconnected",
    "access_log",
    "default_headers",
    "message_event",
    "on_response",
    "waiting_for_100_continue",
    "scope",
)


async def _answer_fast(
    protocol: HttpToolsProtocol, transport: _ProbeTransport, cycle: Any
) -> str | None:
    """Answer the running request through ``send_answer``: None, or what did not fit."""
    if not isinstance(cycle, RequestResponseCycle):
        return "the app's send is not a request cycle's"
    missing = [name for name in _NEEDED if not hasattr(cycle, name)]
    if missing:
        return f"a request cycle has no {', '.join(missing)}"
    if cycle.access_log or cycle.default_headers:
        return "the cycle writes headers of its own"
    message = {"type": RESPONSE, "status": 200, "head": b"content-length: 2\r\n", "body": b"ok"}
    await send_answer(cycle, message)
    written = b"".join(transport.written)
    if written != _PROBE_ANSWER:
        return f"the one-message answer was written as {written[:80]!r}"
    if not cycle.response_complete or protocol.pipeline or not transport.reading:
        return "the answer did not end the request, resume reading and start the queued one"
    return None


_fits: dict[type, Fit] = {}


def probe(base: type[HttpToolsProtocol] = HttpToolsProtocol) -> Fit:
    """How the installed uvicorn's ``base`` protocol fits the fast answer (checked once a class).

    Runs in a loop of its own, in the calling thread (a few milliseconds),
    before a server starts; logs a warning when the fast path is not used.
    """
    fit = _fits.get(base)
    if fit is None:
        loop = asyncio.new_event_loop()
        try:
            fit = loop.run_until_complete(_probe(base))
        finally:
            loop.close()
        _fits[base] = fit
        if not fit.fast:
            log.warning(
                "this uvicorn's internals differ from what mockstore's one-message answer "
                "was written for (%s): answering the standard way",
                fit.reason,
            )
    return fit
