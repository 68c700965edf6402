"""Every process's journal holds every process's traffic: exchanges shared through Redis.

With a shared state each process journals what it answers, as in memory (on the
request path nothing changes). Off the request path, ``JournalSharing`` ships
the entries its process recorded to a Redis stream (``mockstore:journal``) a
batch at a time, and appends the entries the other processes shipped to its
own journal. Each process has a stream of its own (``mockstore:journal:<origin>``,
named in the set ``mockstore:journals``), so none reads its own entries back; a
batch is the journal's records as it stores them (``Journal.records_after``:
header blocks not yet parsed; the process that takes them in reads each with
``as_entry``) in ``marshal``'s format (fast, and data only). So
the report, ``verify``, the HAR, replay and the dashboard of any process cover
the traffic of all of them, a moment later (one ``interval``), within the
journal's own bounds in entries and bytes, as in memory. A process takes in
what the others answer from its own start on; one that starts later is read
from its first entry.

An entry from another process takes the next sequence number and the current
run of the journal it joins; what was answered when it arrived (``arrived_after``)
is only known to its own process, so it says -1 (not known) here.

A clear (``DELETE /__mockstore/requests``) is the journal's as every process
shows it. It is an instant of the wall clock, the *clear mark*: the clearing
process reads its clock and raises the mark in Redis to it (``ZADD GT``: the
mark only ever moves forward, whatever order two clears land in), and from
then on an entry belongs to the journal only if its request came at or after
the mark (``Entry.wall``). Each process applies the mark before it merges what
the others shipped (a batch shipped just before the clear and read just after
it brings nothing back), again each time it looks (an answer to a request
that came before the clear but ended after it goes too), and before any
control call answers (``sync``), so the list, the report, verify, the HAR and
the dashboard of any process show none of what came before the moment the
clear is answered, and all that came after, from every process. Entries not
shipped yet at the clear need nothing sent: their process forgets them when
it sees the mark. The processes read one wall clock on one machine (workers);
replicas on several machines need their clocks kept in step (NTP), as the
shared clock does, and a request within their skew of a clear may fall on
either side of it.
"""

from __future__ import annotations

import asyncio
import logging
import marshal
import secrets
from typing import Any

from mockstore.journal import Entry, as_entry
from mockstore.shared.backend import StateUnavailable
from mockstore.state import Runtime

log = logging.getLogger("mockstore.shared")
SEQ = Entry._fields.index("seq")
WALL = Entry._fields.index("wall")

# After the state's prefix (``mockstore:``, or a tenant's):
STREAMS = "journals"  # set: the processes that ship entries
STREAM = "journal:"  # + a process's origin: a stream of its batches of entries
# How long entries wait before they are shipped, and the longest a read waits for others'.
INTERVAL = 0.05
# A process's stream keeps about this many batches (of at most _BATCH entries): a
# second or more of traffic at full load; a reader polls every INTERVAL. Bounded so
# the journal never crowds the state out of Redis's memory.
STREAM_BATCHES = 20
_BATCH = 500
# A stream outlives its process this long (then Redis lets it go).
STREAM_TTL = 3600
# How often the list of the other processes is read again.
PEERS_EVERY = 1.0
# The clear mark: a sorted set of one member (``MARK``) whose score is the instant of
# the latest clear; a sorted set because ZADD GT raises it atomically, never lowers it.
CLEARED = "journals:cleared"  # after the state's prefix, as the streams
MARK = "at"


class JournalSharing:
    """Ships this process's journal entries to Redis and takes in the other processes'."""

    def __init__(
        self, shared: Any, runtime: Runtime, interval: float = INTERVAL, from_start: bool = False
    ) -> None:
        self.shared = shared
        self.runtime = runtime
        self.interval = interval
        self.origin = secrets.token_hex(8)
        self.shipped = runtime.journal.last_seq  # entries after it are to be shipped
        self.taken_in: set[int] = set()  # sequence numbers of the others' entries
        self.peers: dict[str, str] = {}  # another process's stream -> the last id read
        self._peers_read = -PEERS_EVERY
        # ``from_start``: the others' entries from before this process started are
        # its traffic too (a tenant this process joins after others served it).
        self._started = from_start
        self.behind = False  # the last read left batches waiting
        # The clear mark in force here, and the last entry looked at against it.
        self.cleared = 0.0
        self._checked = runtime.journal.last_seq
        shared.journal = self  # the control API's clears and reads go through it

    @property
    def stream(self) -> str:
        """This process's stream (read each time: a tenant made again has a new prefix)."""
        return self.shared.prefix + STREAM + self.origin

    async def run(self) -> None:
        """Until cancelled (the server stops): take in, ship, wait ``interval``, and again.

        It waits even when there was something to take in (unless more is waiting
        than one read takes): a batch an ``interval``, at most, so the batches a
        stream keeps (``STREAM_BATCHES``) span a second or more, whatever the load.
        """
        while True:
            try:
                await self.take_in()
                await self.ship()
                if not self.behind:
                    await asyncio.sleep(self.interval)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the API says so; the journal waits
                log.debug("journal sharing paused: %s", exc, exc_info=True)
                await asyncio.sleep(self.interval)

    async def clear(self) -> None:
        """Clear the journal of every process: raise the clear mark to now, and apply it.

        ``StateUnavailable`` when Redis cannot be reached: nothing is cleared anywhere.
        """
        now = self.runtime.state.clock.wall()
        # What this process has recorded came before the clear, whatever its instant.
        recorded = self.runtime.journal.last_seq
        try:
            async with self.shared.client().pipeline(transaction=True) as pipe:
                pipe.zadd(self.shared.prefix + CLEARED, {MARK: now}, gt=True)
                pipe.zscore(self.shared.prefix + CLEARED, MARK)
                _, mark = await pipe.execute()
        except Exception as exc:
            raise StateUnavailable(f"the shared state at {self.shared.url} failed: {exc}") from exc
        self.apply(float(mark), through=recorded)

    async def sync(self) -> bool:
        """Apply the latest clear mark before a control call reads the journal.

        False when Redis cannot be reached: the journal stays as this process has
        it (every clear it has seen applied), for a look at what happened meanwhile.
        """
        try:
            mark = await self.shared.client().zscore(self.shared.prefix + CLEARED, MARK)
        except Exception as exc:
            log.debug("the clear mark could not be read: %s", exc)
            return False
        self.apply(float(mark) if mark is not None else 0.0)
        return True

    def apply(self, mark: float, through: int = 0) -> None:
        """Forget what came before ``mark`` (if it is newer), and what ended since before it;
        ``through``: and every entry up to that sequence number (this process's clear)."""
        journal = self.runtime.journal
        if mark > self.cleared:
            self.cleared = mark
            journal.clear(before=mark, through=through)
        elif self.cleared or through:
            journal.discard_before(self.cleared, since=self._checked, through=through)
        self._checked = journal.last_seq

    async def ship(self) -> int:
        """Send the entries this process recorded since the last call; how many."""
        records = self.runtime.journal.records_after(self.shipped)
        if not records or getattr(self.shared, "gone", False):
            return 0  # nothing new, or a deleted tenant's (its keys are being swept)
        self.shipped = records[-1][SEQ]
        taken_in = self.taken_in
        cleared = self.cleared
        own = [
            record
            for record in records
            if record[SEQ] not in taken_in and record[WALL] is not None and record[WALL] >= cleared
        ]
        self.taken_in = {seq for seq in taken_in if seq > self.shipped}
        if not own:
            return 0
        client = self.shared.client()
        async with client.pipeline(transaction=False) as pipe:
            for start in range(0, len(own), _BATCH):
                batch = marshal.dumps(own[start : start + _BATCH])
                pipe.xadd(self.stream, {"m": batch}, maxlen=STREAM_BATCHES, approximate=False)
            pipe.expire(self.stream, STREAM_TTL)
            pipe.sadd(self.shared.prefix + STREAMS, self.origin)
            pipe.expire(self.shared.prefix + STREAMS, STREAM_TTL)
            await pipe.execute()
        return len(own)

    async def take_in(self) -> int:
        """Append the other processes' new entries to this journal; how many."""
        client = self.shared.client()
        loop = asyncio.get_running_loop()
        if loop.time() - self._peers_read >= PEERS_EVERY:
            self._peers_read = loop.time()
            prefix = self.shared.prefix
            for origin in await client.smembers(prefix + STREAMS):
                stream = prefix + STREAM + origin.decode()
                if stream != self.stream and stream not in self.peers:
                    newest = await client.xrevrange(stream, count=1) if not self._started else ()
                    # What came before this process started is not its traffic.
                    self.peers[stream] = newest[0][0] if newest else "0-0"
            self._started = True
        async with client.pipeline(transaction=False) as pipe:
            # The clear mark first: what the read brings is held against it.
            pipe.zscore(self.shared.prefix + CLEARED, MARK)
            if self.peers:
                pipe.xread(self.peers, count=STREAM_BATCHES)
            mark, *replies = await pipe.execute()
        self.apply(float(mark) if mark is not None else 0.0)
        journal = self.runtime.journal
        cleared = self.cleared
        count = 0
        self.behind = False
        for stream, messages in (replies[0] if replies else None) or ():
            self.behind = self.behind or len(messages) >= STREAM_BATCHES
            for message_id, fields in messages:
                self.peers[stream.decode()] = message_id
                # Written by mockstore processes only: whoever can write to this Redis
                # controls the mock anyway (its scenario, keys and state).
                for record in marshal.loads(fields[b"m"]):
                    entry = as_entry(record)
                    if entry.wall is None or entry.wall < cleared:
                        continue  # came before a clear
                    entry = entry._replace(
                        seq=journal.next_seq(), run=journal.run, arrived_after=-1
                    )
                    journal.append(entry)
                    self.taken_in.add(entry.seq)
                    count += 1
        self._checked = journal.last_seq  # what was taken in was held against the mark
        return count
