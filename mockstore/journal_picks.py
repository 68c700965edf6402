"""A journal's records picked on the event loop, made entries where they are read.

A record becomes an ``Entry`` by parsing its response header block and
making a named tuple: for a full journal (10,000 records) that took tens of
milliseconds, and the control API did it on the event loop for every request
list, HAR and verification before handing the work to a worker thread, so
every other client waited behind it. Picking copies the journal's records
and filters them (a C-level copy and a tuple comparison each); ``Picked``
makes each entry only as it is read, in the worker that encodes or checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, overload

Record = tuple[Any, ...]
Made = TypeVar("Made")


class Picked(Sequence[Made]):
    """Records, each made an entry (``make``) when read; as a list of entries, but lazy.

    Iterate it once (or ``list`` it) where the work runs: each read makes the
    entry anew.
    """

    __slots__ = ("_make", "_records")

    def __init__(self, records: list[Record], make: Callable[[Record], Made]) -> None:
        self._records = records
        self._make = make

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> Made: ...

    @overload
    def __getitem__(self, index: slice) -> list[Made]: ...

    def __getitem__(self, index: int | slice) -> Made | list[Made]:
        if isinstance(index, slice):
            return list(map(self._make, self._records[index]))
        return self._make(self._records[index])

    def __iter__(self) -> Iterator[Made]:
        return map(self._make, self._records)
