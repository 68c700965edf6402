"""The request journal: a bounded record of every exchange.

Recording must be cheap on the hot path, so an entry keeps the raw ASGI
headers and body bytes as they are; decoding and masking happen only when
the journal is read. The ring buffer holds each exchange as a plain tuple of
bytes, strings, numbers and tuples of those (``Entry`` objects are made when it
is read): the cyclic garbage collector stops tracking such tuples after their
first collections, so 10,000 recorded exchanges add nothing to the collections
that run while the server works.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from mockstore.keys import is_alias

RawHeaders = Iterable[tuple[bytes, bytes]]


class Entry(NamedTuple):
    """One request and its response.

    ``key`` is the full API key the request was counted against (None without
    a valid key); ``status`` is 0 when a connection fault left no response;
    bodies are cut at the journal's ``body_bytes``. ``time`` is the scenario
    clock and ``wall`` the wall clock when the exchange was answered (None in
    entries read from a recording that did not say). Entries are immutable, so
    readers may share them across threads.
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
    """Keep enough of a key to tell keys apart, never the whole of it.

    A key alias (``key_alias``) reveals nothing and is shown as it is.
    """
    if is_alias(secret):
        return secret
    if len(secret) <= 4:
        return "****"
    return secret[:4] + "*" * min(8, len(secret) - 4)


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

    def __init__(self, size: int, body_bytes: int) -> None:
        self.size = size
        self.body_bytes = body_bytes
        self._entries: deque[tuple[Any, ...]] = deque(maxlen=size or None)
        self._seq = 0
        self.enabled = size > 0
        self.dropped = 0

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def append(self, entry: Entry) -> None:
        """Append an entry as it is (its ``seq`` already taken with ``next_seq``)."""
        if not self.enabled:
            return
        if len(self._entries) == self.size:
            self.dropped += 1
        self._entries.append(tuple(entry))

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
        /,
    ) -> None:
        """Append one exchange, numbering it and cutting its bodies to ``body_bytes``.

        The parameters are ``Entry``'s fields after ``seq``, in its order, and
        positional: this runs once per request, and naming 19 arguments at the
        call costs more than the rest of it (``tests/test_journal.py`` checks
        that every field lands where it belongs).
        """
        if not self.enabled:
            return
        self._seq += 1
        if len(self._entries) == self.size:
            self.dropped += 1
        cap = self.body_bytes
        # A plain tuple in Entry's field order, not an Entry: see the module docstring.
        self._entries.append(
            (
                self._seq,
                request_id,
                time,
                elapsed,
                method,
                path,
                query,
                request_headers,
                request_body[:cap],
                client,
                operation,
                key,
                plan,
                status,
                response_headers,
                response_body[:cap],
                latency_ms,
                rule,
                outcome,
                wall,
            )
        )

    def clear(self) -> None:
        """Forget every entry (and the count of dropped ones); ``last_seq`` stays."""
        self._entries.clear()
        self.dropped = 0

    def resize(self, size: int, body_bytes: int) -> None:
        """Apply a new scenario's ``journal:`` settings, keeping the newest entries."""
        self.size = size
        self.body_bytes = body_bytes
        self.enabled = size > 0
        if size and len(self._entries) > size:
            self.dropped += len(self._entries) - size
        self._entries = deque(self._entries, maxlen=size or None)

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
    ) -> list[Entry]:
        """Entries in order, filtered; ``since`` keeps those after a sequence number.

        ``key`` is the full API key the request was counted against.
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
        ]


# Where each field sits in a stored record, for ``select``'s filters.
_SEQ, _OPERATION, _KEY, _STATUS = (
    Entry._fields.index(name) for name in ("seq", "operation", "key", "status")
)
