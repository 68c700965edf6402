"""Conditional requests (RFC 9110 section 13): validators, and when a read is not modified.

A read that a scenario makes conditional (``http.conditional.operations``)
answers a ``GET`` or ``HEAD`` whose ``If-None-Match`` names its current ETag
(weak comparison: ``W/"x"`` and ``"x"`` match; strong with ``comparison: strong``),
or ``*``, with 304 Not Modified; without ``If-None-Match``, one whose
``If-Modified-Since`` is not before its ``Last-Modified``. The ETag is the profile's
digest of the body (``behaviour.etag``); ``Last-Modified`` is worked out here.

**Last-Modified.** Pets are never changed or deleted, only created, so a pet's
representation last changed when it was created: the scenario's own pets at
``http.conditional.pets_modified``, a created pet at its creation. A listing
last changed when the newest of the pets it shows was created (an empty one:
``pets_modified``). Creation instants are kept per second, as change points:
the first id created in each second (ids only grow), so a store keeps at most
one small pair per created pet, and usually far fewer; each is charged to the
state's share of the memory budget before it is kept (refused, the pet dates from
the change point before it: an older validator, never a newer one). A header never states an
instant after its answer's own: ``Last-Modified`` is at most ``now``.

Pure: no HTTP framework; the web layer reads the request's headers and calls in.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from email.utils import parsedate_to_datetime


def _opaque(tag: bytes) -> bytes:
    """An entity tag's opaque part (weak comparison ignores ``W/``)."""
    tag = tag.strip()
    return tag[2:] if tag[:2] in (b"W/", b"w/") else tag


def none_match(header: bytes, etag: bytes, strong: bool = False) -> bool:
    """Whether ``If-None-Match: header`` names ``etag`` (or ``*``): the read is not modified.

    ``strong``: compared strongly, as some servers do against RFC 9110's weak comparison
    (``http.conditional.comparison``): both tags must be strong and the same."""
    if header.strip() == b"*":
        return True
    if strong:
        wanted = etag.strip()
        return not _weak(wanted) and any(
            tag.strip() == wanted for tag in header.split(b",") if tag.strip()
        )
    wanted = _opaque(etag)
    return any(_opaque(tag) == wanted for tag in header.split(b",") if tag.strip())


def _weak(tag: bytes) -> bool:
    return tag[:2] in (b"W/", b"w/")


def modified_since(header: bytes, last_modified: int) -> bool | None:
    """Whether a representation of ``last_modified`` (whole seconds) changed since
    ``If-Modified-Since: header``; None for a date that does not parse (ignored)."""
    try:
        since = parsedate_to_datetime(header.decode("latin-1"))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if since is None or since.tzinfo is None:
        return None
    return last_modified > since.timestamp()


def not_modified(
    if_none_match: bytes | None,
    if_modified_since: bytes | None,
    etag: bytes | None,
    last_modified: int | None,
    strong: bool = False,
) -> bool:
    """Whether a GET or HEAD answered with these validators is 304 (RFC 9110 section 13.2.2).

    If-None-Match decides when it is given (against the ETag; without one, no
    tag matches); else If-Modified-Since, against Last-Modified.
    """
    if if_none_match is not None:
        # "*" names any current representation, whatever its validators (section 13.1.2).
        if if_none_match.strip() == b"*":
            return True
        return etag is not None and none_match(if_none_match, etag, strong)
    if if_modified_since is not None and last_modified is not None:
        return modified_since(if_modified_since, last_modified) is False
    return False


# What one change point holds: two 8-byte integers (charged to the state's memory budget).
POINT_BYTES = 16


class CreationSeconds:
    """When each pet of one store was created, to the second, as change points.

    ``first_ids[i]`` is the first id created in second ``seconds[i]``; a pet's
    creation second is that of the last change point at or before its id. The
    scenario's own pets (ids below the first point, or every pet when none was
    created) date from ``pets_modified``.
    """

    __slots__ = ("first_ids", "pets_modified", "seconds")

    def __init__(self, pets_modified: float) -> None:
        self.pets_modified = math.floor(pets_modified)
        self.first_ids = array("q")
        self.seconds = array("q")

    def adds(self, pet_id: int, now: float) -> bool:
        """Whether noting a pet created at ``now`` adds a change point (``POINT_BYTES``)."""
        if self.seconds and self.seconds[-1] == math.floor(now):
            return False
        # An id is never reused: a note out of order adds nothing.
        return not (self.first_ids and pet_id <= self.first_ids[-1])

    def note(self, pet_id: int, now: float) -> None:
        """A pet was created at ``now``."""
        if self.adds(pet_id, now):
            self.first_ids.append(pet_id)
            self.seconds.append(math.floor(now))

    def of(self, pet_id: int) -> int:
        """The second pet ``pet_id`` was created in (``pets_modified`` for the scenario's)."""
        at = bisect_right(self.first_ids, pet_id)
        return self.seconds[at - 1] if at else self.pets_modified


def last_modified(seconds: list[int], pets_modified: float, now: float) -> int:
    """A representation's Last-Modified: the latest of its pets' (``pets_modified`` when it
    shows none), never after ``now``."""
    latest = max(seconds, default=math.floor(pets_modified))
    return min(latest, math.floor(now))


__all__ = [
    "POINT_BYTES",
    "CreationSeconds",
    "last_modified",
    "modified_since",
    "none_match",
    "not_modified",
]
