"""The HTTP/1.1 connection: uvicorn's httptools protocol with the limits a shared server needs.

uvicorn (0.54, httptools) bounds neither the size of a request head nor the
time a client may take to send it or its body: its keep-alive timer starts
only after a first answer and any byte cancels it for good, so a silent
connection, a slow-loris head or a promised body that never comes holds a
connection (and its buffers) for ever. It answers a malformed request with a
text/plain 400, and past ``limit_concurrency`` a text/plain 503 while the idle
connections that filled it stay open. This subclass keeps one deadline per
connection, for what the server is waiting on:

* nothing under way (a new connection, or one whose answer went out): closed
  after ``keep_alive_timeout`` (uvicorn's own timer, also armed on connect);
* a request head: from its first byte, it must be complete within
  ``header_timeout`` (else 408) and ``max_header_bytes`` (else 431, as soon as
  the bytes received pass the limit: an 8 MB header is never buffered whole);
* a request body: from the end of the head, within ``body_timeout``. When the
  app is reading it, the app answers 408 itself (journaled, with the rate-limit
  headers); a body nobody waits for any more is cut off by closing;
* an answer the client does not read: the app sends a large body
  ``WRITE_CHUNK`` at a time and uvicorn waits, between pieces, for the client
  to read, so at most ``MAX_UNSENT_BYTES`` wait in the connection's buffer;
  once that is full the client must read within ``write_timeout`` or the
  connection is dropped (unsent bytes discarded).

Requests a client pipelines ahead of its answers wait in uvicorn's queue:
at most ``pipelining.MAX_QUEUED`` of them, each charged to the budget, a read
parsed no further than the queue has room for (``pipelining.Queue``). The
answer in one message and the check that the installed uvicorn fits it are
``fast_answer.py``.

The head limit holds per request whatever the framing: a head that begins
after another request in the same read (pipelining) is measured, not
assumed to start with the read. What a connection holds beyond a request of
the usual size (a head spanning reads, unsent bytes) is charged to the
connections' share of the memory budget (``mockstore.memory``); when the
share is full, 507 ``memory_budget`` (or, for a client that does not read,
the connection is dropped).

Past ``max_connections`` the connection that has waited longest on its client
(silent, mid-head, or not reading its answer) is closed to make room, and
only when none is waiting is the new one answered 503. Every answer written
here is an Error body and closes the connection; none reaches the app, so none
is journaled or counted against an allowance (no caller is known yet), as a
front proxy's would not be.

Why a protocol subclass and not an ASGI guard: a head that never ends never
reaches the app, and the memory is spent before it would; only the protocol
sees the bytes and the silence. Why not h11's ``h11_max_incomplete_event_size``:
it answers 400 rather than 431, has no timeouts either, and costs throughput.
The per-request cost here is a few attribute checks: timers are armed only for
a request that does not arrive in one read.
"""

from __future__ import annotations

import asyncio
from types import MethodType
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from mockstore.errors import error_body
from mockstore.fast_answer import EXTENSIONS, Fit, probe, send_answer, unbind
from mockstore.limits import HEAD_BYTES, WRITE_CHUNK, Limits
from mockstore.memory import Account, MemoryBudget, format_size
from mockstore.pipelining import HeldFlow, Queue
from mockstore.urls import CONTROL_PREFIX

# The dashboard's event stream, the server's or a tenant's.
EVENTS_PATH = CONTROL_PREFIX + "/events"

# What the connection is waiting on from its client.
IDLE = 0  # no byte of a next request
HEAD = 1  # a request line and headers
BODY = 2  # a request body


# The transport's high-water mark: past it, writing pauses (uvicorn's flow
# control), and the next piece of an answer (the app sends a large one
# WRITE_CHUNK at a time) waits for the client to read.
WRITE_HIGH_WATER = 64 * 1024
# So a connection holds at most this much unsent (and is charged it while it does).
MAX_UNSENT_BYTES = WRITE_HIGH_WATER + WRITE_CHUNK


class _HeadTooLarge(Exception):
    """Raised inside a parser callback to stop parsing a head that is over the limit."""


class _QueueOverBudget(Exception):
    """Raised inside a parser callback: the budget cannot take another pipelined request."""


class _Wait:
    """What one connection is waiting on from its client, and until when.

    Kept in one slotted object rather than as attributes of the protocol:
    uvicorn's protocol already sets 28, and past 30 CPython stops sharing the
    instance dict's keys, which makes every attribute access of every
    request slower (measured: about 2% of a request's instructions).
    """

    __slots__ = (
        "charged",
        "deadline",
        "head_bytes",
        "max_head",
        "midread",
        "phase",
        "queue",
        "read",
        "timed",
        "unsent",
    )

    def __init__(self, max_head: int) -> None:
        self.max_head = max_head
        self.phase = IDLE
        self.timed = IDLE  # the phase the deadline is for
        self.deadline: asyncio.TimerHandle | None = None
        self.head_bytes = 0  # bytes of the current head received in earlier reads
        self.read = 0  # the size of the read being parsed
        # A head that began after another request within one read (pipelining):
        # the read's size says nothing of it, so it is measured.
        self.midread = False
        self.charged = 0  # bytes reserved from the budget for a head spanning reads
        # While the client does not read: the deadline for it to, and the bytes charged.
        self.unsent: asyncio.TimerHandle | None = None
        # Requests pipelined behind the one being answered (made when first needed).
        self.queue: Queue | None = None


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """One connection under ``limits``; build a class per server with ``protocol_class``.

    The parser callbacks overridden here run on every request, so they call
    the base class directly (cheaper than ``super()``) and do a few attribute
    stores; a timer is armed only for a request that does not arrive in one read.
    """

    limits: ClassVar[Limits] = Limits()
    # The share of the server's memory budget that connections draw on (not
    # uvicorn's ``connections``, the set of open connections).
    memory: ClassVar[Account] = MemoryBudget().connections
    # What the installed uvicorn allows (``fast_answer.probe``): the one-message
    # answer offered to the app, and whether a request's ``Connection: close`` is
    # left to uvicorn. Set per server by ``protocol_class``.
    extensions: ClassVar[dict[str, dict[str, Any]]] = {}
    fast: ClassVar[bool] = False
    close_by_hand: ClassVar[bool] = False
    plain: ClassVar[bool] = True  # not fast, or closing by hand: one check a request

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wait = _Wait(self.limits.max_header_bytes)

    # -- connection ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Reading resumes only while the pipelined queue has room (``pipelining``).
        self.flow: HeldFlow = HeldFlow(transport)  # type: ignore[assignment]
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        if len(self.connections) > self.limits.max_connections and not self._make_room():
            self._refuse(503, "server_busy", "every connection is busy; retry shortly")
            return
        # uvicorn arms this timer only after an answer: a client that connects
        # and never sends would otherwise hold the connection for ever.
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def connection_lost(self, exc: Exception | None) -> None:
        wait = self._wait
        if wait.deadline is not None:
            wait.deadline.cancel()
            wait.deadline = None
        if wait.unsent is not None:
            # A client that hung up while its answer waited for it to read: what was
            # charged for the unsent bytes goes back too (it was kept for good, 128 KiB
            # a slow reader, until the connections' share was full).
            wait.unsent.cancel()
            wait.unsent = None
            self.memory.release(MAX_UNSENT_BYTES)
        if wait.charged:
            self.memory.release(wait.charged)
            wait.charged = 0
        if wait.queue is not None:
            wait.queue.close()
            wait.queue = None  # the queue refers to this protocol: no cycle left behind
        super().connection_lost(exc)
        # What would otherwise be freed only by the cyclic garbage collector (on the
        # event loop, for every client that left mid-answer or mid-pipeline): a cycle
        # whose answer never completed keeps its own ``send`` bound to it, and the
        # requests still queued refer to this protocol, which refers to them.
        cycle = self.cycle
        if cycle is not None:
            unbind(cycle)
        pipeline = self.pipeline
        if pipeline:
            for queued, _ in pipeline:
                unbind(queued)
                queued.on_response = _nothing
            pipeline.clear()

    def shutdown(self) -> None:
        """The server is stopping: a request in flight finishes, a stream ends cleanly.

        The dashboard's event stream has no end of its own, so graceful
        shutdown would wait for it and then cancel it with a traceback. It is
        told instead that its client left (it ends as it does when a browser
        tab closes), and the client gets the stream's last chunk and a closed
        connection. Other streams (a HAR being written) finish first.
        """
        cycle = self.cycle
        if (
            cycle is not None
            and cycle.response_started
            and not cycle.response_complete
            and cycle.scope["path"].endswith(EVENTS_PATH)
        ):
            cycle.disconnected = True
            cycle.message_event.set()
            self.transport.write(b"0\r\n\r\n")
            self.transport.close()
            return
        HttpToolsProtocol.shutdown(self)

    def _make_room(self) -> bool:
        """Close the connection that has waited longest on its client; False if none waits.

        Waiting means no request of its is being answered, or its answer waits
        for it to read: silent (its keep-alive timer runs), mid-head or
        trickling a body nobody waits for (its deadline runs), or not reading
        (its write timer runs); how long it has waited is read off that timer,
        so nothing is stamped per request.
        Only past the limit, so the scan over every connection is rare.
        """
        victim, earliest = None, float("inf")
        for other in self.connections:
            if other is self or not isinstance(other, GuardedHttpToolsProtocol):
                continue
            since = other._waiting_since()
            if since is not None and since < earliest and not other.transport.is_closing():
                victim, earliest = other, since
        if victim is None:
            return False
        if victim._wait.unsent is not None:
            victim._drop()  # a slow reader: close would wait for it to read
        else:
            victim.transport.close()
        return True

    def _waiting_since(self) -> float | None:
        """When this connection began waiting on its client, or None if it is not."""
        wait = self._wait
        if wait.unsent is not None:
            # Its answer waits for the client to read: the client is the one holding it up.
            return wait.unsent.when() - self.limits.write_timeout
        if self.cycle is not None and not self.cycle.response_complete:
            return None  # a request of its is being answered
        idle = self.timeout_keep_alive_task
        if idle is not None:
            return idle.when() - self.timeout_keep_alive
        if wait.deadline is None:
            return None
        # Mid-head, or sending a body its answer no longer needs.
        limits = self.limits
        duration = limits.header_timeout if wait.timed == HEAD else limits.body_timeout
        return wait.deadline.when() - duration

    # -- reading ---------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        wait = self._wait
        if len(data) > self.flow.slice_above:
            # More requests than the queue has room for may end in this read
            # (or some are queued already, or bytes are held): a slice at a time.
            (wait.queue or self._queue()).feed(data)
            return
        if wait.phase == IDLE:
            # Any byte starts a head, even the blank lines a parser skips.
            wait.phase = HEAD
            wait.head_bytes = 0
        self._unset_keepalive_if_required()
        wait.read = len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _HeadTooLarge):
                self._refuse_head_too_large()
            elif isinstance(exc.__context__, _QueueOverBudget):
                self._queue().stop("a pipelined request")
            else:
                self.send_400_response(str(exc) or "invalid request")
            return
        phase = wait.phase
        if phase == BODY:
            if not self.cycle.more_body:
                # The request is complete (uvicorn marks its cycle so). A body
                # that ends after the app already answered leaves the mark unset:
                # such a connection is closed once the body deadline passes.
                phase = wait.phase = IDLE
                if self.scope is not self.cycle.scope:
                    # Another head began within this read (a pipelining client)
                    # and is not complete.
                    phase = self._head_began_midread()
                    if phase < 0:
                        return
        elif phase == HEAD:
            # Still in the head that was under way when the read began: the
            # whole read was head.
            wait.head_bytes += len(data)
            if wait.head_bytes > wait.max_head:
                self._refuse_head_too_large()
                return
        if phase != wait.timed:
            self._retime(phase)

    def on_headers_complete(self) -> None:
        wait = self._wait
        # The head so far: the earlier reads, and at most this whole read (it
        # may hold a body, or the next request, too); measured exactly when
        # that passes the limit, or when the head began in the middle of an
        # earlier read (what came before it there was not counted).
        head = wait.head_bytes + wait.read
        if head > wait.max_head or wait.midread:
            wait.midread = False
            head = self._head_size()
            if head > wait.max_head:
                raise _HeadTooLarge
        scope = self.scope
        scope[HEAD_BYTES] = head  # for the journal's byte budget: counted once
        scope["extensions"] = self.extensions
        wait.phase = BODY
        previous = self.cycle
        queued = previous is not None and not previous.response_complete
        if queued and not (wait.queue or self._queue()).admit(head):
            # uvicorn would queue it behind the one being answered: the budget says no.
            raise _QueueOverBudget
        HttpToolsProtocol.on_headers_complete(self)
        cycle = self.cycle
        if queued and cycle is not previous:
            wait.queue.follow(previous, cycle)  # type: ignore[union-attr]
        if cycle is not previous:
            if self.plain:
                self._plain_cycle(cycle)
                return
            # uvicorn made the cycle (of a class it names) and its task has not
            # run yet: the app will be handed this ``send``. An attribute of the
            # instance, not a subclass swapped in: assigning ``__class__`` makes
            # every later attribute read of the cycle slower (CPython 3.11's
            # attribute caches are per class), about 3,000 instructions a request.
            cycle.send = MethodType(send_answer, cycle)  # type: ignore[method-assign]

    def _plain_cycle(self, cycle: Any) -> None:
        """A new cycle where the installed uvicorn does not fit the fast path, or ignores close."""
        if self.close_by_hand and not self.parser.should_keep_alive():
            # This uvicorn keeps the connection after a request that asked to close it.
            cycle.keep_alive = False
        if self.fast:
            cycle.send = MethodType(send_answer, cycle)

    def _queue(self) -> Queue:
        """This connection's queue of pipelined requests, made the first time it is needed."""
        wait = self._wait
        if wait.queue is None:
            wait.queue = Queue(self)
        return wait.queue

    def finish_then_close(self) -> bool:
        """Close the connection after the last request parsed is answered; False if none is due."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return False
        cycle.keep_alive = False
        return True

    def _head_began_midread(self) -> int:
        """A head began after another request within this read: count what came of it.

        The read's size says nothing of where the head began, so the head is
        measured so far (its request line and complete headers; a header
        still being parsed is at most the rest of this read) and its deadline
        starts; once complete, it is measured exactly (``on_headers_complete``).
        Returns the phase, or -1 if the connection was refused.
        """
        wait = self._wait
        wait.phase = HEAD
        wait.midread = True
        wait.head_bytes = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
        if wait.head_bytes > wait.max_head:
            self._refuse_head_too_large()
            return -1
        return HEAD

    def _head_size(self) -> int:
        """The head as sent, give or take optional whitespace: request line and header lines."""
        size = len(self.parser.get_method()) + len(self.url) + len(" HTTP/1.1\r\n\r\n") + 1
        for name, value in self.headers:
            size += len(name) + len(value) + 4
        return size

    # -- deadlines -------------------------------------------------------------

    def _retime(self, phase: int) -> None:
        wait = self._wait
        if wait.deadline is not None:
            wait.deadline.cancel()
            wait.deadline = None
        if wait.charged:
            self.memory.release(wait.charged)
            wait.charged = 0
        wait.timed = phase
        if phase == HEAD:
            # A head spanning reads is held in the parser's buffers until it is
            # complete: charged its most, as it may grow to that.
            if not self.memory.reserve(wait.max_head):
                self.refuse_over_budget("a request head that spans reads")
                return
            wait.charged = wait.max_head
            wait.deadline = self.loop.call_later(self.limits.header_timeout, self._late)
        elif phase == BODY:
            wait.deadline = self.loop.call_later(self.limits.body_timeout, self._late)

    # -- writing ---------------------------------------------------------------

    def pause_writing(self) -> None:
        """The client is not reading as fast as the answer goes out: it has ``write_timeout``.

        The bytes it leaves unsent are charged to the budget meanwhile; when the
        budget has no room for them, the connection is dropped at once.
        """
        wait = self._wait
        if wait.unsent is None and not self.transport.is_closing():
            if not self.memory.reserve(MAX_UNSENT_BYTES):
                self._drop()
                return
            wait.unsent = self.loop.call_later(self.limits.write_timeout, self._drop)
        self.flow.pause_writing()

    def resume_writing(self) -> None:
        wait = self._wait
        if wait.unsent is not None:
            wait.unsent.cancel()
            wait.unsent = None
            self.memory.release(MAX_UNSENT_BYTES)
        self.flow.resume_writing()

    def _drop(self) -> None:
        """Drop a connection whose client does not read: its unsent bytes are discarded."""
        wait = self._wait
        if wait.unsent is not None:
            wait.unsent.cancel()
            wait.unsent = None
            self.memory.release(MAX_UNSENT_BYTES)
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            # The answer being written stops at once (its send returns), and
            # nothing more is written to the dropped transport.
            cycle.disconnected = True
            cycle.message_event.set()
        self.flow.resume_writing()
        # abort, not close: close would keep the unsent bytes until they are read.
        self.transport.abort()

    def _late(self) -> None:
        wait = self._wait
        wait.deadline = None
        if self.transport.is_closing():
            return
        if wait.timed == HEAD:
            seconds = _seconds(self.limits.header_timeout)
            self._refuse(
                408,
                "request_timeout",
                f"the request line and headers did not arrive within {seconds} s",
            )
        elif wait.timed == BODY:
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                # The app is at work on this request: it owns the body's deadline
                # (and answers 408 if it is waiting for the body). Look again later.
                self._retime(BODY)
            else:
                self.transport.close()

    # -- answers written by the connection itself --------------------------------

    def refuse_over_budget(self, what: str) -> None:
        budget = self.memory.root.ceiling
        self._refuse(
            507,
            "memory_budget",
            f"{what} does not fit in the server's memory budget for connections "
            f"({format_size(self.memory.ceiling)} of {format_size(budget)}, --memory-budget) "
            "while other clients hold it; retry shortly",
        )

    def _refuse_head_too_large(self) -> None:
        self._refuse(
            431,
            "headers_too_large",
            f"the request line and headers are over {self._wait.max_head} bytes",
        )

    def send_400_response(self, msg: str) -> None:
        # uvicorn's is text/plain; every refusal of mockstore is an Error body.
        self._refuse(400, "bad_request", f"the request is not valid HTTP/1.1: {msg}")

    def _refuse(self, status: int, code: str, message: str) -> None:
        """Answer with an Error body and close; just close if an answer is under way."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            if cycle.response_started:
                self.transport.close()  # an answer is half written: all we can do
                return
            # The app has not answered: it reads a disconnect, and writes nothing after this.
            cycle.disconnected = True
            cycle.message_event.set()
        body = error_body(code, message, status)
        head = STATUS_LINE[status] + (
            b"content-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n" % len(body)
        )
        self.transport.write(head + body)
        self.transport.close()


def _nothing() -> None:
    """What a request that will never run calls when its answer completes (never)."""


def _seconds(value: float) -> str:
    return f"{value:g}"


def protocol_class(
    limits: Limits, budget: MemoryBudget | None = None, fit: Fit | None = None
) -> type[GuardedHttpToolsProtocol]:
    """The protocol class for one server, with its limits and the budget its connections draw on.

    ``fit`` is what the installed uvicorn allows (``fast_answer.probe``, asked
    once); a test passes its own to force the standard path.
    """
    fit = probe() if fit is None else fit
    attributes: dict[str, Any] = {
        "limits": limits,
        "fast": fit.fast,
        "extensions": EXTENSIONS if fit.fast else {},
        "close_by_hand": not fit.honours_close,
        "plain": not fit.fast or not fit.honours_close,
    }
    if budget is not None:
        attributes["memory"] = budget.connections
    return type("MockstoreHttpProtocol", (GuardedHttpToolsProtocol,), attributes)
