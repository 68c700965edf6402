"""Issue 25: the recorder reaches a loopback upstream from each loopback client's own address.

On main every request reached the upstream from the recorder's one address, so a
provider that counts callers without a key per address (Corral's 25 a minute) saw one
caller where the clients were many: a recording showed ``429`` where each client
alone was answered, and calibrate read that as the provider's behaviour.
``mockstore record`` runs as a subprocess in front of the echo upstream, which notes
the address each request came from; clients connect from chosen loopback addresses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from mockstore.fidelity.source_address import MAX_SOURCES, SourceClients
from tests.upstream import recorder
from tests.upstream.echo import Echo, echo_upstream


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[str, Echo]]:
    with echo_upstream() as (upstream, echo), recorder(upstream) as proxy:
        yield proxy.url, echo


def _from(address: str, url: str) -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, timeout=30) as client:
        return client.get(url + "/echo")


def test_each_loopback_client_reaches_the_upstream_from_its_own_address(
    proxied: tuple[str, Echo],
) -> None:
    url, echo = proxied
    echo.received.clear()
    answers = [_from(address, url) for address in ("127.0.0.2", "127.0.0.3", "127.0.0.2")]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [a.json()["client"] for a in answers] == ["127.0.0.2", "127.0.0.3", "127.0.0.2"]
    assert [seen["client"] for seen in echo.received] == ["127.0.0.2", "127.0.0.3", "127.0.0.2"]


def test_only_loopback_upstreams_and_ipv4_loopback_clients_keep_the_address() -> None:
    def make(**_: object) -> httpx.AsyncClient:
        raise AssertionError("no client is made where no address is kept")

    remote = SourceClients("staging.example.com", make)
    assert remote.source("127.0.0.2") is None and remote.take("127.0.0.2") is None
    local = SourceClients("127.0.0.1", make)
    for host in ("::1", "10.0.0.7", "not-an-address", None):
        assert local.source(host) is None and local.take(host) is None
    assert local.source("127.0.0.9") == "127.0.0.9"
    # A name may resolve to ::1, which an IPv4 source cannot reach: only an address keeps it.
    assert SourceClients("localhost", make).source("127.0.0.9") is None
    assert SourceClients("::1", make).source("127.0.0.9") is None


def test_past_the_cap_the_idle_pool_used_longest_ago_makes_room() -> None:
    async def run() -> None:
        made: list[httpx.AsyncClient] = []

        def make(**transport: httpx.AsyncBaseTransport) -> httpx.AsyncClient:
            made.append(httpx.AsyncClient(**transport))
            return made[-1]

        sources = SourceClients("127.0.0.1", make)
        hosts = [f"127.0.1.{n}" for n in range(MAX_SOURCES)]
        bound = [sources.take(host) for host in hosts]  # every one in flight
        assert all(client is not None for client in bound) and len(made) == MAX_SOURCES
        # All busy: one more address shares the proxy's client, and nothing is closed.
        assert sources.take("127.0.2.1") is None and len(sources) == MAX_SOURCES
        for host in hosts:
            sources.give_back(host)
        assert sources.take(hosts[0]) is bound[0]  # used again: now the newest
        sources.give_back(hosts[0])
        fresh = sources.take("127.0.2.1")  # the pool of hosts[1] makes room
        assert fresh is made[-1] and len(sources) == MAX_SOURCES
        assert sources.take(hosts[1]) is not bound[1]  # it was closed; a new one is made
        await sources.aclose()
        assert all(client.is_closed for client in made)

    asyncio.run(run())
