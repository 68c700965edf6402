"""Issue 19, finding 8: the recorder stays under the upstream's base path, keys out of URLs.

On main ``/v1/../../admin`` reached the upstream's ``/admin``, outside its
base path, and a key in the URL path was journaled and logged in clear.
``mockstore record`` runs as a subprocess in front of the echo upstream (which
notes every path it is asked for); requests with dot segments go over raw
sockets, since httpx resolves them before sending.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from mockstore.keys import key_alias
from tests.rawhttp import request
from tests.upstream import origin, recorder
from tests.upstream.echo import Echo, echo_upstream

SECRET = "live_7f3a9c2e51b84d06a1e2"


def _journal(proxy_url: str) -> list[dict]:
    return httpx.get(origin(proxy_url) + "/__mockstore/requests", timeout=30).json()["entries"]


@pytest.fixture(scope="module")
def _under_a_prefix() -> Iterator[tuple[str, Echo]]:
    """One echo upstream whose base path is under a prefix (its /admin a sibling of it) and
    one ``mockstore record`` subprocess in front of it, for the path tests of this module."""
    with echo_upstream() as (upstream, echo), recorder(upstream.replace("/v1", "/api/v1")) as proxy:
        yield proxy.url, echo


@pytest.fixture
def under_a_prefix(_under_a_prefix: tuple[str, Echo]) -> tuple[str, Echo]:
    """The shared recorder and upstream, as fresh: nothing received, an empty journal."""
    proxy_url, echo = _under_a_prefix
    echo.received.clear()
    cleared = httpx.delete(origin(proxy_url) + "/__mockstore/requests", timeout=30)
    assert cleared.status_code == 204, cleared.text
    assert _journal(proxy_url) == []
    return proxy_url, echo


@pytest.mark.parametrize(
    "target",
    [
        "/v1/../../admin",
        "/v1/../admin",
        "/v1/%2e%2e/%2e%2e/admin",
        "/v1/..%2f..%2fadmin",
        "/v1/.%2E/admin",
        "/v1\\..\\admin",
        "/admin",
    ],
)
def test_a_path_that_leaves_the_base_path_is_not_forwarded(
    target: str, under_a_prefix: tuple[str, Echo]
) -> None:
    # The upstream's base path is under a prefix: its /admin is a sibling of it.
    proxy_url, echo = under_a_prefix
    answer = request(proxy_url.rsplit("/v1", 1)[0], "GET", target)
    entries = _journal(proxy_url)
    assert answer.status == 404, (target, answer.status, answer.body[:200])
    body = answer.json()
    assert body["code"] == "not_found" and "not forwarded" in body["message"]
    assert echo.received == [], f"{target} reached the upstream: {echo.received}"
    assert [e["outcome"] for e in entries] == ["not_forwarded"]


@pytest.mark.parametrize(
    ("target", "forwarded"),
    [
        ("/v1/../v1/echo", "/api/v1/echo"),
        ("/v1/./echo", "/api/v1/echo"),
        ("/v1/pets/../echo", "/api/v1/echo"),
    ],
)
def test_dot_segments_that_stay_under_the_base_are_resolved_before_forwarding(
    target: str, forwarded: str, under_a_prefix: tuple[str, Echo]
) -> None:
    proxy_url, echo = under_a_prefix
    request(proxy_url.rsplit("/v1", 1)[0], "GET", target)
    entries = _journal(proxy_url)
    assert [seen["raw_path"] for seen in echo.received] == [forwarded]
    assert entries[0]["request"]["path"] == forwarded.removeprefix("/api")


def test_a_key_is_aliased_wherever_it_appears_in_a_url() -> None:
    alias = key_alias(SECRET)
    escaped = "k+y/=" + SECRET  # a key with characters a URL must escape
    with (
        echo_upstream() as (upstream, echo),
        recorder(upstream, "--log-level", "info") as proxy,
        httpx.Client(timeout=30) as client,
    ):
        # In a header, and in the path and the query of the same request.
        client.get(
            f"{proxy.url}/echo/{SECRET}",
            params={"api_key": SECRET},
            headers={"Authorization": f"Bearer {SECRET}"},
        )
        # Only in the query, under a credential's name.
        client.get(f"{proxy.url}/echo", params={"access_token": escaped})
        # Later, in a path only: a key the proxy saw before.
        client.get(f"{proxy.url}/pets/{SECRET}")
        client.get(f"{proxy.url}/pets/{quote(escaped, safe='')}")
        entries = _journal(proxy.url)
        proxy.stop()
        log = proxy.log()
    # The upstream got the real key, as sent.
    assert SECRET in echo.received[0]["raw_path"] and SECRET in echo.received[0]["query"]
    journaled = json.dumps(entries)
    assert SECRET not in journaled and quote(escaped, safe="") not in journaled, journaled
    assert SECRET not in log, log
    paths = [e["request"]["path"] for e in entries]
    assert paths[0] == f"/v1/echo/{alias}"
    assert entries[0]["request"]["query_string"] == f"api_key={alias}"
    assert paths[2] == f"/v1/pets/{alias}"
    assert paths[3] == f"/v1/pets/{key_alias(escaped)}"
