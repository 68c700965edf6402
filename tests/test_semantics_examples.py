"""The examples of the HTTP semantics, availability and Error body pages, run as the pages say.

Each example scenario (``examples/scenarios/``) is served by a real uvicorn process and
does what its page says of it; the JSON bodies the Error bodies page shows are the
answers, byte for byte as JSON values, and the page's Python snippet runs.
"""

from __future__ import annotations

import json
import re
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx

from mockstore.clock import Timebase
from tests.support import mock_server

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "scenarios"
DOCS = ROOT / "docs"


def _example(name: str) -> str:
    return (EXAMPLES / name).read_text()


def _blocks(page: str, language: str) -> list[str]:
    text = (DOCS / page).read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def test_the_http_semantics_example() -> None:
    auth = {"Authorization": "Bearer app-key"}
    with (
        mock_server(_example("http-semantics.yaml")) as api,
        httpx.Client(base_url=api.api, headers=auth, follow_redirects=False) as http,
    ):
        pet = http.get("/pets/1")
        assert pet.headers["etag"].startswith('"')
        assert parsedate_to_datetime(pet.headers["last-modified"]).isoformat() == (
            "2026-02-01T00:00:00+00:00"
        )
        assert (
            http.get("/pets/1", headers={"If-None-Match": pet.headers["etag"]}).status_code == 304
        )
        listed = http.get("/pets?limit=20")  # httpx accepts gzip
        assert listed.headers["content-encoding"] == "gzip" and len(listed.json()) == 20
        assert "content-encoding" not in pet.headers  # one pet: under 1 KiB
        preflight = http.options(
            "/pets",
            headers={
                "Authorization": "",
                "Origin": "https://app.example.com",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 204
        assert preflight.headers["access-control-max-age"] == "600"
        options = http.options("/pets")
        assert (options.status_code, options.headers["allow"]) == (
            204,
            "GET, HEAD, OPTIONS, POST",
        )
        slashed = http.get("/pets/?limit=2")
        assert (slashed.status_code, slashed.headers["location"]) == (308, "/v1/pets?limit=2")
        echoed = http.get("/pets/999", headers={"X-Request-Id": "checkout-test-7"})
        assert echoed.headers["x-request-id"] == "checkout-test-7"
        created = http.post("/pets", json={"name": "Nala", "categoryId": 1, "nickname": "N"})
        assert created.headers["warning"] == '299 - "unknown fields dropped: nickname"'


def test_the_maintenance_example_and_its_snippet() -> None:
    auth = {"Authorization": "Bearer app-key"}
    with (
        mock_server(_example("maintenance.yaml")) as api,
        httpx.Client(base_url=api.api, headers=auth) as http,
    ):
        assert http.get("/store/orders").status_code == 501  # 01:55: not yet
        (snippet,) = _blocks("availability-and-latency.md", "python")
        exec(snippet, {"mock": api.mock, "httpx": httpx, "url": api.api, "auth": auth})
        nightly = http.get("/store/orders")
        assert parsedate_to_datetime(nightly.headers["retry-after"]).isoformat() == (
            "2026-03-01T03:00:00+00:00"
        )
        assert http.get("/pets").status_code == 200  # only /store
        api.mock.control.set_time("2026-03-02T06:10:00Z")
        upgrade = http.get("/pets")
    assert upgrade.status_code == 503
    assert upgrade.headers["retry-after"] == "1200"
    assert upgrade.json() == {
        "code": "SERVICE_UNAVAILABLE",
        "message": "The Pet Store is down for an upgrade until 2026-03-02T06:30:00Z",
        "status": 503,
    }


def test_the_latency_example() -> None:
    asked: list[float] = []

    async def wait(seconds: float) -> None:
        asked.append(seconds * 1000)

    auth = {"Authorization": "Bearer app-key"}
    with (
        mock_server(_example("latency.yaml"), timebase=Timebase(wait=wait)) as api,
        httpx.Client(base_url=api.api, headers=auth) as http,
    ):
        for _ in range(50):
            http.get("/pets?limit=5")
        listing = list(asked)
        http.post("/pets", json={"name": "Rex", "categoryId": 1})
        http.get("/pets?limit=0")
    assert all(18 <= ms <= 2500 for ms in listing)
    assert sorted(listing)[25] < 110  # typically 40 ms
    assert 60 <= asked[50] <= 400
    assert 1 <= asked[51] <= 5


def test_the_error_bodies_example_answers_what_the_page_shows() -> None:
    shown = [json.loads(block) for block in _blocks("error-bodies.md", "json")]
    key = {"Authorization": "Bearer sk_test_51HxYz0123456789abcd"}
    with (
        mock_server(_example("error-bodies.yaml")) as api,
        httpx.Client(base_url=api.api, headers=key) as http,
    ):
        limit = http.get("/pets?limit=abc").json()
        body = http.post("/pets", json={"name": 5, "categoryId": "x"}).json()
        unknown = http.get("/pets", headers={"Authorization": "Bearer sk_live_00000000000zzzz"})
        http.get("/pets")
        refused = http.get("/pets").json()
    assert [limit, body] == shown
    assert unknown.json()["message"] == "Invalid API key provided: sk_l****zzzz"
    assert refused["message"] == "Too many requests: retry in 30 seconds"
    assert refused["retryAfterMs"] == 29_500 + 500  # the minute ends at 12:01:00


def test_the_trace_context_example_continues_a_clients_trace() -> None:
    (block,) = [b for b in _blocks("http-semantics.md", "yaml") if "traceparent" in b]
    scenario = "version: 1\nkeys: [{key: app-key, plan: pro}]\n" + block
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    with (
        mock_server(scenario) as api,
        httpx.Client(base_url=api.api, headers={"Authorization": "Bearer app-key"}) as http,
    ):
        answer = http.get(
            "/pets/404404", headers={"traceparent": f"00-{trace}-00f067aa0ba902b7-01"}
        )
    found = re.fullmatch(r"00-([0-9a-f]{32})-([0-9a-f]{16})-01", answer.headers["traceparent"])
    assert found and found.group(1) == trace and found.group(2) != "00f067aa0ba902b7"
    assert answer.json()["traceId"] == trace
