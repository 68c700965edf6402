"""The request journal: a bounded record of every exchange.

Recording must be cheap on the hot path, so an entry keeps the raw ASGI
headers and body bytes as they are; decoding and masking happen only when
the journal is read. The ring buffer holds each exchange as a plain tuple of
bytes, strings, numbers and tuples of those (``Entry`` objects are made when it
is read): the cyclic garbage collector stops tracking such tuples after their
first collections, so 10,000 recorded exchanges add nothing to the collections
that run while the server works.

The journal is bounded in bytes as well as in entries: each entry's headers
are cut to ``header_bytes`` (bodies to ``body_bytes``), and the oldest entries
go once all of them together would pass ``max_bytes``. An entry's size is an
estimate of the memory it holds (its bytes and strings, plus a fixed overhead
per entry and per header measured on CPython 3.11), kept beside it, so
counting costs a few additions per exchange.

What it holds is also reserved from its mock's share of the process's memory
budget (``mockstore.memory``), a ``JOURNAL_BLOCK`` at a time, so the request
path only compares two numbers. When the budget has no room for another
block, the oldest entries go to make room (an entry that does not fit even
alone is dropped), and the journal says so: ``dropped``, and a warning in the
log at most once a minute.
"""

from __future__ import annotations

import json
import logging
import time as _time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from mockstore.keys import is_alias, key_alias
from mockstore.memory import Account, format_size
from mockstore.runs import Run
from mockstore.scenario.loader import schema_default

log = logging.getLogger("mockstore.journal")

RawHeaders = Iterable[tuple[bytes, bytes]]

# The memory an entry holds beyond the lengths of its bytes and strings: the
# record tuple (216), its request id, numbers and size, the object headers of
# its path and query (CPython 3.11, 64-bit, sys.getsizeof of each part).
ENTRY_OVERHEAD = 500
# Each header: its (name, value) tuple (56) and the two bytes objects' headers (66).
HEADER_OVERHEAD = 120
# The names and values of one header of a standard answer (mockstore's own:
# content-type, date, x-ratelimit-*, ...), at most this long: estimated rather
# than counted on the hot path. Scripted answers' headers are counted.
STANDARD_HEADER_BYTES = 48
STANDARD_HEADER_COST = HEADER_OVERHEAD + STANDARD_HEADER_BYTES
# Reserved from the memory budget this much at a time (and given back once two
# blocks are spare): one comparison per exchange, a reservation every few hundred.
JOURNAL_BLOCK = 256 * 1024


class Entry(NamedTuple):
    """One request and its response.

    ``key`` is the full API key the request was counted against (None without
    a valid key); ``status`` is 0 when a connection fault left no response;
    bodies are cut at the journal's ``body_bytes``. ``time`` is the scenario
    clock and ``wall`` the wall clock when the request arrived (the "now" its
    answer's headers were written from; None in entries read from a recording
    that did not say); ``run``
    is the run it belongs to (``mockstore.runs``; 0 when not known). Entries
    are immutable, so readers may share them across threads.
    """

    seq: int
    request_id: str
    time: float  # scenario clock, Unix seconds
    elapsed: float  # seconds since the scenario clock's start
    method: str
    path: str
    query: bytes
    request_headers: RawHeaders
    request_body: bytes
    client: str
    operation: str | None
    key: str | None
    plan: str | None
    status: int
    response_headers: RawHeaders
    response_body: bytes
    latency_ms: float
    rule: str | None
    outcome: str = "response"  # or the name of a connection fault
    wall: float | None = None
    run: int = 0
    arrived_after: int = -1  # the last seq answered when it arrived (-1: not known)

    def header(self, name: str) -> str | None:
        """The first request header of that name, as sent (the token unmasked)."""
        target = name.lower().encode()
        for key, value in self.request_headers:
            if key.lower() == target:
                return value.decode("latin-1")
        return None

    def json_body(self) -> Any:
        try:
            return json.loads(self.request_body)
        except ValueError:
            return None

    def to_dict(self) -> dict[str, Any]:
        """The entry as the control API shows it: the key and bearer token masked."""
        return {
            "seq": self.seq,
            "request_id": self.request_id,
            "time": self.time,
            "wall": self.wall,
            "run": self.run,
            "elapsed": round(self.elapsed, 6),
            "operation": self.operation,
            "key": mask(self.key) if self.key else None,
            "plan": self.plan,
            "client": self.client,
            "request": {
                "method": self.method,
                "path": self.path,
                "query": dict(parse_qsl(self.query.decode("latin-1"), keep_blank_values=True)),
                "query_string": self.query.decode("latin-1"),
                "headers": decode_headers(self.request_headers, mask_auth=True),
                "body": _text(self.request_body),
            },
            "response": {
                "status": self.status,
                "headers": decode_headers(self.response_headers),
                "body": _text(self.response_body),
            },
            "latency_ms": round(self.latency_ms, 3),
            "rule": self.rule,
            "outcome": self.outcome,
        }


def mask(secret: str) -> str:
    """A key as the journal shows it: never the whole of it, and never two keys alike.

    Its first four characters (none for a key that short) and its alias
    (``key_alias``: 32 bits of its digest), e.g. ``test*** (key-1a2b3c4d)``, so
    ``test-key-one`` and ``test-key-two`` are told apart. A key alias reveals
    nothing and is shown as it is.
    """
    if is_alias(secret):
        return secret
    shown = "****" if len(secret) <= 4 else secret[:4] + "*" * min(3, len(secret) - 4)
    return f"{shown} ({key_alias(secret)})"


def decode_headers(headers: RawHeaders, mask_auth: bool = False) -> list[list[str]]:
    """Raw ASGI headers as [name, value] pairs; ``mask_auth`` masks the credentials."""
    out = []
    for key, value in headers:
        name = key.decode("latin-1")
        text = value.decode("latin-1")
        if mask_auth and name.lower() == "authorization":
            scheme, _, token = text.partition(" ")
            text = f"{scheme} {mask(token.strip())}" if token else scheme
        out.append([name, text])
    return out


def _text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


class Journal:
    """A ring buffer of entries; the oldest go first when it is full.

    ``size`` 0 turns recording off (what was recorded stays readable until
    cleared). Sequence numbers only grow, across clears, resets and scenario
    swaps, so ``since=N`` always means "after the N-th exchange ever served".
    Every method runs on the server's event loop, between requests; readers
    take a snapshot (``select``) so a report can be built off the loop while
    the server keeps appending.
    """

    def __init__(
        self,
        size: int,
        body_bytes: int,
        *,
        max_bytes: int = schema_default("journal", "max_bytes"),
        header_bytes: int = schema_default("journal", "header_bytes"),
        account: Account | None = None,
    ) -> None:
        self.size = size
        self.body_bytes = body_bytes
        self.max_bytes = max_bytes
        self.header_bytes = header_bytes
        # Bounded in entries by the deques themselves (the oldest fall out as
        # the newest come in, in C); in bytes by _evict.
        self._entries: deque[tuple[Any, ...]] = deque(maxlen=size or None)
        self._costs: deque[int] = deque(maxlen=size or None)  # each entry's size, in order
        self.bytes = 0
        self._seq = 0
        self.enabled = size > 0
        self.dropped = 0
        # The share of the memory budget it draws on, and what it reserved there.
        self.account = account
        self._held = 0 if account is not None else 2**62
        self._warned = 0.0  # when the log last said the budget made entries go
        # The run every entry recorded from now on belongs to, and where the
        # latest runs began (``begin_run``).
        self.run = 0
        self.runs: deque[Run] = deque(maxlen=RUNS_KEPT)

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def append(self, entry: Entry) -> None:
        """Append an entry as it is (its ``seq`` already taken with ``next_seq``)."""
        if not self.enabled:
            return
        record = tuple(entry)
        self._add(record, _cost(record))

    def record(
        self,
        request_id: str,
        time: float,
        elapsed: float,
        method: str,
        path: str,
        query: bytes,
        request_headers: tuple[tuple[bytes, bytes], ...],
        request_body: bytes,
        client: str,
        operation: str | None,
        key: str | None,
        plan: str | None,
        status: int,
        response_headers: tuple[tuple[bytes, bytes], ...],
        response_body: bytes,
        latency_ms: float,
        rule: str | None,
        outcome: str,
        wall: float,
        head_bytes: int = -1,
        arrived_after: int = -1,
        /,
    ) -> None:
        """Append one exchange, numbering it and cutting its headers and bodies to size.

        The parameters are ``Entry``'s fields after ``seq``, in its order, and
        positional: this runs once per request, and naming 19 arguments at the
        call costs more than the rest of it (``tests/test_journal.py`` checks
        that every field lands where it belongs). ``head_bytes`` is the size of
        the request's head (request line and headers) as the server counted
        it, or -1 to count it here; ``arrived_after`` the last sequence number
        answered when the request arrived. The response headers of a standard answer
        (no ``rule`` fired) are mockstore's own and short, so estimated
        (``STANDARD_HEADER_BYTES`` each); a scripted answer's are counted.
        """
        if not self.enabled:
            return
        self._seq += 1
        cap = self.body_bytes
        sent = len(request_body)
        if sent > cap:
            request_body = request_body[:cap]
            sent = cap
        answered = len(response_body)
        if answered > cap:
            response_body = response_body[:cap]
            answered = cap
        if head_bytes < 0 or head_bytes > self.header_bytes:
            # Counted here (in process), or possibly over the cap: the exact figure.
            if _header_bytes(request_headers) > self.header_bytes:
                request_headers = cap_headers(request_headers, self.header_bytes)
            head_bytes = _header_bytes(request_headers) + len(path) + len(query)
        cost = (
            ENTRY_OVERHEAD
            + head_bytes
            + sent
            + answered
            + HEADER_OVERHEAD * len(request_headers)
            + STANDARD_HEADER_COST * len(response_headers)
        )
        if rule is not None:  # a scripted answer: its headers are the scenario's, counted
            cost += _header_bytes(response_headers) - STANDARD_HEADER_BYTES * len(response_headers)
        entries = self._entries
        if len(entries) == self.size:  # the oldest falls out below
            self.bytes -= self._costs[0]
            self.dropped += 1
        # A plain tuple in Entry's field order, not an Entry: see the module docstring.
        entries.append(
            (
                self._seq,
                request_id,
                time,
                elapsed,
                method,
                path,
                query,
                request_headers,
                request_body,
                client,
                operation,
                key,
                plan,
                status,
                response_headers,
                response_body,
                latency_ms,
                rule,
                outcome,
                wall,
                self.run,
                arrived_after,
            )
        )
        costs = self._costs
        costs.append(cost)
        self.bytes += cost
        # Past the byte budget the oldest go too (inline: with large answers it
        # runs on every request); the newest always stays, cut to size.
        while self.bytes > self.max_bytes and len(entries) > 1:
            entries.popleft()
            self.bytes -= costs.popleft()
            self.dropped += 1
        if self.bytes > self._held:
            self._reserve()

    def _add(self, record: tuple[Any, ...], cost: int) -> None:
        if len(self._entries) == self.size:
            self.bytes -= self._costs[0]
            self.dropped += 1
        self._entries.append(record)
        self._costs.append(cost)
        self.bytes += cost
        self._evict()
        if self.bytes > self._held:
            self._reserve()

    def _reserve(self) -> None:
        """Reserve what the entries hold from the memory budget, or let the oldest go.

        Only called when they hold more than is reserved. Blocks first; when no
        block is to be had, the oldest entries go until the rest fit what is
        reserved, and an entry too large to fit even alone goes too.
        """
        account = self.account
        assert account is not None
        need = self.bytes - self._held
        blocks = -(-need // JOURNAL_BLOCK) * JOURNAL_BLOCK
        if account.reserve(blocks) or account.reserve(blocks := need):
            self._held += blocks
            return
        entries, costs = self._entries, self._costs
        gone = 0
        while self.bytes > self._held and entries:
            if len(entries) == 1 and account.reserve(self.bytes - self._held):
                self._held = self.bytes
                break
            entries.popleft()
            self.bytes -= costs.popleft()
            gone += 1
        self.dropped += gone
        now = _time.monotonic()
        if gone and now - self._warned > 60:
            self._warned = now
            log.warning(
                "the memory budget has no room for more of the journal (%s of it held by "
                "the journal, %s left in its share): %d older entries were let go; "
                "raise --memory-budget, or lower journal.max_bytes",
                format_size(self._held),
                format_size(account.available),
                gone,
            )

    def _give_back(self) -> None:
        """Release the blocks the entries no longer need (all but one spare)."""
        account = self.account
        if account is None:
            return
        spare = (self._held - self.bytes) // JOURNAL_BLOCK - 1
        if spare > 0:
            account.release(spare * JOURNAL_BLOCK)
            self._held -= spare * JOURNAL_BLOCK

    def rehome(self, account: Account | None) -> None:
        """Draw on ``account`` from now on, and take no new entries (a deleted tenant's, kept).

        What the entries hold is reserved there and given back where it was;
        when ``account`` has no room for all of them, the oldest go.
        """
        old, held = self.account, self._held
        self.enabled = False
        self.account = account
        self._held = 0 if account is not None else 2**62
        if old is not None:
            old.release(held)
        if self.bytes > self._held:
            self._reserve()

    def close(self) -> None:
        """Forget every entry and give back all it reserved (the journal's mock is gone)."""
        self.clear()
        if self.account is not None:
            self.account.release(self._held)
            self._held = 0

    def _evict(self) -> None:
        """The oldest go first until the entries fit the byte budget.

        The newest entry always stays (it was cut to size).
        """
        entries, costs = self._entries, self._costs
        while self.bytes > self.max_bytes and len(entries) > 1:
            entries.popleft()
            self.bytes -= costs.popleft()
            self.dropped += 1

    def begin_run(self, run: Run) -> None:
        """Number every entry from now on with ``run`` (see ``mockstore.runs``)."""
        self.run = run.number
        self.runs.append(run)

    def run_of(self, number: int) -> Run | None:
        """Where run ``number`` began, if it is among the runs kept."""
        return next((run for run in self.runs if run.number == number), None)

    def clear(self) -> None:
        """Forget every entry (and the count of dropped ones); ``last_seq`` stays."""
        self._entries.clear()
        self._costs.clear()
        self.bytes = 0
        self.dropped = 0
        self._give_back()

    def resize(
        self,
        size: int,
        body_bytes: int,
        *,
        max_bytes: int | None = None,
        header_bytes: int | None = None,
    ) -> None:
        """Apply a new scenario's ``journal:`` settings, keeping the newest entries that fit."""
        self.size = size
        self.body_bytes = body_bytes
        if max_bytes is not None:
            self.max_bytes = max_bytes
        if header_bytes is not None:
            self.header_bytes = header_bytes
        self.enabled = size > 0
        if size:
            while len(self._entries) > size:
                self._entries.popleft()
                self.bytes -= self._costs.popleft()
                self.dropped += 1
            self._evict()
        self._entries = deque(self._entries, maxlen=size or None)
        self._costs = deque(self._costs, maxlen=size or None)
        self._give_back()

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.select())

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def last_seq(self) -> int:
        return self._seq

    def select(
        self,
        operation: str | None = None,
        key: str | None = None,
        status: int | None = None,
        since: int | None = None,
        run: int | None = None,
    ) -> list[Entry]:
        """Entries in order, filtered; ``since`` keeps those after a sequence number.

        ``key`` is the full API key the request was counted against; ``run``
        keeps one run's entries.
        """
        snapshot = list(self._entries)  # one C-level copy: a consistent snapshot
        make = Entry._make
        return [
            make(r)
            for r in snapshot
            if (operation is None or r[_OPERATION] == operation)
            and (key is None or r[_KEY] == key)
            and (status is None or r[_STATUS] == status)
            and (since is None or r[_SEQ] > since)
            and (run is None or r[_RUN] == run)
        ]

    def records_after(self, seq: int) -> list[tuple[Any, ...]]:
        """The stored records (``Entry`` fields in order) after ``seq``, oldest first.

        Read from the newest back, so it costs what is new, not the journal's
        length (``mockstore.shared.journal`` ships them every few milliseconds).
        """
        newer: list[tuple[Any, ...]] = []
        for record in reversed(self._entries):
            if record[_SEQ] <= seq:
                break
            newer.append(record)
        newer.reverse()
        return newer


# Where each field sits in a stored record, for ``select``'s filters.
_SEQ, _OPERATION, _KEY, _STATUS, _RUN = (
    Entry._fields.index(name) for name in ("seq", "operation", "key", "status", "run")
)
# Where the latest runs began: enough for any report to name its runs (a run
# with no entry left needs none), a few hundred bytes each.
RUNS_KEPT = 4096


def _header_bytes(headers: RawHeaders) -> int:
    """The names and values of ``headers``, in bytes."""
    size = 0
    for name, value in headers:
        size += len(name) + len(value)
    return size


def _cost(record: tuple[Any, ...]) -> int:
    """The estimated size of a stored record (for entries appended whole)."""
    entry = Entry._make(record)
    headers = (*entry.request_headers, *entry.response_headers)
    return (
        ENTRY_OVERHEAD
        + HEADER_OVERHEAD * len(headers)
        + _header_bytes(headers)
        + len(entry.path)
        + len(entry.query)
        + len(entry.request_body)
        + len(entry.response_body)
    )


def cap_headers(
    headers: tuple[tuple[bytes, bytes], ...], cap: int
) -> tuple[tuple[bytes, bytes], ...]:
    """Headers cut to ``cap`` bytes of names and values, cutting the longest values first.

    Every header is kept (a replay needs ``Authorization``, ``Content-Type``, ...)
    and short values stay whole: the values are cut to one common length, the
    largest that fits. Only when the names alone pass ``cap`` (thousands of
    headers) are the last headers dropped.
    """
    names = sum(len(name) for name, _ in headers)
    if names >= cap:
        kept, used = [], 0
        for name, _ in headers:
            used += len(name)
            if used > cap:
                break
            kept.append((name, b""))
        return tuple(kept)
    budget = cap - names
    lengths = sorted(len(value) for _, value in headers)
    level = lengths[-1] if lengths else 0
    for index, length in enumerate(lengths):
        share = budget // (len(lengths) - index)
        if length > share:
            level = share
            break
        budget -= length
    return tuple((name, value[:level]) for name, value in headers)
