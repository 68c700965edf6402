"""The journals of deleted tenants, kept so a report at the end of a run covers every worker.

Under pytest-xdist each worker works in a tenant of its own and deletes it
when its session ends, before anyone asks for the report; so a deleted
tenant's journal is kept (only the journal: its pets, counters and keys go)
and the server's report covers it. What is kept is bounded twice: at most
``max_journals`` journals and ``max_bytes`` of their entries (the journals'
own estimates, ``Journal.bytes``); past either, the oldest entries of the
oldest kept journal go first. What they hold is charged to a share of the
server's memory budget of its own (``SHARES["kept"]``): a kept journal the
budget has no room for keeps only its newest entries that fit.

They are kept for no live caller, so they give way before live work is refused
(``MemoryBudget.give_way_to``): when a tenant, a store or a live journal needs
room the budget has not got, the oldest kept entries go first (``let_go``).
Giving way may run in a scenario build's worker thread as well as on the event
loop: the collection changes under a lock of its own.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import NamedTuple

from mockstore.journal import Journal
from mockstore.memory import Account, budget_of

KEPT_BYTES = 64 * 1024 * 1024
KEPT_JOURNALS = 128


class KeptJournal(NamedTuple):
    tenant: str
    journal: Journal


class KeptJournals:
    """Deleted tenants' journals, oldest first, bounded in count and in bytes."""

    def __init__(
        self,
        max_bytes: int = KEPT_BYTES,
        max_journals: int = KEPT_JOURNALS,
        account: Account | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_journals = max_journals
        self.account = account
        self._kept: deque[KeptJournal] = deque()
        self._lock = threading.RLock()
        budget = budget_of(account)
        if budget is not None and account is not None:
            budget.give_way_to(account, self.let_go)

    def keep(self, tenant: str, journal: Journal) -> None:
        """Keep ``journal`` (a deleted tenant's) for reports; it gets no new entries.

        Its entries are charged to this collection's share from now on.
        """
        journal.rehome(self.account)
        with self._lock:
            if len(journal):
                self._kept.append(KeptJournal(tenant, journal))
                self._fit()
            else:
                journal.close()

    @property
    def bytes(self) -> int:
        """The memory the kept entries hold (their journals' estimates)."""
        return sum(kept.journal.bytes for kept in self._kept)

    def _fit(self) -> None:
        while len(self._kept) > self.max_journals:
            self._kept.popleft().journal.close()
        excess = self.bytes - self.max_bytes
        while excess > 0 and self._kept:
            oldest = self._kept[0].journal
            if oldest.bytes <= excess:
                excess -= oldest.bytes
                self._kept.popleft().journal.close()
                continue
            before = oldest.bytes
            _shrink(oldest, before - excess)
            if oldest.bytes >= before:  # one entry left, larger than what may stay
                excess -= before
                self._kept.popleft().journal.close()
            else:
                excess -= before - oldest.bytes

    def let_go(self, size: int) -> int:
        """Give way to live work: the oldest entries go until ``size`` bytes of the budget
        are free again (or none is left); how many bytes were given back."""
        account = self.account
        if account is None:
            return 0
        before = account.used
        with self._lock:
            while self._kept and before - account.used < size:
                oldest = self._kept[0].journal
                need = size - (before - account.used)
                if oldest.bytes <= need or len(oldest) <= 1:
                    self._kept.popleft().journal.close()
                    continue
                held = account.used
                _shrink(oldest, oldest.bytes - need)
                if account.used >= held:  # nothing given back (a spare block): all of it
                    self._kept.popleft().journal.close()
        return before - account.used

    def get(self, tenant: str) -> Journal | None:
        """The journal kept for ``tenant`` (the latest, if the id was used again)."""
        for kept in reversed(self._kept):
            if kept.tenant == tenant:
                return kept.journal
        return None

    def clear(self) -> None:
        with self._lock:
            for kept in self._kept:
                kept.journal.close()
            self._kept.clear()

    def __iter__(self) -> Iterator[KeptJournal]:
        with self._lock:
            return iter(list(self._kept))

    def __len__(self) -> int:
        return len(self._kept)


def _shrink(journal: Journal, max_bytes: int) -> None:
    """Keep ``journal``'s newest entries within ``max_bytes``; it takes no new ones."""
    journal.resize(journal.size, journal.body_bytes, max_bytes=max(0, max_bytes))
    journal.enabled = False  # (resize turns recording back on for a journal with a size)
