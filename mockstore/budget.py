"""Byte budgets for the caches of the hot path.

A cache bounded only in entries is bounded in nothing: 4,096 cached 60 KB
query strings hold half a gigabyte. Each cache here is a plain dict (a hit
stays one ``dict.get``) with a ``ByteBudget`` beside it, consulted only on a
miss: an item larger than ``max_item`` is never cached (a client does not
repeat a 10 KB query often enough for it to pay), and when the next item
would pass ``max_bytes`` the cache is emptied and starts again. A cache
held for callers (a store's listings) also reserves what it keeps from its
share of the process's memory budget (``mockstore.memory``), and keeps
nothing the budget has no room for.
"""

from __future__ import annotations

from typing import Any

from mockstore.memory import Account

# What a cached item holds beyond its key's bytes: the dict slot, the key's
# and the value's object headers, a small parsed value (CPython 3.11, 64-bit).
ITEM_OVERHEAD = 256


class ByteBudget:
    """Counts the estimated bytes a cache holds, and decides what it may keep."""

    __slots__ = ("account", "max_bytes", "max_item", "used")

    def __init__(self, max_bytes: int, max_item: int, account: Account | None = None) -> None:
        self.max_bytes = max_bytes
        self.max_item = max_item
        self.used = 0
        self.account = account

    def admit(self, cache: dict[Any, Any], size: int) -> bool:
        """True if an item of ``size`` bytes may go into ``cache`` (emptying it first if full)."""
        if size > self.max_item:
            return False
        size += ITEM_OVERHEAD
        if self.used + size > self.max_bytes:
            self.clear(cache)
        if self.account is not None and not self.account.reserve(size):
            return False
        self.used += size
        return True

    def clear(self, cache: dict[Any, Any]) -> None:
        """Empty ``cache`` and give back what it held."""
        cache.clear()
        if self.account is not None:
            self.account.release(self.used)
        self.used = 0
