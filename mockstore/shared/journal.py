"""One mock, one journal: every process's answers in one stream, read through any process.

With a shared state each process records what it answers as in memory (the
request path is unchanged), but into an *outbox* (``Runtime.outbox``) rather
than the journal a control call reads. ``JournalSharing`` ships the outbox to
one Redis stream for the whole mock (``streams``): the script that appends a
batch hands out its sequence numbers, so the stream's order is the mock's
journal order, and every process's journal (``Runtime.journal``) is a copy of
the stream, its own answers included: the same entries under the same
sequence numbers through every process, so ``since=``, a reset's
``journal_seq`` and ``run`` numbers (``SharedState``) mean the same whichever
process is asked.

Read your writes: a journal read (the list, the HAR, verify, the report, the
dashboard, a reset's ``journal_seq``) first runs a *barrier* (``barrier``): the
reader ships what it has, posts a barrier on the sync stream, and waits until
every live process (each says it is there every ``BEAT`` seconds, and is
registered before it serves its first request) has shipped what it had and
acknowledged, then reads the stream to its end. So a read through any process
holds every answer any process gave before the read began, a process started a
moment earlier included. A process that does not acknowledge within
``BARRIER_WAIT`` (killed, its loop stalled) is waited for no longer: what it
had not shipped comes later, and the log says so.

Off the request path each process waits on the sync stream: a batch shipped by
any process is read, a barrier is met (ship, acknowledge), and what it recorded
is shipped every ``INTERVAL`` at most. The stream keeps ``STREAM_ENTRIES``
entries, whatever the batches' sizes; a process that starts the mock reads it
from the mock's start (``SharedState.journal_from``), so a worker started again
in place of one that died shows the same journal as the others.

A batch is checked record by record as it is read (``records``); a bad one is
skipped with a warning and counted as dropped, never raised. A clear
(``DELETE /__mockstore/requests``) runs a barrier, then raises the *clear mark*
to the last sequence number read: every process forgets every entry up to it
(applied each time it reads), so from the moment the clear is answered no
process shows anything answered before it, and everything after it is there.
A mark beyond every number handed out is not one a clear set: it is ignored
(and replaced by the next clear), so a bad value cannot empty journals for good.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import math
import os
import secrets
import time
from typing import Any

from mockstore.journal import Entry
from mockstore.shared import records, streams
from mockstore.shared.backend import StateUnavailable
from mockstore.shared.deadline import bounded
from mockstore.state import Runtime

log = logging.getLogger("mockstore.shared")
SEQ = Entry._fields.index("seq")
WALL = Entry._fields.index("wall")
ARRIVED_AFTER = Entry._fields.index("arrived_after")

# How long entries wait before they are shipped (when no read asks for them first).
INTERVAL = 0.05
# How often a process says it is there, and how recent that must be to be waited for.
BEAT = 0.5
LIVE_MS = 2000
# How long a read waits for the other processes to ship what they have.
BARRIER_WAIT = 2.0
# Entries the stream keeps (then the oldest go), and messages the sync stream keeps.
STREAM_ENTRIES = 10_000
SYNC_MESSAGES = 10_000
# The streams outlive the last process that wrote them this long (then Redis lets go).
STREAM_TTL = 3600
# Messages read at a time.
READ_COUNT = 100
# Own batches kept until they are read back in order, and sequence numbers remembered
# to resolve what a later answer had seen (``arrived_after``).
_KEPT_NUMBERS = 4096
# At most one warning a minute about what was read back.
_WARN_EVERY = 60.0


class JournalSharing:
    """Ships this process's answers to the mock's stream and keeps its journal a copy of it."""

    def __init__(self, shared: Any, runtime: Runtime, interval: float = INTERVAL) -> None:
        self.shared = shared
        self.runtime = runtime
        self.interval = interval
        runtime.open_outbox()
        self.shipped = 0  # the outbox's entries up to it are shipped
        self.position: int | None = None  # the last sequence number read (None: not yet)
        self.cleared = 0  # the clear mark in force here
        self._origin = ""
        self._pid = 0
        self._own: dict[int, list[tuple[Any, ...]]] = {}  # last seq -> the batch, numbered
        self._numbers: dict[int, int] = {}  # outbox seq -> the mock's, recently shipped
        self._shipping: asyncio.Lock | None = None
        self._lock_loop: Any = None
        # When each kind of warning was last given (a kind never given is given at once,
        # however early): one kind repeated must not hide another for a minute.
        self._warned: dict[str, float] = {}
        shared.journal = self  # the control API's reads and clears go through it

    # -- who this process is ------------------------------------------------------

    @property
    def origin(self) -> str:
        """This process's id in the streams: drawn in the process that uses it (a worker
        forked from the process that built the app draws its own)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._origin = secrets.token_hex(8)
        return self._origin

    def _key(self, name: str) -> str:
        return self.shared.prefix + name

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._shipping is None or self._lock_loop is not loop:
            self._shipping, self._lock_loop = asyncio.Lock(), loop
        return self._shipping

    async def _script(self, source: str, keys: list[str], args: list[Any]) -> Any:
        client = self.shared.client()
        try:
            return await bounded(client.eval(source, len(keys), *keys, *args))
        except StateUnavailable:
            raise
        except Exception as exc:
            raise StateUnavailable(f"the shared state at {self.shared.url} failed: {exc}") from exc

    # -- the background task ---------------------------------------------------------

    async def register(self) -> None:
        """Say this process is there, before it serves (a barrier then waits for it)."""
        await self._presence(barrier=False)

    async def close(self) -> None:
        """On stopping: ship what is left, and say this process is gone (no barrier waits)."""
        try:
            await self.ship()
        except Exception as exc:  # Redis away: what was not shipped is lost with the process
            log.debug("the journal's last entries were not shipped: %s", exc)
        try:
            await self.shared.client().zrem(self._key(streams.LIVE), self.origin)
        except Exception as exc:
            log.debug("could not say this process is gone: %s", exc)

    async def _presence(self, barrier: bool) -> list[bytes]:
        keys = [self._key(streams.SYNC), self._key(streams.LIVE)]
        args = [self.origin, LIVE_MS, SYNC_MESSAGES, STREAM_TTL, "1" if barrier else ""]
        return await self._script(streams.PRESENCE, keys, args)

    async def run(self) -> None:
        """Until cancelled (the server stops): wait on the sync stream, read what others
        shipped, meet barriers, ship every ``interval`` and say this process is there."""
        position = None
        beat = 0.0
        while True:
            try:
                if position is None:
                    await self.register()
                    beat = time.monotonic()
                    position = await self._sync_top()
                unshipped = self.runtime.outbox.last_seq > self.shipped
                wait = self.interval if unshipped else BEAT
                position, shipped, barrier = await self._wait(position, wait)
                if shipped:
                    await self.take_in()
                if barrier or unshipped:
                    await self.ship(ack=barrier)
                    beat = time.monotonic()
                if time.monotonic() - beat >= BEAT:
                    await self.register()
                    beat = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the API says so; the journal waits
                log.debug("journal sharing paused: %s", exc, exc_info=True)
                position = None
                await asyncio.sleep(self.interval)

    async def _sync_top(self) -> str:
        newest = await bounded(self.shared.client().xrevrange(self._key(streams.SYNC), count=1))
        return _stream_id(newest[0][0]) if newest else "0-0"

    async def _wait(self, position: str, seconds: float) -> tuple[str, bool, str]:
        """Wait on the sync stream: (where it was read to, a batch was shipped, the
        latest barrier another process posted or '')."""
        key = self._key(streams.SYNC)
        block = max(1, int(seconds * 1000))
        replies = await self.shared.client().xread({key: position}, count=1000, block=block)
        shipped, barrier = False, ""
        for _, messages in replies or ():
            for message_id, fields in messages:
                position = _stream_id(message_id)
                kind = fields.get(b"k")
                if kind == b"n":
                    shipped = True
                elif kind == b"b" and fields.get(b"o") != self.origin.encode():
                    barrier = position
        return position, shipped, barrier

    # -- shipping ----------------------------------------------------------------------

    async def ship(self, ack: str = "") -> int:
        """Send what this process recorded since the last call; how many entries.

        ``ack``: the barrier this ship meets (said once it is shipped, even if nothing was).
        """
        async with self._lock():
            outbox = self.runtime.outbox
            pending = outbox.records_after(self.shipped)
            if getattr(self.shared, "gone", False):
                pending = []  # a deleted tenant's: its keys are being swept
            own = [record for record in pending if record[WALL] is not None]
            sent = 0
            for batch in _batches(own):
                await self._ship_batch(batch, ack if sent + len(batch) == len(own) else "")
                sent += len(batch)
                # Shipped: the outbox lets them go (what it holds is given back).
                self.shipped = batch[-1][SEQ]
                outbox.discard_before(float("-inf"), through=self.shipped)
            if pending:
                self.shipped = max(self.shipped, pending[-1][SEQ])
                outbox.discard_before(float("-inf"), through=self.shipped)
            if not own and ack:
                await self._ship_batch([], ack)
            return sent

    async def _ship_batch(self, batch: list[tuple[Any, ...]], ack: str) -> None:
        numbers = self._numbers
        local = [record[SEQ] for record in batch]
        wire = []
        for index, record in enumerate(batch):
            # What had been answered when it arrived, as this process's outbox numbered
            # it: in the mock's numbers if shipped before, the index of the last answer
            # of this batch before it (the reader knows the batch's numbers), else unknown.
            seen = record[ARRIVED_AFTER]
            if seen > 0:
                before = bisect.bisect_right(local, seen) - 1
                if seen in numbers:
                    seen = numbers[seen]
                elif 0 <= before < index:
                    seen = -2 - before
                else:
                    seen = -1
            wire.append((*record[:ARRIVED_AFTER], seen, *record[ARRIVED_AFTER + 1 :]))
        payload = records.encode(wire) if wire else b""
        keys = [self._key(k) for k in (streams.SEQ, streams.STREAM, streams.SYNC, streams.LIVE)]
        floor = max(self.position or 0, self.runtime.journal.last_seq)
        args = [self.origin, floor, STREAM_TTL, STREAM_ENTRIES, SYNC_MESSAGES, ack]
        last = int(await self._script(streams.SHIP, keys, [*args, len(wire), payload]))
        if not wire:
            return
        first = last - len(wire) + 1
        numbered = [_numbered(record, first + index, first) for index, record in enumerate(wire)]
        self._own[last] = numbered
        for index, record in enumerate(batch):
            numbers[record[SEQ]] = first + index
        if len(numbers) > _KEPT_NUMBERS:
            for old in list(numbers)[: len(numbers) // 2]:
                del numbers[old]

    # -- reading -----------------------------------------------------------------------

    async def take_in(self) -> int:
        """Append what the stream holds after this journal's position; how many entries."""
        # One conversation with the streams at a time: the sync loop and a control read
        # taking in at once would both read the batches after one position, and the
        # second would find them already merged (or its own batch not yet noted as shipped).
        async with self._lock():
            return await self._take_in()

    async def _take_in(self) -> int:
        journal = self.runtime.journal
        if self.position is None:
            self.position = max(int(getattr(self.shared, "journal_from", 0) or 0), 0)
            journal.skip_to(self.position, forgotten=max(0, self.position - journal.last_seq))
        taken = 0
        while True:
            keys = [self._key(k) for k in (streams.STREAM, streams.CLEARED, streams.SEQ)]
            args = [self.position + 1, READ_COUNT, records.MAX_PAYLOAD, self.origin]
            messages, mark, counter = await self._script(streams.READ, keys, args)
            self._apply_mark(mark, counter)
            for message_id, origin, payload, size in messages:
                taken += await self._merge(message_id, origin, payload, size)
            for kept in [last for last in self._own if last <= self.position]:
                del self._own[kept]  # read back already, or gone from the stream
            if len(messages) < READ_COUNT:
                return taken

    async def _merge(self, message_id: bytes, origin: bytes, payload: bytes, size: int) -> int:
        last = _last_seq(message_id)
        if last is None or last <= (self.position or 0):
            self._warn(
                "batch id", f"a journal batch under an id no process writes ({message_id!r})"
            )
            return 0
        rows: list[Any] | None
        if origin == self.origin.encode() and not payload:
            rows = self._own.pop(last, None)
            if rows is None:  # shipped, but its answer was lost on the way: read it whole
                keys = [self._key(k) for k in (streams.STREAM, streams.CLEARED, streams.SEQ)]
                found, _, _ = await self._script(
                    streams.READ, keys, [last, 1, records.MAX_PAYLOAD, ""]
                )
                rows = _numbered_rows(found[0][2], last) if found else None
        elif not payload and size:
            self._warn(
                "batch size",
                f"a journal batch of {size} bytes, over {records.MAX_PAYLOAD}: skipped",
            )
            rows = None
        else:
            rows = _numbered_rows(payload, last)
        journal = self.runtime.journal
        taken = forgotten = 0
        bad = 0
        for record in rows or ():
            if record is None:
                bad += 1
                continue
            seq = record[SEQ]
            if seq <= (self.position or 0):
                continue
            if seq <= self.cleared:
                forgotten += 1
                continue
            journal.add(record)
            taken += 1
        if rows is None or bad:
            self._warn(
                "entries",
                f"{bad or 'a batch of'} journal entries read back were not valid: skipped",
            )
        journal.skip_to(last, forgotten)
        self.position = max(self.position or 0, last)
        return taken

    def _apply_mark(self, mark: bytes, counter: bytes) -> None:
        """Forget what the latest clear went through, if the mark is one a clear set."""
        through = _whole(mark)
        handed_out = _whole(counter)
        if through is None or handed_out is None or through > handed_out:
            if mark:
                self._warn("clear mark", f"a clear mark {mark[:40]!r} no clear set: ignored")
            return
        self.apply(through)

    def apply(self, through: int) -> None:
        """Forget every entry up to sequence number ``through`` (a clear's), if newer."""
        if through > self.cleared:
            self.cleared = through
            self.runtime.journal.clear(before=float("-inf"), through=through)

    def _warn(self, kind: str, what: str) -> None:
        now = time.monotonic()
        if now - self._warned.get(kind, -math.inf) >= _WARN_EVERY:
            self._warned[kind] = now
            log.warning("the shared state at %s: %s", self.shared.url, what)

    # -- what the control API calls ------------------------------------------------------

    async def barrier(self) -> None:
        """Make this journal hold every answer any process gave before now (read your writes).

        ``StateUnavailable`` when Redis cannot be reached: the journal stays as
        this process last read it.
        """
        await self.ship()
        reply = await self._presence(barrier=True)
        barrier = _stream_id(reply[0])
        me = self.origin.encode()
        waiting = {origin for origin in reply[1:] if origin != me and _is_origin(origin)}
        deadline = time.monotonic() + BARRIER_WAIT
        position = barrier
        key = self._key(streams.SYNC)
        client = self.shared.client()
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                names = ", ".join(sorted(origin.decode() for origin in waiting))
                self._warn("barrier", f"process(es) {names} did not ship within {BARRIER_WAIT:g} s")
                break
            replies = await bounded(
                client.xread({key: position}, count=1000, block=max(1, int(left * 1000)))
            )
            for _, messages in replies or ():
                for message_id, fields in messages:
                    position = _stream_id(message_id)
                    met = fields.get(b"b")
                    if fields.get(b"k") == b"a" and met and _after(met, barrier):
                        waiting.discard(fields.get(b"o"))
        await self.take_in()

    async def clear(self) -> None:
        """Clear the journal of every process: everything read up to now goes, everywhere.

        ``StateUnavailable`` when Redis cannot be reached: nothing is cleared anywhere.
        """
        await self.barrier()
        keys = [self._key(streams.CLEARED), self._key(streams.SEQ)]
        mark = await self._script(streams.CLEAR, keys, [self.position or 0])
        self.apply(_whole(mark) or 0)


def _batches(pending: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    """``pending`` cut into batches of ``records.BATCH_RECORDS`` and about ``BATCH_BYTES``."""
    batches: list[list[tuple[Any, ...]]] = []
    batch: list[tuple[Any, ...]] = []
    size = 0
    for record in pending:
        cost = len(record[8]) + len(record[15]) + 512
        if batch and (len(batch) >= records.BATCH_RECORDS or size + cost > records.BATCH_BYTES):
            batches.append(batch)
            batch, size = [], 0
        batch.append(record)
        size += cost
    if batch:
        batches.append(batch)
    return batches


def _numbered(record: tuple[Any, ...], seq: int, first: int) -> tuple[Any, ...]:
    """A record under the mock's sequence number, what it had seen resolved."""
    seen = record[ARRIVED_AFTER]
    if seen <= -2:
        index = -2 - seen
        seen = first + index if first + index < seq else -1
    return (seq, *record[1:ARRIVED_AFTER], seen, *record[ARRIVED_AFTER + 1 :])


def _numbered_rows(payload: bytes, last: int) -> list[Any] | None:
    """A batch's records numbered (None for each one not valid), or None if it is not one."""
    rows = records.decode(payload)
    if rows is None:
        return None
    first = last - len(rows) + 1
    return [
        None if row is None else _numbered(row, first + index, first)
        for index, row in enumerate(rows)
    ]


def _stream_id(value: Any) -> str:
    text = value.decode() if isinstance(value, bytes) else str(value)
    return text


def _after(met: bytes, barrier: str) -> bool:
    """Whether stream id ``met`` is at or after ``barrier``'s."""
    try:
        a = tuple(int(part) for part in met.decode().split("-"))
        b = tuple(int(part) for part in barrier.split("-"))
    except ValueError:
        return False
    return len(a) == 2 and a >= b


def _last_seq(message_id: bytes) -> int | None:
    """The last sequence number of the batch under a stream id (``<last>-0``)."""
    return _whole(message_id.partition(b"-")[0]) or None


def _whole(value: Any) -> int | None:
    """A whole number within 2**53 read back from Redis, or None."""
    if isinstance(value, bytes):
        value = value.decode("ascii", errors="replace")
    if isinstance(value, str):
        if not value.isdigit() or len(value) > 16:
            return None
        value = int(value)
    if isinstance(value, int) and 0 <= value <= records.MAX_NUMBER:
        return value
    return None


def _is_origin(origin: bytes) -> bool:
    return len(origin) == 16 and all(c in b"0123456789abcdef" for c in origin)
