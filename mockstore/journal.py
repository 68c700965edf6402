"""The request journal: a bounded record of every exchange.

Recording must be cheap on the hot path, so an entry keeps the raw ASGI
header lists and body bytes as they are; decoding and masking happen only
when the journal is read.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

RawHeaders = Iterable[tuple[bytes, bytes]]


@dataclass(slots=True)
class Entry:
    """One request and its response."""

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

    def header(self, name: str) -> str | None:
        target = name.lower().encode()
        for key, value in self.request_headers:
            if key.lower() == target:
                return value.decode("latin-1")
        return None

    def response_header(self, name: str) -> str | None:
        target = name.lower().encode()
        for key, value in self.response_headers:
            if key.lower() == target:
                return value.decode("latin-1")
        return None

    def json_body(self) -> Any:
        try:
            return json.loads(self.request_body)
        except ValueError:
            return None

    def response_json(self) -> Any:
        try:
            return json.loads(self.response_body)
        except ValueError:
            return None

    def to_dict(self) -> dict[str, Any]:
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
    """Keep enough of a key to tell keys apart, never the whole of it."""
    if len(secret) <= 4:
        return "****"
    return secret[:4] + "*" * min(8, len(secret) - 4)


def decode_headers(headers: RawHeaders, mask_auth: bool = False) -> list[list[str]]:
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
    """A ring buffer of entries; the oldest go first when it is full."""

    def __init__(self, size: int = 10_000, body_bytes: int = 4096) -> None:
        self.size = size
        self.body_bytes = body_bytes
        self._entries: deque[Entry] = deque(maxlen=size or None)
        self._seq = 0
        self.enabled = size > 0
        self.dropped = 0

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def append(self, entry: Entry) -> None:
        if not self.enabled:
            return
        if len(self._entries) == self.size:
            self.dropped += 1
        self._entries.append(entry)

    def clear(self) -> None:
        self._entries.clear()
        self.dropped = 0

    def resize(self, size: int, body_bytes: int) -> None:
        self.size = size
        self.body_bytes = body_bytes
        self.enabled = size > 0
        self._entries = deque(self._entries, maxlen=size or None)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._entries))

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
        """Entries in order, filtered; ``since`` keeps those after a sequence number."""
        return [
            e
            for e in self._entries
            if (operation is None or e.operation == operation)
            and (key is None or e.key == key)
            and (status is None or e.status == status)
            and (since is None or e.seq > since)
        ]
