"""Journal records as they travel between processes through Redis: MessagePack, checked on entry.

A process ships the records its journal stored (``Journal.records_after``:
``Entry``'s fields in order, header blocks not parsed yet) to the shared
stream (``mockstore.shared.journal``), and every process reads back what all of
them shipped. Whatever is read from Redis is input, as a request is: anyone who
can write to that Redis can write anything there. So a batch is data only, in a
format whose reader never sizes anything from what a value claims: MessagePack
read with ``msgpack``'s limits, which it takes from the payload's own length (an
array claiming 2**32 items in a 5-byte value is refused, not allocated; ``marshal``
allocated what such a value claimed, 1 GiB). The payload's length is checked
before it is read at all (``MAX_PAYLOAD``, by the script that reads the stream),
and every record is then checked field by field before it becomes an entry: a
batch that does not decode, or a record of the wrong shape, types or range, is
skipped and counted (the caller logs a warning), never raised. ``Journal.add``
then cuts each entry's headers and bodies to the journal's own bounds and
charges the memory budget, as for the process's own answers.

Why MessagePack and not the standard library's JSON: bytes (headers, bodies)
are native to it, so a record goes as the journal stores it, where JSON needs
every bytes field turned into text and back. On a journal record of a listing
(``bench/shared_state.py --codec``): JSON 12.7 µs to encode and 15.2 µs to decode
with the checks, MessagePack 1.2 µs and 3 µs, ``marshal`` 0.5 µs and 0.7 µs;
every process decodes every other process's traffic, so JSON would cost a
Redis-backed process a fifth of a core at 10,000 requests a second.
"""

from __future__ import annotations

import math
from operator import itemgetter
from typing import Any

import msgpack

from mockstore.journal import Entry

FIELDS = len(Entry._fields)
# A record shipped by a process of a version that keeps no ``refused_until`` (the
# field came last, after ``arrived_after``), as replicas of two versions share one
# Redis during an upgrade: read as the limiter's decision not known (-1.0), as an
# entry read from a recording is, rather than lost.
_REFUSED_UNTIL = Entry._fields.index("refused_until")
assert _REFUSED_UNTIL == FIELDS - 1, "a record without it is read by appending it"
_NOT_DECIDED = Entry._field_defaults["refused_until"]
# A batch of at most this many records, and a payload of at most this many bytes
# (the shipper cuts batches to fit; a record larger alone goes in a batch of its own).
BATCH_RECORDS = 500
BATCH_BYTES = 1024 * 1024
# What a reader takes in one payload at most: a batch, or one record that is larger
# alone (a journal's bodies and headers at their largest, cut by the journal first).
MAX_PAYLOAD = 16 * 1024 * 1024
# Headers in one record at most (the serving limits allow far fewer).
MAX_HEADERS = 1000
# Numbers a record may hold: instants and durations in seconds, sequence numbers.
MAX_NUMBER = 2**53
# Short text fields: request id, method, client, operation, key, plan, rule, outcome.
MAX_SHORT = 4096

# The fields of one type only, and that type (MessagePack gives arrays back as tuples).
_FIXED = itemgetter(0, 4, 5, 6, 7, 8, 13, 15, 18, 20, 21)
_FIXED_TYPES = (int, str, str, bytes, tuple, bytes, int, bytes, str, int, int)
# The others, as the server stores them: the request id as the header's bytes or as
# text, the ASGI client as (host, port), a header block as bytes or as pairs.
_NUMBER = (int, float)
_MAYBE_NUMBER = (int, float, type(None))
_MAYBE_TEXT = (str, type(None))
_SHORT = itemgetter(1, 4, 18)


def encode(records: list[tuple[Any, ...]]) -> bytes:
    """A batch of stored records as it goes to Redis."""
    return msgpack.packb(records, use_bin_type=True)


def decode(payload: bytes) -> list[tuple[Any, ...] | None] | None:
    """The rows of a batch read from Redis, None in place of each one not valid; None
    when the payload is not a batch at all.

    Each row is checked on its own, so one bad record costs only itself.
    """
    if len(payload) > MAX_PAYLOAD:
        return None
    try:
        # Every limit (array, map, string and bytes lengths) defaults to the
        # payload's length: nothing is sized from a claim the payload cannot back.
        rows = msgpack.unpackb(payload, use_list=False, raw=False)
    except Exception:  # any malformed payload, whichever msgpack error says so
        return None
    if rows.__class__ is not tuple or not rows:
        return None
    return [record if valid(record := _completed(row)) else None for row in rows]


def _completed(row: Any) -> Any:
    """``row`` with the fields a record of an older version leaves out, as their defaults."""
    if row.__class__ is tuple and len(row) == _REFUSED_UNTIL:
        return (*row, _NOT_DECIDED)
    return row


def valid(row: Any) -> bool:
    """Whether ``row`` is a record as a server stores one: shape, types, ranges."""
    if row.__class__ is not tuple or len(row) != FIELDS:
        return False
    if tuple(map(type, _FIXED(row))) != _FIXED_TYPES:
        return False
    (seq, request_id, time, elapsed, _method, _path, _query, request_headers, _body, client,
     operation, key, plan, status, response_headers, _answer, latency, rule, _outcome, wall,
     run, arrived_after, refused_until) = row  # fmt: skip
    if not (
        request_id.__class__ in (str, bytes)
        and refused_until.__class__ in _NUMBER
        and time.__class__ in _NUMBER
        and elapsed.__class__ in _NUMBER
        and latency.__class__ in _NUMBER
        and wall.__class__ in _MAYBE_NUMBER
        and operation.__class__ in _MAYBE_TEXT
        and key.__class__ in _MAYBE_TEXT
        and plan.__class__ in _MAYBE_TEXT
        and rule.__class__ in _MAYBE_TEXT
    ):
        return False
    return (
        0 <= seq <= MAX_NUMBER
        and 0 <= status <= 999
        and 0 <= run <= MAX_NUMBER
        and -MAX_NUMBER <= arrived_after <= MAX_NUMBER  # below -1: an index, resolved
        and _instant(time)
        and _instant(elapsed)
        and _instant(latency)
        and _instant(refused_until)  # (the limiter's decision: -1.0, 0.0 or an instant)
        and (wall is None or _instant(wall))
        and max(map(len, _SHORT(row))) <= MAX_SHORT
        and (operation is None or len(operation) <= MAX_SHORT)
        and (key is None or len(key) <= MAX_SHORT)
        and (plan is None or len(plan) <= MAX_SHORT)
        and (rule is None or len(rule) <= MAX_SHORT)
        and _client(client)
        and _headers(request_headers)
        and (response_headers.__class__ is bytes or _headers(response_headers))
    )


def _instant(value: float) -> bool:
    return math.isfinite(value) and -MAX_NUMBER <= value <= MAX_NUMBER


def _client(client: Any) -> bool:
    """Text, None, or the ASGI (host, port) pair."""
    if client.__class__ is tuple:
        return (
            len(client) == 2
            and client[0].__class__ is str
            and len(client[0]) <= MAX_SHORT
            and client[1].__class__ is int
        )
    return client is None or len(client) <= MAX_SHORT


def _headers(headers: tuple[Any, ...]) -> bool:
    if len(headers) > MAX_HEADERS:
        return False
    for pair in headers:
        if pair.__class__ is not tuple or len(pair) != 2:
            return False
        name, value = pair
        if name.__class__ is not bytes or value.__class__ is not bytes:
            return False
    return True
