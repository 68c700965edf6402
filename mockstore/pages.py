"""A page of a listing: where it starts, which pets it holds, and the way to the others.

``collections.pagination`` lets a client ask for a page after the first: by an
opaque cursor, an offset or a page number. A page is read from two sorted lists
of members (``mockstore.ordering``): the scenario's pets (the inventory, in this
process) and the pets created since (in memory, or in Redis), merged, so a page
costs O(limit + log n) however large either is (O(log² n) more for an offset
into a listing where the two interleave). ``read_page`` is the one algorithm;
the created pets are any ``CreatedMembers``: a sorted list here, or the reply
of the request script (``mockstore.shared.store``), which ran the same queries.

**Cursors** name the pet a page ends (or begins) at by its member, and the
listing they belong to (the order, the status filter); they are signed with a
key derived from the scenario's seed, so they are stable (the same position
gives the same cursor, in every process) and a cursor altered, made by another
scenario, or used with another filter is refused (``bad_cursor``). Pets are
never deleted and members never change, so a cursor stays valid as pets are
added: a client walking the pages sees every pet that existed when it began
once, in order.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import islice
from typing import Protocol
from urllib.parse import parse_qsl, quote, urlencode

from mockstore.errors import ApiError, FieldProblem
from mockstore.ordering import Ordering
from mockstore.scenario.collections import Collections

Header = tuple[bytes, bytes]
# A cursor longer than this is no cursor of the mock's (refused before decoding).
MAX_CURSOR = 512
_MAC = 12
_VERSION = b"\x01"
_DIGITS = re.compile(r"[0-9]+")
_LENIENT = re.compile(r"\s*\+?([0-9]+)(?:\.0*)?\s*")
_MAX_DIGITS = 18  # every offset of at most 18 digits is an int64


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page begins: ``first``, ``after``/``before`` a member, ``end`` (the last
    page, by cursor), or ``offset`` pets in (offset and page numbers)."""

    kind: str
    member: bytes = b""
    offset: int = 0


FIRST = Position("first")


@dataclass(slots=True)
class Page:
    """The members a page holds, the listing's size, and the pages around it (None: none)."""

    members: list[bytes]
    total: int
    prev: Position | None = None
    next: Position | None = None
    last: Position | None = None
    offset: int = 0  # where the page begins, for a page of an offset or a page number


class CreatedMembers(Protocol):
    """The created pets' members of one listing (one status filter), in ascending order."""

    def size(self) -> int: ...

    def up(self, bound: bytes | None, count: int) -> list[bytes]:
        """The first ``count`` members above ``bound`` (all, for None), ascending."""

    def down(self, bound: bytes | None, count: int) -> list[bytes]:
        """The last ``count`` members below ``bound`` (all, for None), descending."""

    def from_rank(self, start: int, count: int, descending: bool) -> list[bytes]:
        """``count`` members from the ``start``-th, counted from the top when descending."""

    def split(self, inventory: list[bytes], offset: int, descending: bool) -> int:
        """How many inventory members come before the merged listing's ``offset``-th
        (``split``, the search both kinds of store share)."""


class MemberList:
    """``CreatedMembers`` over a sorted list (a store in memory)."""

    __slots__ = ("members",)

    def __init__(self, members: list[bytes]) -> None:
        self.members = members

    def size(self) -> int:
        return len(self.members)

    def up(self, bound: bytes | None, count: int) -> list[bytes]:
        start = 0 if bound is None else bisect_right(self.members, bound)
        return self.members[start : start + count]

    def down(self, bound: bytes | None, count: int) -> list[bytes]:
        end = len(self.members) if bound is None else bisect_left(self.members, bound)
        return self.members[max(0, end - count) : end][::-1]

    def from_rank(self, start: int, count: int, descending: bool) -> list[bytes]:
        if not descending:
            return self.members[start : start + count]
        end = len(self.members) - start
        return self.members[max(0, end - count) : max(0, end)][::-1]

    def split(self, inventory: list[bytes], offset: int, descending: bool) -> int:
        members = self.members
        if descending:
            return split(inventory, offset, True, lambda m: len(members) - bisect_right(members, m))
        return split(inventory, offset, False, lambda m: bisect_left(members, m))


def split(inventory: list[bytes], offset: int, descending: bool, created_before) -> int:  # type: ignore[no-untyped-def]
    """How many of ``inventory`` (ascending) come before the ``offset``-th pet of the merged
    listing; ``created_before(m)`` counts the created members before ``m`` in its order.

    The smallest ``a`` whose ``a``-th inventory member (in the listing's order) has at
    least ``offset`` pets before it: a binary search, O(log² n). The request script does
    the same in Lua (``LUA_SPLIT``) over the inventory members it is given.
    """
    size = len(inventory)
    low, high = 0, min(offset, size)
    while low < high:
        a = (low + high) // 2
        member = inventory[size - 1 - a] if descending else inventory[a]
        if a + created_before(member) >= offset:
            high = a
        else:
            low = a + 1
    return low


# The same search in the request script: KEYS[set] the created members, ``window`` the
# inventory members (in the listing's order) from index ``first`` on, ``offset``.
LUA_SPLIT = r"""
local function created_before(key, member, descending)
  if descending then return redis.call('ZLEXCOUNT', key, '(' .. member, '+') end
  return redis.call('ZLEXCOUNT', key, '-', '(' .. member)
end
local function split(key, window, first, low, high, offset, descending)
  while low < high do
    local a = math.floor((low + high) / 2)
    if a + created_before(key, window[a - first + 1], descending) >= offset then
      high = a
    else
      low = a + 1
    end
  end
  return low
end
"""


def _inventory_up(
    members: list[bytes], bound: bytes | None, count: int, descending: bool
) -> list[bytes]:
    """The inventory members after ``bound`` in the listing's order, nearest first."""
    if not descending:
        start = 0 if bound is None else bisect_right(members, bound)
        return members[start : start + count]
    end = len(members) if bound is None else bisect_left(members, bound)
    return members[max(0, end - count) : end][::-1]


def _inventory_down(
    members: list[bytes], bound: bytes | None, count: int, descending: bool
) -> list[bytes]:
    """The inventory members before ``bound`` in the listing's order, nearest first."""
    return _inventory_up(members, bound, count, not descending)


def read_page(
    inventory: list[bytes],
    created: CreatedMembers,
    ordering: Ordering,
    position: Position,
    limit: int,
) -> Page:
    """The page at ``position`` of the listing of ``inventory`` and ``created`` (ascending)."""
    descending = ordering.descending
    total = len(inventory) + created.size()
    kind = position.kind
    if kind == "offset":
        return _offset_page(inventory, created, ordering, position.offset, limit, total)
    # The last page; when one page holds them all, it is the first.
    end = Position("end") if total > limit else FIRST
    if kind in ("first", "after"):
        bound = position.member if kind == "after" else None
        mine = _inventory_up(inventory, bound, limit + 1, descending)
        theirs = created.down(bound, limit + 1) if descending else created.up(bound, limit + 1)
        merged = list(islice(heapq.merge(mine, theirs, reverse=descending), limit + 1))
        members = merged[:limit]
        page = Page(members, total, last=end)
        if len(merged) > limit:
            page.next = Position("after", members[-1])
        if kind == "after":
            page.prev = (
                Position("before", members[0]) if members else Position("before", bound or b"")
            )
        return page
    bound = position.member if kind == "before" else None
    mine = _inventory_down(inventory, bound, limit + 1, descending)
    theirs = created.up(bound, limit + 1) if descending else created.down(bound, limit + 1)
    nearest = list(islice(heapq.merge(mine, theirs, reverse=not descending), limit + 1))
    members = nearest[:limit][::-1]
    page = Page(members, total, last=end)
    if len(nearest) > limit:
        page.prev = Position("before", members[0])
    if kind == "before":
        page.next = Position("after", members[-1]) if members else FIRST
    return page


def _offset_page(
    inventory: list[bytes],
    created: CreatedMembers,
    ordering: Ordering,
    offset: int,
    limit: int,
    total: int,
) -> Page:
    descending = ordering.descending
    size = len(inventory)
    last = max(0, (total - 1) // limit * limit)
    if offset >= total:
        return Page([], total, Position("offset", offset=last) if offset else None, None,
                    Position("offset", offset=last), offset)  # fmt: skip
    if ordering.order.by_position:
        # No interleaving: the inventory first (ascending), or the created pets first.
        before = min(offset, size) if not descending else max(0, offset - created.size())
    else:
        before = created.split(inventory, offset, descending)
    after = offset - before
    if descending:
        mine = inventory[max(0, size - before - limit) : size - before][::-1]
    else:
        mine = inventory[before : before + limit]
    theirs = created.from_rank(after, limit, descending)
    members = list(islice(heapq.merge(mine, theirs, reverse=descending), limit))
    page = Page(members, total, last=Position("offset", offset=last), offset=offset)
    if offset + limit < total:
        page.next = Position("offset", offset=offset + limit)
    if offset > 0:
        page.prev = Position("offset", offset=max(0, min(offset - limit, last)))
    return page


# -- the same page from a store in Redis ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    """What ``read_page`` will ask of the created members, worked out before it runs: the
    request script answers it in the same round trip that counts the caller.

    ``mode``: ``up`` / ``down`` (``count`` members past ``bound``), ``rank`` (``count``
    from ``start``, in the listing's order), ``head`` (the same from ``min(start, size)``:
    the created pets come first), ``split`` (the offset ``start`` into a listing where the
    two interleave: ``window`` holds the inventory's members from index ``low`` to
    ``high - 1`` in the listing's order, for the search; the script refuses to run when
    more than ``guess`` pets were created, so the window is sure to hold the answer).
    """

    mode: str
    bound: bytes = b""
    count: int = 0
    descending: bool = False
    start: int = 0
    low: int = 0
    high: int = 0
    window: tuple[bytes, ...] = ()
    guess: int = 0


def page_query(
    inventory: list[bytes], ordering: Ordering, position: Position, limit: int, guess: int
) -> Query:
    """The one query ``read_page`` makes of the created members for ``position``."""
    descending = ordering.descending
    kind = position.kind
    if kind in ("first", "after", "before", "end"):
        bound = position.member if kind in ("after", "before") else b""
        forward = kind in ("first", "after")
        return Query("up" if forward != descending else "down", bound, limit + 1, descending)
    offset = position.offset
    if ordering.order.by_position:
        if descending:
            return Query("head", count=limit, descending=True, start=offset)
        return Query("rank", count=limit, start=max(0, offset - len(inventory)))
    size = len(inventory)
    low, high = max(0, offset - guess), min(offset, size)
    window = tuple(
        inventory[size - 1 - a] if descending else inventory[a] for a in range(low, high)
    )
    return Query("split", b"", limit, descending, offset, low, high, window, guess)


class Fetched:
    """``CreatedMembers`` from the request script's answer to one ``Query``."""

    __slots__ = ("before", "members", "query", "total")

    def __init__(self, query: Query, total: int, before: int, members: list[bytes]) -> None:
        self.query = query
        self.total = total
        self.before = before
        self.members = members

    def size(self) -> int:
        return self.total

    def up(self, bound: bytes | None, count: int) -> list[bytes]:
        assert self.query.mode == "up", self.query
        return self.members

    def down(self, bound: bytes | None, count: int) -> list[bytes]:
        assert self.query.mode == "down", self.query
        return self.members

    def from_rank(self, start: int, count: int, descending: bool) -> list[bytes]:
        assert self.query.mode in ("rank", "head", "split"), self.query
        return self.members

    def split(self, inventory: list[bytes], offset: int, descending: bool) -> int:
        assert self.query.mode == "split", self.query
        return self.before


# -- what a request asks for ---------------------------------------------------------


class Cursors:
    """Makes and reads the cursors of one scenario's listings (signed: see the module)."""

    __slots__ = ("_key", "_signature")

    def __init__(self, seed: int, ordering: Ordering) -> None:
        self._key = hashlib.blake2b(b"mockstore-cursor-%d" % seed, digest_size=32).digest()
        self._signature = ordering.signature()

    def _mac(self, payload: bytes) -> bytes:
        return hashlib.blake2b(
            self._signature + b"\x00" + payload, key=self._key, digest_size=_MAC
        ).digest()

    def make(self, position: Position, status: str | None) -> str:
        """The cursor of ``position`` in the listing filtered by ``status``."""
        filtered = (status or "").encode()
        payload = _VERSION + position.kind[:1].encode() + bytes([len(filtered)]) + filtered
        payload += position.member
        return base64.urlsafe_b64encode(payload + self._mac(payload)).rstrip(b"=").decode()

    def read(self, text: str, status: str | None, name: str) -> Position:
        """The position ``text`` names; ``ApiError`` (bad_cursor) for anything else."""
        where = f"query parameter '{name}'"
        if len(text) > MAX_CURSOR:
            raise _bad_cursor(
                f"{where} is not a cursor of this listing ({len(text)} characters)", text, name
            )
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            raise _bad_cursor(f"{where} is not a cursor of this listing", text, name) from None
        payload, mac = raw[:-_MAC], raw[-_MAC:]
        if len(raw) < 3 + _MAC or not _same(mac, self._mac(payload)) or payload[:1] != _VERSION:
            raise _bad_cursor(
                f"{where} is not a cursor of this listing: it was altered, or made by another "
                "scenario or order; follow the Link the mock sent",
                text,
                name,
            )
        kind = {b"a": "after", b"b": "before", b"e": "end"}.get(payload[1:2])
        length = payload[2]
        filtered = payload[3 : 3 + length].decode("utf-8", "replace") or None
        if kind is None:
            raise _bad_cursor(f"{where} is not a cursor of this listing", text, name)
        if filtered != status:
            made = f"status={filtered}" if filtered else "no status filter"
            raise _bad_cursor(
                f"{where} belongs to the listing with {made}; send the same filter with it",
                text,
                name,
            )
        return Position(kind, payload[3 + length :])


def _same(a: bytes, b: bytes) -> bool:
    return hashlib.sha256(a).digest() == hashlib.sha256(b).digest()


def _bad_cursor(message: str, value: str, parameter: str) -> ApiError:
    return _bad("bad_cursor", message, value, parameter)


def _bad_offset(message: str, value: str, parameter: str) -> ApiError:
    return _bad("bad_offset", message, value, parameter)


def _bad(condition: str, message: str, value: str, parameter: str) -> ApiError:
    # The value and parameter at fault, for a scenario's Error templates and details[].
    problem = FieldProblem("query", (parameter,), "format", message, value)
    return ApiError(
        "invalid_parameter",
        message,
        condition=condition,
        value=value,
        parameter=parameter,
        details=(problem,),
    )


def integer_of(raw: str, lenient: bool) -> int | None:
    """A query integer as a non-negative int (``lenient``: also ``7.0`` and spaces), or None."""
    if _DIGITS.fullmatch(raw):
        digits = raw
    elif lenient and (found := _LENIENT.fullmatch(raw)) is not None:
        digits = found.group(1)
    else:
        return None
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_DIGITS else -1


class Pager:
    """One scenario's ``collections.pagination`` and ``order``, compiled: reads a listing
    request's position, and writes the headers of its page."""

    __slots__ = ("collections", "cursors", "ordering", "parameter", "style")

    def __init__(self, collections: Collections, seed: int) -> None:
        self.collections = collections
        self.ordering = Ordering(collections.order)
        self.cursors = Cursors(seed, self.ordering)
        self.style = collections.pagination.style
        self.parameter = collections.page_parameter

    def position(self, query: bytes, status: str | None, limit: int) -> Position:
        """Where the page a query asks for begins; ``ApiError`` for a page it cannot name."""
        if self.style == "limit":
            return FIRST
        name = self.parameter
        given = [
            v for k, v in parse_qsl(query.decode("latin-1"), keep_blank_values=True) if k == name
        ]
        if not given:
            return FIRST if self.style == "cursor" else Position("offset", offset=0)
        if len(given) > 1:
            error = _bad_cursor if self.style == "cursor" else _bad_offset
            raise error(
                f"query parameter '{name}' is given {len(given)} times; give it once",
                given[0],
                name,
            )
        raw = given[0]
        if self.style == "cursor":
            return self.cursors.read(raw, status, name)
        value = integer_of(raw, self.collections.query_numbers == "lenient")
        least = 1 if self.style == "page" else 0
        if value is None or value < least:
            shown = raw if len(raw) <= 40 else raw[:40] + "..."
            raise _bad_offset(
                f"query parameter '{name}' must be a whole number from {least} (got {shown!r})",
                raw,
                name,
            )
        if value < 0 or value > 2**62:
            raise _bad_offset(f"query parameter '{name}' is out of range", raw, name)
        offset = (value - 1) * limit if self.style == "page" else value
        return Position("offset", offset=offset)

    def value(self, position: Position, status: str | None, limit: int) -> str | None:
        """The page parameter's value for ``position`` (None: leave it out)."""
        if self.style == "cursor":
            return None if position.kind == "first" else self.cursors.make(position, status)
        if self.style == "page":
            return str(position.offset // limit + 1)
        return str(position.offset)

    def headers(
        self,
        page: Page,
        query: bytes,
        status: str | None,
        limit: int,
        path: str,
        origin: str | None,
    ) -> tuple[Header, ...]:
        """The page's ``Link`` (its relations, in the scenario's order) and total count."""
        pagination = self.collections.pagination
        headers: list[Header] = []
        if pagination.links:
            targets = {
                "next": page.next,
                "prev": page.prev,
                "first": FIRST if self.style == "cursor" else Position("offset", offset=0),
                "last": page.last,
            }
            pairs = [
                (k, v)
                for k, v in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
                if k != self.parameter
            ]
            base = (origin or "") + path if pagination.link_urls == "absolute" else path
            parts = []
            for rel in pagination.links:
                target = targets[rel]
                if target is None:
                    continue
                value = self.value(target, status, limit)
                query_text = urlencode(
                    pairs + ([(self.parameter, value)] if value is not None else []),
                    quote_via=quote,
                )
                parts.append(f'<{base}{"?" + query_text if query_text else ""}>; rel="{rel}"')
            if parts:
                headers.append((b"link", ", ".join(parts).encode("latin-1", "replace")))
        if pagination.total_header is not None:
            headers.append((pagination.total_header.lower().encode(), str(page.total).encode()))
        if pagination.page_headers:
            headers += page_headers(pagination.page_headers, page, limit)
        return tuple(headers)


def page_headers(names: tuple[tuple[str, str], ...], page: Page, limit: int) -> list[Header]:
    """GitLab's page headers (``collections.pagination.page_headers``): the page's number
    and size, how many pages the listing has, and the next and previous page's numbers
    (empty where there is none), for a page of style ``page``."""
    number = page.offset // limit + 1
    figures = {
        "page": str(number),
        "per_page": str(limit),
        "total_pages": str(max(1, -(-page.total // limit))),
        "next_page": str(number + 1) if page.next is not None else "",
        "prev_page": str(number - 1) if number > 1 else "",
    }
    return [(name.lower().encode(), figures[figure].encode()) for figure, name in names]
