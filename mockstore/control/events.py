"""The dashboard's live feed: journal entries as server-sent events.

The request path knows nothing of it: no hook in ``api.py`` or in the journal.
Each open stream polls the journal a few times a second
(``Journal.select(since=...)``) and sends what was recorded since its last
look, masked exactly as ``GET /__mockstore/requests`` shows it
(``Entry.to_dict``). What a stream may cost is bounded whatever the traffic
and however slow the browser:

* one poll sends at most ``MAX_BATCH`` entries and about ``MAX_BATCH_BYTES``;
  when more arrived since the last poll, the oldest of them are skipped and the
  batch says how many (``skipped``), so a browser keeps up with any rate;
* the next poll starts only once the batch has been handed to the socket, and
  uvicorn makes that wait while a slow reader drains its write buffer (it has a
  high-water mark), so a connection holds at most one batch plus that buffer;
* encoding yields to the event loop every few entries, so API requests are not
  held up behind a batch, and the next poll waits at least ``BUDGET_FACTOR``
  times what the last batch cost, so a stream takes at most about 5% of the
  event loop however slow encoding gets on a busy machine;
* at most ``MAX_STREAMS`` streams are open at once; past that, 503
  ``too_many_streams``.

The wire format (``text/event-stream``)::

    event: hello
    data: {"since": 40, "last_seq": 240, "interval_ms": 250, "max_batch": 250, ...}

    event: requests
    data: {"entries": [...], "skipped": 0, "last_seq": 241}

    : keep-alive
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from mockstore.errors import error_body
from mockstore.journal import Entry, Journal

POLL_SECONDS = 0.25
MAX_BATCH = 250  # entries per poll: up to 1,000 a second reach the browser
MAX_BATCH_BYTES = 512 * 1024
# An entry whose JSON is larger than this (a scenario with a large
# ``journal.body_bytes``) is sent with its bodies cut to BODY_PREVIEW characters;
# ``GET /__mockstore/requests/{seq}`` has it whole.
MAX_ENTRY_BYTES = 64 * 1024
BODY_PREVIEW = 16 * 1024
ENCODE_SLICE = 50  # entries encoded between two yields to the event loop
BUDGET_FACTOR = 20  # a poll waits at least 20 times what the last batch cost: <= 5% of the loop
BACKLOG = 200  # entries already in the journal that a new stream starts with
KEEPALIVE_SECONDS = 15.0
MAX_STREAMS = 8


def encode_entry(entry: Entry) -> bytes:
    """One entry as the control API shows it, as compact ASCII JSON (bodies cut if huge)."""
    shown = entry.to_dict()
    data = _json(shown)
    if len(data) > MAX_ENTRY_BYTES:
        for part in (shown["request"], shown["response"]):
            part["body"] = part["body"][:BODY_PREVIEW]
        shown["stream_truncated"] = True
        data = _json(shown)
    return data


def _json(value: Any) -> bytes:
    # ensure_ascii: no raw newline or lone surrogate can break an event's framing.
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def event(name: str, data: bytes) -> bytes:
    """One server-sent event; ``data`` is JSON, so it holds no newline."""
    return b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


@dataclass(frozen=True, slots=True)
class Batch:
    """One ``requests`` event, the cursor after it, and the event-loop seconds it took to build."""

    event: bytes
    cursor: int
    cost: float


async def next_batch(
    journal: Journal,
    cursor: int,
    max_entries: int = MAX_BATCH,
    max_bytes: int = MAX_BATCH_BYTES,
) -> Batch | None:
    """The ``requests`` event for what the journal recorded after ``cursor``.

    None when nothing was recorded since. When more than ``max_entries`` were,
    only the newest ``max_entries`` are considered and the rest are counted as
    skipped; entries past ``max_bytes`` wait for the next poll.
    """
    newest = journal.last_seq
    if newest <= cursor:
        return None
    started = time.perf_counter()
    entries = journal.select(since=max(cursor, newest - max_entries))
    if not entries:
        # Cleared, evicted, or recorded while the journal was off: nothing to send.
        data = b'{"entries":[],"skipped":%d,"last_seq":%d}' % (newest - cursor, newest)
        return Batch(event("requests", data), newest, time.perf_counter() - started)
    parts: list[bytes] = []
    size = 0
    cost = 0.0
    for index, entry in enumerate(entries):
        if index and index % ENCODE_SLICE == 0:
            # Let waiting API requests run; the time they take is not the batch's.
            cost += time.perf_counter() - started
            await asyncio.sleep(0)
            started = time.perf_counter()
        encoded = encode_entry(entry)
        if parts and size + len(encoded) > max_bytes:
            break
        parts.append(encoded)
        size += len(encoded) + 1
    last = entries[len(parts) - 1].seq
    skipped = entries[0].seq - cursor - 1
    data = b'{"entries":[%b],"skipped":%d,"last_seq":%d}' % (b",".join(parts), skipped, last)
    cost += time.perf_counter() - started
    return Batch(event("requests", data), last, cost)


class StreamSlots:
    """How many streams are open, against the most allowed at once."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.limit = limit
        self.open = 0

    @property
    def full(self) -> bool:
        return self.open >= self.limit


class JournalStream(StreamingResponse):
    """``GET /__mockstore/events``: the journal, live, for as long as the client listens.

    Starlette ends the response (cancelling the polling loop) as soon as the
    client disconnects; the slot is given back whatever ended it.
    """

    def __init__(self, journal: Journal, slots: StreamSlots, since: int | None) -> None:
        self.journal = journal
        self.slots = slots
        self.since = since
        super().__init__(
            self._events(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.slots.full:
            await _too_many(self.slots.limit)(scope, receive, send)
            return
        self.slots.open += 1
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slots.open -= 1

    def _start(self) -> int:
        """The cursor to start from: the one asked for, or the last BACKLOG entries.

        A ``since`` beyond the journal's last entry (the page saw a server that
        has since restarted) starts over with the backlog.
        """
        newest = self.journal.last_seq
        if self.since is None or not 0 <= self.since <= newest:
            return max(0, newest - BACKLOG)
        return self.since

    async def _events(self) -> Any:
        journal = self.journal
        cursor = self._start()
        hello = {
            "since": cursor,
            "last_seq": journal.last_seq,
            "interval_ms": int(POLL_SECONDS * 1000),
            "max_batch": MAX_BATCH,
            "max_batch_bytes": MAX_BATCH_BYTES,
            "streams": self.slots.open,
            "max_streams": self.slots.limit,
            "journal": {"enabled": journal.enabled, "size": journal.size},
        }
        yield event("hello", _json(hello))
        quiet = 0.0
        wait = POLL_SECONDS
        while True:
            await asyncio.sleep(wait)
            batch = await next_batch(journal, cursor)
            if batch is None:
                wait = POLL_SECONDS
                quiet += wait
                if quiet >= KEEPALIVE_SECONDS:
                    quiet = 0.0
                    yield b": keep-alive\n\n"
                continue
            quiet = 0.0
            # The budget: however slow encoding gets, the stream keeps to a
            # small share of the event loop, and the API keeps the rest.
            wait = max(POLL_SECONDS, batch.cost * BUDGET_FACTOR)
            cursor = batch.cursor
            yield batch.event


def _too_many(limit: int) -> Response:
    message = (
        f"at most {limit} event streams may be open at once; "
        "close a dashboard tab (or another reader of /__mockstore/events) and retry"
    )
    return Response(
        error_body("too_many_streams", message, 503),
        status_code=503,
        media_type="application/json",
        headers={"retry-after": "5"},
    )
