"""Requests a pipelining client sends ahead of its answers: at most a few, each charged.

HTTP/1.1 lets a client send requests before it has read the answers to the
earlier ones; uvicorn answers them in order and queues the rest (its
protocol's ``pipeline``), each with its scope, headers and cycle (about 2.6 KB
besides its head, measured). It pauses reading when it queues one, but
resumes after every answer while the queue is not empty, and parses the
whole of every read (up to 256 KiB, thousands of small requests) at once: one
connection writing small requests it never reads the answers to held 1.4 GiB.

So, as a front proxy does, a connection here has at most ``MAX_QUEUED``
requests waiting behind the one being answered:

* every request queued is charged to the connections' share of the memory
  budget (``QUEUED_REQUEST_BYTES``, its head, its headers, and what of its
  body may arrive before it runs) before it is queued, and given back when it
  runs;
* a read is parsed a slice at a time, each slice ending before more heads
  than the queue has room for could end in it (every head holds two line
  feeds, so a slice ends at the right line feed: a cheap upper bound that
  needs no parsing);
* once the queue is full, what is left of the read is held (charged) and
  reading pauses; it resumes, the held bytes first, when an answer makes
  room (``HeldFlow``, which uvicorn's own calls to resume go through).

uvicorn tells only its latest cycle (the last request parsed) that the client
left; with requests queued, the one being answered is an earlier one, which
then wrote to a closed transport (uvloop raises: a traceback for every
pipelining client that hung up while its answer waited for it to read). So
the queue also keeps the connection's unanswered cycles, and tells each of
them when the connection is lost (``close``).

When the budget cannot take a queued request or the held bytes, the
connection reads nothing more: the requests already queued are answered, the
last of them with ``Connection: close``, and the rest (unanswered, as a client
must expect of a pipelined request) is dropped; with nothing under way, it is
answered 507 at once. The normal path (a read holding one request) costs one
length comparison.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Protocol

from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, FlowControl

from mockstore.memory import Account

# Requests that may wait behind the one being answered, per connection.
MAX_QUEUED = 32
# What a queued request holds besides its head: its scope, cycle, event and
# their dicts (tracemalloc: 2.6 KB with a 90-byte head).
QUEUED_REQUEST_BYTES = 3 * 1024
# Each header besides its text: a tuple and two bytes objects.
HEADER_LINE_BYTES = 128
# The most one read hands the protocol (asyncio's and uvloop's read size).
READ_BYTES = 256 * 1024
# What a queued request's body may gather before the request runs: uvicorn
# pauses reading past its high-water mark, after the read that passed it.
QUEUED_BODY_BYTES = HIGH_WATER_LIMIT + READ_BYTES
# The shortest request ("GET / HTTP/1.1" and a blank line, bare line feeds).
MIN_REQUEST_BYTES = 16
# With nothing queued, a read longer than this may hold more requests than the
# queue has room for, and is parsed a slice at a time; a shorter one (almost
# every read) is parsed whole, as uvicorn does.
SLICE_ABOVE = MIN_REQUEST_BYTES * MAX_QUEUED
# While a read is being sliced: its slices are parsed whole.
_NEVER = 2**62


class Connection(Protocol):
    """What the queue needs of the connection's protocol (``protocol.py``)."""

    memory: Account
    pipeline: deque
    flow: HeldFlow
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    headers: list[tuple[bytes, bytes]]

    def data_received(self, data: bytes) -> None: ...

    def refuse_over_budget(self, what: str) -> None: ...

    def finish_then_close(self) -> bool: ...


class HeldFlow(FlowControl):
    """uvicorn's flow control, whose ``resume_reading`` asks the queue while it holds reading.

    ``slice_above``: the protocol parses a read longer than this a slice at a
    time (``Queue.feed``): ``SLICE_ABOVE`` with nothing queued, 0 while requests
    are queued or bytes held (every read then goes through the queue).
    """

    def __init__(self, transport: asyncio.Transport) -> None:
        super().__init__(transport)
        self.holder: Queue | None = None
        self.slice_above = SLICE_ABOVE

    def resume_reading(self) -> None:
        holder = self.holder
        if holder is not None:
            # Requests wait (or bytes are held): the queue decides, and settles
            # the charges of those that left it.
            holder.wanted()
            return
        if self.read_paused:
            self.read_paused = False
            self._transport.resume_reading()


class Queue:
    """One connection's pipelined requests: what they are charged, and the bytes held back."""

    __slots__ = (
        "charges",
        "connection",
        "cycles",
        "held",
        "held_at",
        "slicing",
        "stopped",
        "waking",
    )

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.charges: deque[int] = deque()  # one per queued request, in uvicorn's order
        # The connection's cycles since a request was queued, oldest first, until answered.
        self.cycles: deque[Any] = deque()
        self.held: bytes | None = None  # what was read and not yet parsed
        self.held_at = 0
        self.slicing = False  # a slice is being parsed: ``data_received`` must not slice it
        self.stopped = False  # the budget said no: nothing more is read
        self.waking = False  # a look at the queue is scheduled

    # -- queueing -------------------------------------------------------------------

    def admit(self, head: int) -> bool:
        """Charge a request about to be queued (``head`` bytes of head); False if over budget."""
        connection = self.connection
        cost = QUEUED_REQUEST_BYTES + head
        for name, value in connection.headers:
            cost += HEADER_LINE_BYTES
            if (name == b"content-length" and value.strip() not in (b"", b"0")) or (
                name == b"transfer-encoding"
            ):
                cost += QUEUED_BODY_BYTES
        if not connection.memory.reserve(cost):
            return False
        self.charges.appendleft(cost)
        self._hold_reading()
        self._slice_from_now()
        return True

    def follow(self, previous: Any, cycle: Any) -> None:
        """``cycle`` was queued behind ``previous``: both are told if the client leaves."""
        cycles = self.cycles
        self._forget_answered()
        if not cycles or cycles[-1] is not previous:
            cycles.append(previous)
        cycles.append(cycle)

    def _forget_answered(self) -> None:
        cycles = self.cycles
        while cycles and cycles[0].response_complete:
            cycles.popleft()

    def _settle(self) -> None:
        """Give back the charges of the requests that left uvicorn's queue (they run)."""
        charges = self.charges
        waiting = len(self.connection.pipeline)
        memory = self.connection.memory
        while len(charges) > waiting:
            memory.release(charges.pop())
        self._forget_answered()

    # -- reading ----------------------------------------------------------------------

    def feed(self, data: bytes, start: int = 0) -> None:
        """Parse ``data[start:]`` a slice at a time; hold the rest once the queue is full."""
        connection = self.connection
        if self.held is not None:
            # Read while held (a transport may deliver one more read): after what is held.
            held, at = self._take_held()
            data, start = held[at:] + bytes(memoryview(data)[start:]), 0
        queue = connection.pipeline
        transport = connection.transport
        view = memoryview(data)
        size = len(data)
        flow = connection.flow
        self.slicing = True
        flow.slice_above = _NEVER
        try:
            while start < size:
                room = MAX_QUEUED - len(queue)
                if room <= 0:
                    self._hold(data, start)
                    return
                # The slice ends at the line feed past which more heads than there is
                # room for could end, or with the read: only the slice is scanned (a
                # count over the whole rest, slice after slice, scanned a 256 KiB read
                # a hundred times over, on the event loop).
                end = start
                for _ in range(2 * room):
                    end = data.find(b"\n", end) + 1
                    if not end:
                        end = size
                        break
                connection.data_received(view[start:end])  # type: ignore[arg-type]
                if self.stopped or transport.is_closing():
                    return
                start = end
        finally:
            self.slicing = False
            flow.slice_above = 0 if queue or self.held is not None else SLICE_ABOVE

    def _hold(self, data: bytes, start: int) -> None:
        if not self.connection.memory.reserve(len(data)):
            self.stop("the rest of a pipelined read")
            return
        self.held, self.held_at = data, start
        self._hold_reading()
        self._slice_from_now()

    def _take_held(self) -> tuple[bytes, int]:
        """What is held and where its unparsed rest begins: not copied (it may be 256 KiB)."""
        held, at = self.held, self.held_at
        assert held is not None
        self.held = None
        self.connection.memory.release(len(held))
        return held, at

    def _hold_reading(self) -> None:
        flow = self.connection.flow
        flow.holder = self
        flow.pause_reading()

    def _slice_from_now(self) -> None:
        """Every read goes through ``feed`` while requests wait or bytes are held."""
        if not self.slicing:
            self.connection.flow.slice_above = 0

    def wanted(self) -> None:
        """uvicorn would resume reading (an answer went out, or the app reads): look soon.

        Not at once: uvicorn calls this before it takes the next request off
        its queue.
        """
        if not self.waking:
            self.waking = True
            self.connection.loop.call_soon(self._wake)

    def _wake(self) -> None:
        self.waking = False
        connection = self.connection
        if connection.transport.is_closing():
            return
        self._settle()
        if self.stopped or len(connection.pipeline) >= MAX_QUEUED:
            return  # the next answer looks again
        if self.held is not None:
            self.feed(*self._take_held())
            if self.held is not None or self.stopped or connection.transport.is_closing():
                return
        flow = connection.flow
        if not connection.pipeline:
            flow.holder = None  # nothing queued: uvicorn's own flow control again
            flow.slice_above = SLICE_ABOVE
        if flow.read_paused:
            flow.read_paused = False
            connection.transport.resume_reading()

    def stop(self, what: str) -> None:
        """The budget has no room for ``what``: answer what is queued, then close; read no more."""
        self.stopped = True
        self._hold_reading()
        if not self.connection.finish_then_close():
            self.connection.refuse_over_budget(what)

    def close(self) -> None:
        """The connection is gone: tell every request not yet answered, give back every charge.

        The one being answered may wait for the client to read (its writing
        paused): told, it ends instead of writing to the closed transport.
        """
        for cycle in self.cycles:
            if not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()
        self.cycles.clear()
        memory = self.connection.memory
        while self.charges:
            memory.release(self.charges.pop())
        if self.held is not None:
            memory.release(len(self.held))
            self.held = None
        self.connection.flow.holder = None
