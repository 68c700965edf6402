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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import NamedTuple

from mockstore.journal import Journal
from mockstore.memory import Account

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

    def keep(self, tenant: str, journal: Journal) -> None:
        """Keep ``journal`` (a deleted tenant's) for reports; it gets no new entries.

        Its entries are charged to this collection's share from now on.
        """
        journal.rehome(self.account)
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
            oldest.resize(oldest.size, oldest.body_bytes, max_bytes=before - excess)
            if oldest.bytes >= before:  # one entry left, larger than what may stay
                excess -= before
                self._kept.popleft().journal.close()
            else:
                excess -= before - oldest.bytes

    def get(self, tenant: str) -> Journal | None:
        """The journal kept for ``tenant`` (the latest, if the id was used again)."""
        for kept in reversed(self._kept):
            if kept.tenant == tenant:
                return kept.journal
        return None

    def clear(self) -> None:
        for kept in self._kept:
            kept.journal.close()
        self._kept.clear()

    def __iter__(self) -> Iterator[KeptJournal]:
        return iter(list(self._kept))

    def __len__(self) -> int:
        return len(self._kept)
