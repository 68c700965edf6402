"""One memory budget for the whole process: every byte held for a caller draws on it.

Bounds per component multiply: 32 tenants, each with a journal of 48 MiB and a
store of 32 MiB, are 2.5 GB, however reasonable each bound looks alone. So
what the process holds for its callers is reserved from one ``MemoryBudget``
(``mockstore serve --memory-budget``) before it is held, and given back when
it is let go: journals, stores (shared and per key), list caches, the pets of
every scenario in service, issued keys, scenarios being built, request bodies
being read, heads that span reads, and answers waiting on a slow reader. Past
the budget a caller is answered 507 ``memory_budget`` (or, for what no caller
waits on, the oldest journal entries make room), never growth.

**Shares.** The budget is a tree of ``Account``s. Each share has a *ceiling*
(the most it may hold, so that one tenant, one key or one flood of slow
readers cannot take what the others need) and a *floor* (reserved from its
parent when it opens, so that it can always hold that much). Floors are what
may never add up to more than the whole: a tenant whose floor the budget
cannot give is not created. Ceilings may add up to more, since every share
draws on the same budget (``SHARES`` gives the fractions).

**Giving way.** What is held for no live caller (the journals of deleted
tenants, kept for the server's report) gives way before live work is refused:
a reservation the budget cannot give asks those holders (``give_way_to``) to
let go of what it needs, oldest first, and is tried once more.

A closed account (a deleted tenant, a state replaced by a reset) gives back
everything it held at once; what is still reserved against it afterwards (a
request that began before the reset) is not counted, since it dies with that
request.

Not counted: the interpreter, the libraries and the server's own tables
(about 41 MiB resident at start), and per-request working memory, which is
bounded by the serving limits. The docs (Security, "One memory budget") give the
constant the tests and the soak allow on top of the budget.

Accounts are changed on the event loop and by scenario builds in worker
threads, so every change holds the tree's one lock (a few tenths of a
microsecond; nothing on the request path reserves per request).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# Fits a 512 MiB container: the budget, the ~41 MiB the process holds before
# any caller, and the documented allowance for working memory and allocator
# slack (docs: Security) stay under 512 MiB.
DEFAULT_MEMORY_BUDGET = 256 * MiB
# Smaller than this, a server cannot hold the default scenario's journal floor.
MIN_MEMORY_BUDGET = 16 * MiB

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": KiB, "m": MiB, "g": GiB, "t": 1024 * GiB}


def parse_size(text: str) -> int:
    """``256MiB``, ``1.5GiB``, ``512M``, ``300000000``: bytes. Units are binary (M = MiB).

    Raises ``ValueError`` with a sentence for anything else.
    """
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r} (write it as 256MiB, 1GiB or a number of bytes)")
    number, unit, _ = match.groups()
    return int(float(number) * _UNITS[unit.lower()])


def format_size(size: int) -> str:
    """Bytes in the largest binary unit that keeps a short figure: ``256 MiB``, ``1.5 GiB``."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


@dataclass(frozen=True, slots=True)
class Share:
    """A share's ceiling and floor, as fractions of the whole budget."""

    ceiling: float
    floor: float = 0.0


# How the budget is shared. The floors add up to at most 1/8 + 1/16 + 1/32 +
# 32/64 = 23/32 of the budget with every tenant in use (tenants.MAX_TENANTS is
# 32), 7/32 with none; the rest goes to whoever needs it, within the ceilings.
SHARES: dict[str, Share] = {
    # The server's own mock (its journal, stores, keys, its scenario's pets).
    "server": Share(ceiling=1.0, floor=1 / 8),
    # Each tenant: at most a quarter, so that four busy tenants leave room;
    # at least 4 MiB of a 256 MiB budget (its tables, its stores, its journal).
    "tenant": Share(ceiling=1 / 4, floor=1 / 64),
    # Each key's own store under ``isolation: per_key``.
    "key": Share(ceiling=1 / 16),
    # Connections: request bodies being read, heads spanning reads, answers
    # waiting on slow readers.
    "connections": Share(ceiling=1 / 4, floor=1 / 16),
    # The first bytes of every connection's request body, kept for it whoever holds
    # the connections' share (``body_reserve``): all floor.
    "bodies": Share(ceiling=1 / 32, floor=1 / 32),
    # Scenarios being parsed and built (one at a time, see ``MemoryBudget.building``).
    "builds": Share(ceiling=1 / 2),
    # Reports being built from a journal (HARs are written a batch at a time instead).
    "reports": Share(ceiling=1 / 2),
    # The journals of deleted tenants, kept for the server's report (``KeptJournals``).
    "kept": Share(ceiling=1 / 4),
}


class OverBudget(Exception):
    """A reservation the budget (or a share of it) cannot give; ``str()`` says what and why."""

    def __init__(self, what: str, size: int, account: Account) -> None:
        self.what = what
        self.size = size
        self.account = account
        root = account.root
        message = (
            f"{what} needs {format_size(size)} more and the memory budget has "
            f"{format_size(account.available)} left for it ({format_size(root.used)} of "
            f"{format_size(root.ceiling)} held, --memory-budget)"
        )
        if account is not root and account.used + size > account.ceiling:
            message += f"; {account.name} may hold at most {format_size(account.ceiling)}"
        super().__init__(message)


class Account:
    """A share of the budget: reserve before holding, release after letting go.

    ``ceiling``: the most this share may hold. ``floor``: held from the parent
    from the start, so always available here. ``used``: what is reserved now.
    """

    __slots__ = ("_lock", "ceiling", "closed", "floor", "name", "parent", "used")

    def __init__(
        self,
        name: str,
        ceiling: int,
        *,
        parent: Account | None = None,
        floor: int = 0,
        lock: threading.Lock | None = None,
    ) -> None:
        self.name = name
        self.parent = parent
        self.ceiling = ceiling
        self.floor = min(floor, ceiling)
        self.used = 0
        self.closed = False
        self._lock = lock if lock is not None else threading.Lock()

    @property
    def root(self) -> Account:
        account = self
        while account.parent is not None:
            account = account.parent
        return account

    @property
    def available(self) -> int:
        """What this share could reserve now: its own room, within its ancestors'."""
        with self._lock:
            return max(0, self._room())

    def _room(self) -> int:
        room = self.ceiling - self.used
        if self.parent is not None and not self.closed:
            # The unused part of the floor is already held by the parent.
            spare = max(self.used, self.floor) - self.used
            room = min(room, spare + self.parent._room())
        return room

    def share(self, name: str, ceiling: int, floor: int = 0) -> Account:
        """A share of this account; its floor is reserved now (``OverBudget`` if it cannot be)."""
        child = Account(name, min(ceiling, self.ceiling), parent=self, floor=floor, lock=self._lock)
        if child.floor:
            with self._lock:
                held = self._reserve(child.floor)
            if not held:
                raise OverBudget(f"{name} (its floor)", child.floor, self)
        return child

    def reserve(self, size: int) -> bool:
        """Reserve ``size`` bytes; False (nothing reserved) if this share or the budget is full.

        When only the budget is full, what may give way does first (see the module
        docstring), outside the lock: giving way releases through it.
        """
        if size <= 0:
            return True
        with self._lock:
            if self._reserve(size):
                return True
            short = self._short_of_the_whole(size)
        root = self.root
        if short and isinstance(root, MemoryBudget) and root.make_room(short, self):
            with self._lock:
                return self._reserve(size)
        return False

    def _short_of_the_whole(self, size: int) -> int:
        """How much more the whole budget would need to give ``size`` here; 0 when this
        share's ceiling (or an ancestor's, below the whole) refuses it anyway."""
        account: Account = self
        grow = size
        while account.parent is not None:
            if account.closed or account.used + grow > account.ceiling:
                return 0
            grow = max(account.used + grow, account.floor) - max(account.used, account.floor)
            account = account.parent
        return max(0, account.used + grow - account.ceiling)

    def take(self, size: int, what: str) -> None:
        """Reserve ``size`` bytes for ``what``, or raise ``OverBudget`` saying so."""
        if not self.reserve(size):
            raise OverBudget(what, size, self)

    def release(self, size: int) -> None:
        """Give back ``size`` bytes reserved earlier."""
        if size <= 0:
            return
        with self._lock:
            self._release(size)

    def close(self) -> None:
        """Give back everything (the floor too); later reservations against it are not counted."""
        with self._lock:
            if self.closed:
                return
            held = max(self.used, self.floor)
            self.closed = True
            self.used = 0
            if self.parent is not None:
                self.parent._release(held)

    def _reserve(self, size: int) -> bool:
        if self.closed:
            return True  # dies with what holds it; see the module docstring
        used = self.used + size
        if used > self.ceiling:
            return False
        grow = max(used, self.floor) - max(self.used, self.floor)
        if grow and self.parent is not None and not self.parent._reserve(grow):
            return False
        self.used = used
        return True

    def _release(self, size: int) -> None:
        if self.closed:
            return
        held = max(self.used, self.floor)
        self.used = max(0, self.used - size)
        shrink = held - max(self.used, self.floor)
        if shrink and self.parent is not None:
            self.parent._release(shrink)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "used": self.used,
            "floor": self.floor,
            "ceiling": self.ceiling,
            "available": self.available,
        }

    def __repr__(self) -> str:
        return f"<Account {self.name} {format_size(self.used)} of {format_size(self.ceiling)}>"


class MemoryBudget(Account):
    """The process's budget: the root account, and the shares every server part opens.

    One per server (``MockstoreApp`` makes it from ``Limits.memory_budget`` and
    hands it to its tenants); ``mockstore serve`` runs one server, so one per process.
    """

    __slots__ = ("_builds", "_giving_way", "_yielders", "bodies", "connections", "reports")

    def __init__(self, total: int = DEFAULT_MEMORY_BUDGET) -> None:
        super().__init__("the process", total)
        self.connections = self.open_share("connections", "connections")
        self.bodies = self.open_share("bodies", "the first bytes of request bodies")
        self.reports = self.open_share("reports", "reports")
        self._builds = threading.Lock()
        # What gives way before live work is refused: (its share, a function that lets go
        # of at least the bytes asked, oldest first, and says how many it let go).
        self._yielders: list[tuple[Account, Callable[[int], int]]] = []
        self._giving_way = threading.local()

    def give_way_to(self, share: Account, let_go: Callable[[int], int]) -> None:
        """Let ``let_go(size)`` free what ``share`` holds when a reservation elsewhere needs it."""
        self._yielders.append((share, let_go))

    def make_room(self, size: int, asking: Account) -> bool:
        """Have what gives way let go of ``size`` bytes for ``asking``; True if any went.

        A share never gives way to itself (nor to what it does while giving way), and
        what is kept for reports never gives way to a report being built from it.
        """
        if getattr(self._giving_way, "active", False) or _within(asking, self.reports):
            return False
        self._giving_way.active = True
        try:
            freed = 0
            for share, let_go in self._yielders:
                if freed >= size or _within(asking, share):
                    continue
                freed += let_go(size - freed)
            return freed > 0
        finally:
            self._giving_way.active = False

    def open_share(self, kind: str, name: str) -> Account:
        """A new share of the kind ``SHARES`` names (``OverBudget`` if its floor cannot be had)."""
        share = SHARES[kind]
        return self.share(name, int(self.ceiling * share.ceiling), int(self.ceiling * share.floor))

    def key_ceiling(self) -> int:
        return int(self.ceiling * SHARES["key"].ceiling)

    @contextmanager
    def building(self, what: str) -> Iterator[Account]:
        """One scenario build at a time, in the process: the share it draws on while it runs.

        For a worker thread: waiting here blocks that thread, never the event
        loop. Two builds at once would each need the share, and would take
        turns at the interpreter with the API besides.
        """
        with self._builds:
            share = self.open_share("builds", what)
            try:
                yield share
            finally:
                share.close()


def _within(account: Account, share: Account) -> bool:
    while account is not None:
        if account is share:
            return True
        account = account.parent  # type: ignore[assignment]
    return False


def budget_of(account: Account | None) -> MemoryBudget | None:
    """The process budget ``account`` is a share of (None for None)."""
    root = account.root if account is not None else None
    return root if isinstance(root, MemoryBudget) else None


def unlimited() -> MemoryBudget:
    """A budget nothing can exhaust: for code used in process without a server (tests, tools)."""
    return MemoryBudget(2**62)
