"""The address the recorder reaches the upstream from: the client's own, where both are on loopback.

A provider that counts callers by their address (an allowance per client address for
callers without a key, as gateways give) sees every client of a recording proxy as
one: the proxy's. Clients that were distinct spend one allowance, so a recording
shows ``429`` where each client alone was answered, and calibrate would learn that as
the provider's behaviour. A transparent proxy keeps each client's address as the
connection's source; on one machine (a test harness, a provider and its clients on
loopback) the recorder can do the same: it connects to an upstream on an IPv4 loopback
address from the loopback address the client connected from (any of 127.0.0.0/8 is this
host's own).
Elsewhere the proxy's own address is the only one it has, and the upstream sees one
caller, as behind any reverse proxy.

At most ``MAX_SOURCES`` addresses hold a connection pool of their own (each a few
idle connections); a new address takes the place of the one used longest ago that
has no request in flight (its pool closed), and while every one is busy a client
shares the proxy's, so a client cannot make the recorder hold pools without bound.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections import Counter, OrderedDict
from collections.abc import Callable

import httpx

MAX_SOURCES = 32
_IDLE = 4  # idle connections kept per source address


def _loopback(host: str) -> bool:
    """An IPv4 loopback address (a name such as localhost may resolve to ::1, which an IPv4
    source cannot reach)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.version == 4 and address.is_loopback


class SourceClients:
    """HTTP clients to one upstream, one per client address kept as the source."""

    def __init__(self, upstream_host: str, make: Callable[..., httpx.AsyncClient]) -> None:
        # ``make(transport=...)`` builds a client as the proxy's own is built.
        self._make = make
        self._keeps = _loopback(upstream_host)
        self._clients: OrderedDict[str, httpx.AsyncClient] = OrderedDict()  # oldest use first
        self._busy: Counter[str] = Counter()  # requests in flight per address
        self._closing: set[asyncio.Task[None]] = set()

    def source(self, client_host: str | None) -> str | None:
        """The address to connect from for a client at ``client_host`` (None: the proxy's)."""
        if not self._keeps or client_host is None:
            return None
        try:
            address = ipaddress.ip_address(client_host)
        except ValueError:
            return None
        # IPv4 loopback only: ::1 is one address, and the proxy's own already.
        if address.version != 4 or not address.is_loopback:
            return None
        return client_host

    def take(self, client_host: str | None) -> httpx.AsyncClient | None:
        """The client bound to ``client_host``'s address for one request (``give_back`` it
        after), or None: the proxy's shared one."""
        source = self.source(client_host)
        if source is None:
            return None
        found = self._clients.get(source)
        if found is not None:
            self._clients.move_to_end(source)
        elif len(self._clients) < MAX_SOURCES or self._evict():
            transport = httpx.AsyncHTTPTransport(
                local_address=source,
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=_IDLE),
            )
            found = self._clients[source] = self._make(transport=transport)
        else:
            return None
        self._busy[source] += 1
        return found

    def give_back(self, client_host: str | None) -> None:
        """The request ``take`` was for is over."""
        source = self.source(client_host)
        if source is not None and self._busy[source] > 0:
            self._busy[source] -= 1
            if not self._busy[source]:
                del self._busy[source]

    def _evict(self) -> bool:
        """Closes the pool used longest ago with nothing in flight; False: all are busy."""
        idle = next((source for source in self._clients if not self._busy[source]), None)
        if idle is None:
            return False
        client = self._clients.pop(idle)
        task = asyncio.get_running_loop().create_task(client.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return True

    def __len__(self) -> int:
        return len(self._clients)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), OrderedDict()
        for client in clients:
            await client.aclose()
        for task in list(self._closing):
            await task


__all__ = ["MAX_SOURCES", "SourceClients"]
