"""Every connection's first bytes of a request body, kept for it whatever others hold.

The connections' share of the memory budget (``memory.SHARES``) holds what
clients make the server hold for them: answers waiting on readers that never
read, large listings, pipelined queues, heads spanning reads, request bodies.
Hostile clients can fill it, and did in ``bench/held_mix.py``: a well-behaved
client's 40-byte create was answered 507 ``memory_budget`` ("20 bytes left of
32 MiB") while readers that never read held the share. A front proxy gives
every connection a small buffer of its own for this reason: a client that
sends a small request is served while others hog what is shared.

So a share of its own (``SHARES["bodies"]``: its floor is its ceiling, held
from the start) is split evenly between the connections the server may have
open (``Limits.max_connections``): each request body takes its first
``each`` bytes from it and only the rest from the connections' share. A
connection reads at most one request body at a time (requests it pipelines
wait in its queue, charged there), so even every connection at once reading
a body fits: a body of at most ``each`` bytes (256 bytes to a few KiB) is
never refused for memory, whoever holds the rest. Should the kept share be
short all the same (a connection still reading a body after it was replaced
past the limit), the body draws on the connections' share as before.

Nothing is taken from what the budget holds for others: the kept share is a
floor of the whole, like the connections' own.
"""

from __future__ import annotations

from mockstore.memory import Account


class BodyReserve:
    """The kept share and the connections' share a request body is charged to.

    ``kept`` is the share kept for first bytes (``MemoryBudget.bodies``),
    ``connections`` the connections' share, ``max_connections`` how many
    connections may be open at once (each is kept an equal part of ``kept``).
    """

    __slots__ = ("connections", "each", "kept")

    def __init__(self, connections: Account, kept: Account, max_connections: int) -> None:
        self.connections = connections
        self.kept = kept
        self.each = kept.ceiling // max(1, max_connections)

    def charge(self) -> BodyCharge:
        """What one request body holds while it is read, charged as it arrives."""
        return BodyCharge(self)


class BodyCharge:
    """One request body's charge: its first bytes from the kept share, the rest shared.

    ``take`` before holding a chunk (False: the connections' share has no room
    for the part beyond what was kept, and nothing of this chunk is held);
    ``release`` once, when the body is let go.
    """

    __slots__ = ("_kept", "_reserve", "_shared")

    def __init__(self, reserve: BodyReserve) -> None:
        self._reserve = reserve
        self._kept = 0  # bytes held in the kept share
        self._shared = 0  # bytes held in the connections' share

    def take(self, size: int) -> bool:
        reserve = self._reserve
        kept = min(size, reserve.each - self._kept)
        if kept > 0 and reserve.kept.reserve(kept):
            self._kept += kept
            size -= kept
            if not size:
                return True
            if reserve.connections.reserve(size):
                self._shared += size
                return True
            reserve.kept.release(kept)  # nothing of a refused chunk is held
            self._kept -= kept
            return False
        if reserve.connections.reserve(size):
            self._shared += size
            return True
        return False

    def release(self) -> None:
        reserve = self._reserve
        if self._kept:
            reserve.kept.release(self._kept)
            self._kept = 0
        if self._shared:
            reserve.connections.release(self._shared)
            self._shared = 0
