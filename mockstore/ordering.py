"""The order of a listing as bytes: each pet's *member*, whose byte order is the listing's.

``collections.order`` orders pets by a field (``name``, ``categoryId``, ``status``),
by id or by arrival, ties by id. A pet's member is its field's value encoded so
that comparing two members byte by byte compares the pets in that order (the
ascending sense; a descending listing reads the same members from the other
end), then its id, in a fixed-width form. One encoding serves everywhere:

- in memory, a store keeps its members in sorted lists (``bisect``);
- in Redis, the created pets' members are a sorted set read by lexical range
  (``ZRANGEBYLEX``), whose order is this byte order;
- a cursor (``mockstore.pages``) carries the member of the pet a page ends at.

Text (a name, a status) is UTF-8, whose byte order is the code points' order,
with ``\\x00`` escaped and a ``\\x00\\x00`` end, so a name that is a prefix of
another sorts first; ``case: insensitive`` compares it lower-cased first. A pet
without a status sorts after every status (``\\xff`` begins no UTF-8 text).

The id part is written in two places: here, and in the Lua of the request
script (``LUA_ID_PART``, which ``mockstore.shared.scripts`` includes), since the
script assigns a created pet's id. Both are side by side here, and
``tests/test_ordering.py`` drives both.
"""

from __future__ import annotations

import struct
from typing import Any

from mockstore.scenario.collections import Order

ID_DIGITS = 20
_SHIFT = 10**ID_DIGITS  # a negative id n is written as _SHIFT + n, after b"\x00"
_INT64 = 2**63
_MISSING = b"\xff"
_END = b"\x00\x00"


def id_part(pet_id: int) -> bytes:
    """An id as 21 bytes whose order is the ids' order: a sign byte and 20 digits."""
    if pet_id >= 0:
        return b"\x01%020d" % pet_id
    return b"\x00%020d" % (_SHIFT + pet_id)


# The same for a created pet, whose id (always positive) the request script assigns:
# ``member_of(prefix, id)`` in Lua, ``id`` the decimal text of the id.
LUA_ID_PART = r"""
local function member_of(prefix, id)
  return prefix .. '\1' .. string.rep('0', 20 - #id) .. id
end
local function id_of(member)
  return string.match(string.sub(member, -20), '^0*(%d+)$')
end
"""


def id_of(member: bytes) -> int:
    """The id a member ends with (``id_part``'s inverse)."""
    digits = int(member[-ID_DIGITS:])
    return digits if member[-ID_DIGITS - 1] == 1 else digits - _SHIFT


def _text(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\x01") + _END


class Ordering:
    """``collections.order`` compiled: the member of each pet, and what orders it."""

    __slots__ = ("by", "descending", "lower", "order")

    def __init__(self, order: Order) -> None:
        self.order = order
        self.by = order.by
        self.descending = order.descending
        self.lower = order.case == "insensitive"

    def prefix(self, pet: dict[str, Any], position: int | None = None) -> bytes:
        """A pet's member without its id: its field's value (``position``: the scenario's
        pets' place in the file, for ``insertion``; None for a created pet)."""
        by = self.by
        if by == "id":
            return b""
        if by == "insertion":
            return b"\x01" if position is None else b"\x00%020d" % position
        if by == "categoryId":
            return struct.pack(">Q", pet["categoryId"] + _INT64)
        value = pet.get(by)
        if not isinstance(value, str):
            return _MISSING
        return _text(value.lower() if self.lower else value)

    def member(self, pet: dict[str, Any], position: int | None = None) -> bytes:
        return self.prefix(pet, position) + id_part(pet["id"])

    def signature(self) -> bytes:
        """What a cursor made under this order is bound to."""
        order = self.order
        return f"{order.by}:{order.direction}:{order.case}".encode()
