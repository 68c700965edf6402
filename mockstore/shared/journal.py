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
"""

from __future__ import annotations

import asyncio
import logging
import marshal
import secrets
from typing import Any

from mockstore.journal import Entry, as_entry
from mockstore.state import Runtime

log = logging.getLogger("mockstore.shared")
SEQ = Entry._fields.index("seq")

STREAMS = "mockstore:journals"  # set: the processes that ship entries
STREAM = "mockstore:journal:"  # + a process's origin: a stream of its batches of entries
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


class JournalSharing:
    """Ships this process's journal entries to Redis and takes in the other processes'."""

    def __init__(self, shared: Any, runtime: Runtime, interval: float = INTERVAL) -> None:
        self.shared = shared
        self.runtime = runtime
        self.interval = interval
        self.origin = secrets.token_hex(8)
        self.stream = STREAM + self.origin
        self.shipped = runtime.journal.last_seq  # entries after it are to be shipped
        self.taken_in: set[int] = set()  # sequence numbers of the others' entries
        self.peers: dict[str, str] = {}  # another process's stream -> the last id read
        self._peers_read = -PEERS_EVERY
        self._started = False

    async def run(self) -> None:
        """Until cancelled (the server stops): ship, take in, and again."""
        while True:
            try:
                await self.ship()
                if not await self.take_in():
                    await asyncio.sleep(self.interval)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the API says so; the journal waits
                log.debug("journal sharing paused: %s", exc, exc_info=True)
                await asyncio.sleep(self.interval)

    async def ship(self) -> int:
        """Send the entries this process recorded since the last call; how many."""
        records = self.runtime.journal.records_after(self.shipped)
        if not records:
            return 0
        self.shipped = records[-1][SEQ]
        taken_in = self.taken_in
        own = [record for record in records if record[SEQ] not in taken_in]
        self.taken_in = {seq for seq in taken_in if seq > self.shipped}
        if not own:
            return 0
        client = self.shared.client()
        async with client.pipeline(transaction=False) as pipe:
            for start in range(0, len(own), _BATCH):
                batch = marshal.dumps(own[start : start + _BATCH])
                pipe.xadd(self.stream, {"m": batch}, maxlen=STREAM_BATCHES, approximate=False)
            pipe.expire(self.stream, STREAM_TTL)
            pipe.sadd(STREAMS, self.origin)
            await pipe.execute()
        return len(own)

    async def take_in(self) -> int:
        """Append the other processes' new entries to this journal; how many."""
        client = self.shared.client()
        loop = asyncio.get_running_loop()
        if loop.time() - self._peers_read >= PEERS_EVERY:
            self._peers_read = loop.time()
            for origin in await client.smembers(STREAMS):
                stream = STREAM + origin.decode()
                if stream != self.stream and stream not in self.peers:
                    newest = await client.xrevrange(stream, count=1) if not self._started else ()
                    # What came before this process started is not its traffic.
                    self.peers[stream] = newest[0][0] if newest else "0-0"
            self._started = True
        if not self.peers:
            return 0
        replies = await client.xread(self.peers, count=STREAM_BATCHES)
        journal = self.runtime.journal
        count = 0
        for stream, messages in replies or ():
            for message_id, fields in messages:
                self.peers[stream.decode()] = message_id
                # Written by mockstore processes only: whoever can write to this Redis
                # controls the mock anyway (its scenario, keys and state).
                for record in marshal.loads(fields[b"m"]):
                    entry = as_entry(record)._replace(
                        seq=journal.next_seq(), run=journal.run, arrived_after=-1
                    )
                    journal.append(entry)
                    self.taken_in.add(entry.seq)
                    count += 1
        return count
