"""Every process's journal holds every process's traffic: exchanges shared through Redis.

With a shared state each process journals what it answers, as in memory (on the
request path nothing changes). Off the request path, ``JournalSharing`` ships
the entries its process recorded to a Redis stream (``mockstore:journal``) a
batch at a time, and appends the entries the other processes shipped to its
own journal. So the report, ``verify``, the HAR, replay and the dashboard of any
process cover the traffic of all of them, a moment later (one ``interval``),
within the journal's own bounds in entries and bytes, as in memory.

An entry from another process takes the next sequence number and the current
run of the journal it joins; what was answered when it arrived (``arrived_after``)
is only known to its own process, so it says -1 (not known) here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import Any

from mockstore.journal import Entry
from mockstore.state import Runtime

log = logging.getLogger("mockstore.shared")

STREAM = "mockstore:journal"
# How long entries wait before they are shipped, and the longest a read waits for others'.
INTERVAL = 0.05
# The stream keeps about this many entries: a process that falls further behind
# (or was stopped) reads from the oldest kept.
STREAM_LENGTH = 20_000
_BATCH = 500
_BYTES = ("query", "request_body", "response_body")
_HEADERS = ("request_headers", "response_headers")


class JournalSharing:
    """Ships this process's journal entries to Redis and takes in the other processes'."""

    def __init__(self, shared: Any, runtime: Runtime, interval: float = INTERVAL) -> None:
        self.shared = shared
        self.runtime = runtime
        self.interval = interval
        self.origin = secrets.token_hex(8)
        self.shipped = runtime.journal.last_seq  # entries after it are to be shipped
        self.taken_in: set[int] = set()  # sequence numbers of the others' entries
        self.last_read = "$"

    async def run(self) -> None:
        """Until cancelled (the server stops): ship, take in, and again."""
        while True:
            try:
                await self.ship()
                await self.take_in(block=True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the API says so; the journal waits
                log.debug("journal sharing paused: %s", exc)
                await asyncio.sleep(self.interval)

    async def ship(self) -> int:
        """Send the entries this process recorded since the last call; how many."""
        journal = self.runtime.journal
        entries = journal.select(since=self.shipped)
        if not entries:
            return 0
        self.shipped = entries[-1].seq
        own = [entry for entry in entries if entry.seq not in self.taken_in]
        self.taken_in = {seq for seq in self.taken_in if seq > self.shipped}
        if not own:
            return 0
        client = self.shared.client()
        async with client.pipeline(transaction=False) as pipe:
            for entry in own:
                pipe.xadd(
                    STREAM,
                    {"o": self.origin, "e": encode(entry)},
                    maxlen=STREAM_LENGTH,
                    approximate=True,
                )
            await pipe.execute()
        return len(own)

    async def take_in(self, block: bool = False) -> int:
        """Append the other processes' new entries to this journal; how many."""
        client = self.shared.client()
        if self.last_read == "$":  # from what is there now on ("$" again would miss some)
            newest = await client.xrevrange(STREAM, count=1)
            self.last_read = newest[0][0] if newest else "0-0"
        wait = int(self.interval * 1000) if block else None
        replies = await client.xread({STREAM: self.last_read}, count=_BATCH, block=wait)
        journal = self.runtime.journal
        count = 0
        for _, messages in replies or ():
            for message_id, fields in messages:
                self.last_read = message_id
                if fields[b"o"].decode() == self.origin:
                    continue
                entry = decode(fields[b"e"])._replace(
                    seq=journal.next_seq(), run=journal.run, arrived_after=-1
                )
                journal.append(entry)
                self.taken_in.add(entry.seq)
                count += 1
        return count


def encode(entry: Entry) -> str:
    """An entry as JSON text: bytes as Latin-1 (one character a byte, so nothing is lost)."""
    record = entry._asdict()
    for name in _BYTES:
        record[name] = record[name].decode("latin-1")
    for name in _HEADERS:
        record[name] = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in record[name]]
    return json.dumps(record, separators=(",", ":"))


def decode(text: bytes) -> Entry:
    record = json.loads(text)
    for name in _BYTES:
        record[name] = record[name].encode("latin-1")
    for name in _HEADERS:
        record[name] = tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in record[name])
    return Entry(**record)
