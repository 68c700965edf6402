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

Two things are stored as the server had them and made into what an ``Entry``
says only when the journal is read: the request id as the header's bytes,
and the response headers of an answer sent the fast way as its header block
(one bytes object where a tuple of pairs would hold 15 objects). The hidden
cost is on the reader: ``select`` splits each block back into pairs.

What it holds is also reserved from its mock's share of the process's memory
budget (``mockstore.memory``), a ``JOURNAL_BLOCK`` at a time, so the request
path only compares two numbers. When the budget has no room for another
block, the oldest entries go to make room (an entry that does not fit even
alone is dropped), and the journal says so: ``dropped``, and a warning in the
log at most once a minute.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import time as _time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from mockstore.headers import parse_block
from mockstore.journal_picks import Picked
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
# A header block stored as it was sent: one bytes object's header.
BLOCK_OVERHEAD = 33
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
    is the run it belongs to (``mockstore.runs``; 0 when not known).
    ``refused_until`` is the mock's own decision on the caller, which the
    verdicts judge a wait by (a retry the mock admitted is never early). Entries
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
    # What the limiter decided: the instant (scenario clock) it refused the caller until,
    # 0.0 when it admitted the request, -1.0 when it did not decide (see Caller).
    refused_until: float = -1.0

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
        # The bytes held, as running totals: ``_totals`` holds the sum of every
        # entry's cost ever added as of each held entry, after the same sum as of
        # the entry before the oldest; the bytes held are its last item less its
        # first. It is one item longer than the ring and drops its oldest item
        # when the ring drops its oldest entry, so nothing is subtracted as
        # entries fall out: one addition and one append per request.
        self._total = 0
        self._totals: deque[int] = deque([0], maxlen=size + 1 if size else None)
        # Sequence numbers: ``next(self.sequence)`` takes the next one (the
        # server does, as it makes each record: cheaper than a method call).
        self.sequence = itertools.count(1)
        self._seq_at_clear = 0
        # The last sequence number taken: an attribute, not worked out, because
        # the server reads it as each request arrives (``Entry.arrived_after``).
        self.last_seq = 0
        self.enabled = size > 0
        # The share of the memory budget it draws on, and what it reserved there.
        self.account = account
        self._held = 0 if account is not None else 2**62
        self._relimit()
        self._warned = -math.inf  # when the log last said the budget made entries go (never)
        # The run every entry recorded from now on belongs to, and where the
        # latest runs began (``begin_run``).
        self.run = 0
        self.runs: deque[Run] = deque(maxlen=RUNS_KEPT)

    def next_seq(self) -> int:
        """Take the next sequence number, for the entry about to be appended."""
        seq = next(self.sequence)
        if not self.enabled:  # nothing will be appended: not an entry (see dropped)
            self._seq_at_clear += 1
            self.last_seq = seq
        return seq

    @property
    def bytes(self) -> int:
        """The estimated size of the entries held (see ENTRY_OVERHEAD)."""
        return self._totals[-1] - self._totals[0]

    @property
    def dropped(self) -> int:
        """Entries recorded since the last ``clear`` that are no longer held.

        Worked out rather than counted on every request: each sequence number
        taken while recording is on is an entry appended.
        """
        return self.last_seq - self._seq_at_clear - len(self._entries)

    def append(self, entry: Entry) -> None:
        """Append an entry as it is (its ``seq`` already taken with ``next_seq``)."""
        if not self.enabled:
            return
        record = tuple(entry)
        self._add(record, _cost(record))

    def record(
        self,
        request_id: str | bytes,
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
        response_headers: tuple[tuple[bytes, bytes], ...] | bytes,
        response_body: bytes,
        latency_ms: float,
        rule: str | None,
        outcome: str,
        wall: float,
        head_bytes: int = -1,
        arrived_after: int = -1,
        refused_until: float = -1.0,
        /,
    ) -> None:
        """Append one exchange: ``Entry``'s fields after ``seq``, in its order (see ``add``)."""
        if not self.enabled:
            return
        self.add(
            (self.next_seq(), request_id, time, elapsed, method, path, query, request_headers,
             request_body, client, operation, key, plan, status, response_headers,
             response_body, latency_ms, rule, outcome, wall, self.run, arrived_after,
             refused_until),
            head_bytes,
        )  # fmt: skip

    def add(self, record: tuple[Any, ...], head_bytes: int = -1) -> None:
        """Append one exchange, cutting its headers and bodies to size.

        ``record`` holds ``Entry``'s fields in its order, its ``seq`` taken with
        ``next_seq`` and its ``run`` the journal's: a tuple the server builds in one step,
        because this runs once per request and passing 22 arguments one by one costs about a
        third of it (``tests/test_journal.py`` checks that every field lands where it
        belongs). ``client`` may be the ASGI ``(host, port)`` pair or None (read as the
        host, or ``unknown``). ``head_bytes`` is the size of the request's head (request
        line and headers) as the server counted it, or -1 to count it here. The response
        headers are pairs or a header block (bytes, as sent; see the module docstring).
        Pairs of a standard answer (no ``rule`` fired) are mockstore's own and short, so
        estimated (``STANDARD_HEADER_BYTES`` each); a scripted answer's are counted; a block
        is its length.
        """
        if not self.enabled:
            return
        cap = self.body_bytes
        sent = len(record[_REQUEST_BODY])
        answered = len(record[_RESPONSE_BODY])
        # One test for the three reasons to cut (the server cuts its answers before and
        # counts the head: none holds on the request path).
        if answered > cap or sent > cap or not 0 <= head_bytes <= self.header_bytes:
            record, head_bytes = self._cut(record, head_bytes)
            sent = len(record[_REQUEST_BODY])
            answered = len(record[_RESPONSE_BODY])
        response_headers = record[_RESPONSE_HEADERS]
        cost = (
            ENTRY_OVERHEAD
            + head_bytes
            + sent
            + answered
            + HEADER_OVERHEAD * len(record[_REQUEST_HEADERS])
            + (
                BLOCK_OVERHEAD + len(response_headers)
                if response_headers.__class__ is bytes
                else _pairs_cost(response_headers, record[_RULE])
            )
        )
        # A plain tuple in Entry's field order, not an Entry: see the module docstring.
        self._entries.append(record)
        self.last_seq = record[_SEQ]
        total = self._total = self._total + cost
        totals = self._totals
        totals.append(total)
        # One comparison against the lower of the byte budget and what is reserved
        # (``_limit``); past it, ``_settle`` tells which and acts.
        if total - totals[0] > self._limit:
            self._settle()

    def _settle(self) -> None:
        """The entries hold more than ``_limit``: the oldest go past the byte budget, and
        what is held beyond the reservation is reserved (or the oldest go)."""
        totals = self._totals
        if totals[-1] - totals[0] > self.max_bytes:
            # Past the byte budget the oldest go too (with large answers, on every
            # request); the newest always stays, cut to size.
            self._evict()
        if totals[-1] - totals[0] > self._held:
            # More than is reserved from the memory budget: a block more (once
            # every few hundred entries), or the oldest go.
            self._reserve()

    def _relimit(self) -> None:
        """Work out ``_limit`` again: after any change to ``max_bytes`` or ``_held``.

        It may only be too low (``_settle`` then finds nothing to do), never too high:
        every place that lowers either calls this.
        """
        self._limit = min(self.max_bytes, self._held)

    def _cut(self, record: tuple[Any, ...], head_bytes: int) -> tuple[tuple[Any, ...], int]:
        """The record with its bodies cut to ``body_bytes``; the head counted if it must be.

        A head counted by the server within ``header_bytes`` stays as it came;
        one counted here (in process), or possibly over the cap, is measured
        (its headers cut to ``header_bytes`` first).
        """
        cut = list(record)
        # (a slice of bytes within the cap is the same object: nothing is copied)
        cut[_REQUEST_BODY] = cut[_REQUEST_BODY][: self.body_bytes]
        cut[_RESPONSE_BODY] = cut[_RESPONSE_BODY][: self.body_bytes]
        if head_bytes < 0 or head_bytes > self.header_bytes:
            request_headers = cut[_REQUEST_HEADERS]
            if _header_bytes(request_headers) > self.header_bytes:
                request_headers = cut[_REQUEST_HEADERS] = cap_headers(
                    request_headers, self.header_bytes
                )
            head_bytes = _header_bytes(request_headers) + len(cut[_PATH]) + len(cut[_QUERY])
        return tuple(cut), head_bytes

    def _add(self, record: tuple[Any, ...], cost: int) -> None:
        self._entries.append(record)
        self.last_seq = record[_SEQ]
        self._total += cost
        self._totals.append(self._total)
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
            self._relimit()
            return
        entries, totals = self._entries, self._totals
        gone = 0
        while self.bytes > self._held and entries:
            if len(entries) == 1 and account.reserve(self.bytes - self._held):
                self._held = self.bytes
                break
            entries.popleft()
            totals.popleft()
            gone += 1
        self._relimit()
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
            self._relimit()

    def rehome(self, account: Account | None) -> None:
        """Draw on ``account`` from now on, and take no new entries (a deleted tenant's, kept).

        What the entries hold is reserved there and given back where it was;
        when ``account`` has no room for all of them, the oldest go.
        """
        old, held = self.account, self._held
        self.enabled = False
        self.account = account
        self._held = 0 if account is not None else 2**62
        self._relimit()
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
            self._relimit()

    def _evict(self) -> None:
        """The oldest go first until the entries fit the byte budget.

        The newest entry always stays (it was cut to size).
        """
        entries, totals = self._entries, self._totals
        while totals[-1] - totals[0] > self.max_bytes and len(entries) > 1:
            entries.popleft()
            totals.popleft()

    def begin_run(self, run: Run) -> None:
        """Number every entry from now on with ``run`` (see ``mockstore.runs``)."""
        self.run = run.number
        if self.runs and self.runs[-1].number == run.number:
            self.runs.pop()  # the same run again (a shared state's, set once more)
        self.runs.append(run)

    def skip_to(self, seq: int, forgotten: int = 0) -> None:
        """Sequence numbers up to ``seq`` were handed out elsewhere (a shared journal's:
        ``mockstore.shared.journal``): those not appended count as dropped, but for
        ``forgotten`` of them (cleared before they came)."""
        if seq > self.last_seq:
            self.last_seq = seq
        self._seq_at_clear += forgotten

    def run_of(self, number: int) -> Run | None:
        """Where run ``number`` began, if it is among the runs kept."""
        return next((run for run in self.runs if run.number == number), None)

    def clear(self, before: float | None = None, through: int = 0) -> int:
        """Forget every entry (and the count of dropped ones); ``last_seq`` stays.

        ``before``: only the entries of requests that came before that instant
        of the wall clock (``Entry.wall``), as a clear made through another
        process of a shared state is (``mockstore.shared.journal``): the entries
        of requests that came after it stay; ``through``: and every entry up to
        that sequence number whatever its instant (what the clearing process had
        recorded when it cleared: a frozen wall clock orders nothing). Returns how
        many were forgotten.
        """
        if before is not None:
            gone = self.discard_before(before, through=through)
            self._seq_at_clear = self.last_seq - len(self._entries)
            return gone
        gone = len(self._entries)
        self._entries.clear()
        self._totals = deque([self._total], maxlen=self._totals.maxlen)
        self._seq_at_clear = self.last_seq
        self._give_back()
        return gone

    def discard_before(self, wall: float, since: int = 0, through: int = 0) -> int:
        """Forget the entries of requests that came before ``wall`` (wall clock); how many.

        Only the entries after ``since`` are looked at to decide (the others
        were, by the caller, before): with none of them before ``wall`` this
        costs what is new. Unlike ``clear`` it leaves the count of dropped
        entries as it was. An entry without a wall instant is forgotten too, and
        so is every entry up to sequence number ``through``.
        """
        entries, totals = self._entries, self._totals
        for record in reversed(entries):
            if record[_SEQ] <= since:
                return 0
            stamp = record[_WALL]
            if stamp is None or stamp < wall or record[_SEQ] <= through:
                break
        else:
            return 0
        kept: deque[tuple[Any, ...]] = deque(maxlen=entries.maxlen)
        running = totals[0]
        kept_totals: deque[int] = deque([running], maxlen=totals.maxlen)
        for record, (low, high) in zip(entries, itertools.pairwise(totals), strict=True):
            stamp = record[_WALL]
            if stamp is not None and stamp >= wall and record[_SEQ] > through:
                kept.append(record)
                running += high - low
                kept_totals.append(running)
        gone = len(entries) - len(kept)
        self._entries, self._totals, self._total = kept, kept_totals, running
        self._seq_at_clear += gone  # forgotten, not dropped
        self._give_back()
        return gone

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
            self._relimit()
        if header_bytes is not None:
            self.header_bytes = header_bytes
        self.enabled = size > 0
        if size:
            while len(self._entries) > size:
                self._entries.popleft()
                self._totals.popleft()
            self._evict()
        self._entries = deque(self._entries, maxlen=size or None)
        self._totals = deque(self._totals, maxlen=size + 1 if size else None)
        self._give_back()

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.select())

    def __len__(self) -> int:
        return len(self._entries)

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
        return list(self.pick(operation, key, status, since, run))

    def pick(
        self,
        operation: str | None = None,
        key: str | None = None,
        status: int | None = None,
        since: int | None = None,
        run: int | None = None,
    ) -> Picked[Entry]:
        """``select``'s entries, each made only when read (in a worker: ``journal_picks``)."""
        snapshot = list(self._entries)  # one C-level copy: a consistent snapshot
        if operation is key is status is since is run is None:
            return Picked(snapshot, _entry)
        return Picked(
            [
                r
                for r in snapshot
                if (operation is None or r[_OPERATION] == operation)
                and (key is None or r[_KEY] == key)
                and (status is None or r[_STATUS] == status)
                and (since is None or r[_SEQ] > since)
                and (run is None or r[_RUN] == run)
            ],
            _entry,
        )

    def records_after(self, seq: int) -> list[tuple[Any, ...]]:
        """The records after ``seq``, oldest first, as stored (``as_entry`` reads one).

        Read from the newest back, so it costs what is new, not the journal's
        length (``mockstore.shared.journal`` ships them every few milliseconds,
        as they are: plain data, its header blocks parsed only where one is read).
        """
        newer: list[tuple[Any, ...]] = []
        for record in reversed(self._entries):
            if record[_SEQ] <= seq:
                break
            newer.append(record)
        newer.reverse()
        return newer


# Where each field sits in a stored record.
(_SEQ, _REQUEST_ID, _PATH, _QUERY, _REQUEST_HEADERS, _REQUEST_BODY, _CLIENT, _OPERATION, _KEY,
 _STATUS, _RESPONSE_HEADERS, _RESPONSE_BODY, _RULE, _WALL, _RUN) = (
    Entry._fields.index(name)
    for name in ("seq", "request_id", "path", "query", "request_headers", "request_body",
                 "client", "operation", "key", "status", "response_headers", "response_body",
                 "rule", "wall", "run")
)  # fmt: skip


def _entry(record: tuple[Any, ...]) -> Entry:
    """A stored record as an Entry: what the server stored as it had it, made what Entry says.

    The request id as text, a header block as pairs, the ASGI client as its host.
    """
    request_id = record[_REQUEST_ID]
    headers = record[_RESPONSE_HEADERS]
    client = record[_CLIENT]
    if request_id.__class__ is bytes or headers.__class__ is bytes or client.__class__ is not str:
        fields = list(record)
        if request_id.__class__ is bytes:
            fields[_REQUEST_ID] = request_id.decode("latin-1")
        if headers.__class__ is bytes:
            fields[_RESPONSE_HEADERS] = parse_block(headers)
        if client.__class__ is not str:
            fields[_CLIENT] = client[0] if client else "unknown"
        record = tuple(fields)
    return Entry._make(record)


# A record from ``records_after`` (of this journal or another process's) as an Entry.
as_entry = _entry


# Where the latest runs began: enough for any report to name its runs (a run
# with no entry left needs none), a few hundred bytes each.
RUNS_KEPT = 4096


def _header_bytes(headers: RawHeaders) -> int:
    """The names and values of ``headers``, in bytes."""
    size = 0
    for name, value in headers:
        size += len(name) + len(value)
    return size


def _pairs_cost(headers: RawHeaders, rule: str | None) -> int:
    """What response headers given as pairs hold: estimated for mockstore's own, else counted."""
    if rule is None:  # a standard answer's: short, mockstore's own
        return STANDARD_HEADER_COST * len(headers)  # type: ignore[arg-type]
    # A scripted answer: its headers are the scenario's, counted.
    return HEADER_OVERHEAD * len(headers) + _header_bytes(headers)  # type: ignore[arg-type]


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
