"""``MockServer``, ``AsyncControl`` and tenants, as Python code outside the plugin uses them."""

from __future__ import annotations

import asyncio
import inspect
import socket
import threading
import time

import httpx
import pytest

from mockstore import AsyncControl, Control, ControlError, MockServer, create_app
from mockstore.scenario import ScenarioError, ScenarioNotFound
from mockstore.server import ServerError
from mockstore.tenants import MAX_TENANTS
from tests.support import assert_conforms, auth, mock_server

# -- MockServer -------------------------------------------------------------------


def test_a_server_on_a_free_port_without_reading_any_output() -> None:
    with MockServer(scenario="flaky-create") as server:
        assert server.running and server.port > 0
        assert server.base_url == f"http://127.0.0.1:{server.port}"
        assert server.url == server.base_url + "/v1"
        assert server.control_url == server.base_url + "/__mockstore"
        assert server.control.health().scenario == "flaky-create"
        listed = httpx.get(server.url + "/pets", headers=auth("pro"))
        assert len(assert_conforms(listed)) == 3  # flaky-create has three pets
    assert not server.running
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url + "/pets", headers=auth("pro"), timeout=2)


def test_start_and_stop_and_two_servers_at_once() -> None:
    first = MockServer().start()
    second = MockServer("empty-store").start()
    try:
        assert first.port != second.port
        assert httpx.get(second.url + "/pets", headers=auth("pro")).json() == []
        assert len(httpx.get(first.url + "/pets", headers=auth("pro")).json()) == 20
        with pytest.raises(RuntimeError, match="already started"):
            first.start()
    finally:
        first.stop()
        second.stop()
    first.stop()  # stopping twice is harmless


def test_a_request_in_flight_finishes_when_the_server_stops() -> None:
    slow = (
        "version: 1\nname: slow\nkeys: [{key: pro-key, plan: pro}]\n"
        "faults:\n  - match: {operation: listPets}\n    delay: {fixed_ms: 300}\n"
    )
    server = MockServer(slow).start()
    answers: list[int] = []
    arrived = threading.Event()

    def call() -> None:
        arrived.set()
        answers.append(httpx.get(server.url + "/pets", headers=auth("pro"), timeout=30).status_code)

    caller = threading.Thread(target=call)
    caller.start()
    arrived.wait(10)
    # Stop once the server holds the request: its journal says nothing yet, but
    # uvicorn counts it as a task in progress.
    deadline = time.monotonic() + 60
    while not server._server.server_state.tasks:
        assert time.monotonic() < deadline, "the request never reached the server"
        time.sleep(0.001)
    server.stop()
    caller.join(30)
    assert answers == [200]


def test_a_bad_scenario_is_refused_before_anything_starts() -> None:
    with pytest.raises(ScenarioNotFound, match="did you mean 'flaky-create'"):
        MockServer("flakey-create")
    with pytest.raises(ScenarioError, match="unknown plan 'gold'"):
        MockServer("version: 1\nkeys: [{key: k, plan: gold}]\n")


def test_a_port_in_use_is_explained() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServerError, match=f"port {port} on 127.0.0.1 is already in use"):
            MockServer(port=port).start()


def test_a_control_token_and_no_control() -> None:
    with MockServer(control_token="s3cret") as server:
        assert server.control.keys(), "the server's own Control carries its token"
        with Control(server.base_url) as anonymous, pytest.raises(ControlError) as refused:
            anonymous.keys()
        assert refused.value.status == 401
    with MockServer(control=False) as server:
        assert httpx.get(server.control_url + "/health").status_code == 404


# -- AsyncControl -----------------------------------------------------------------


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in {"close", "aclose"}
    }


def test_the_two_clients_have_the_same_methods_and_signatures() -> None:
    sync, asynchronous = _public(Control), _public(AsyncControl)
    assert sync.keys() == asynchronous.keys()
    for name, signature in sync.items():
        assert asynchronous[name].parameters == signature.parameters, name
        other = asynchronous[name].return_annotation
        if name == "for_tenant":
            assert (signature.return_annotation, other) == ("Control", "AsyncControl")
        else:
            assert other == signature.return_annotation, name
            assert inspect.iscoroutinefunction(getattr(AsyncControl, name)), name


def test_async_control_drives_an_app_in_process() -> None:
    async def main() -> None:
        app = create_app("default")
        transport = httpx.ASGITransport(app=app)
        async with (
            AsyncControl(transport=transport) as mock,
            httpx.AsyncClient(transport=transport, base_url="http://mockstore/v1") as api,
        ):
            assert mock.url == "http://mockstore"
            assert (await mock.health()).scenario == "default"
            assert (await mock.load_scenario("flaky-create")).name == "flaky-create"
            since = (await mock.reset()).journal_seq
            key = (await mock.issue_key({"per_minute": 1, "per_day": 5})).key
            assert (await api.get("/pets", headers=auth(key))).status_code == 200
            assert (await api.get("/pets", headers=auth(key))).status_code == 429
            clock = await mock.advance(60)
            assert clock.elapsed_seconds >= 60
            assert (await api.get("/pets", headers=auth(key))).status_code == 200
            entries = await mock.requests(since=since)
            assert [e.response.status for e in entries] == [200, 429, 200]
            assert (await mock.verify("listPets", count=3, since=since)).count == 3
            report = await mock.report(since=since, timeline=True)
            assert report.summary.requests == 3 and report.timeline is not None
            assert (await mock.har(since=since))["log"]["_mockstore"]["masked"] is True
            await mock.revoke_key(key)
            assert (await api.get("/pets", headers=auth(key))).status_code == 401
            with pytest.raises(ControlError) as refused:
                await mock.load_scenario("no-such-thing")
            assert refused.value.code == "scenario_not_found"
            tenant = await mock.create_tenant("t1")
            async with mock.for_tenant(tenant) as inside:
                assert (await inside.health()).scenario == "flaky-create"
                assert await inside.requests() == []
            await mock.delete_tenant("t1")

    asyncio.run(main())


# -- tenants over HTTP --------------------------------------------------------------


def test_tenants_are_servers_of_their_own() -> None:
    with mock_server() as server, Control(server.url) as root:
        one, two = root.create_tenant("one"), root.create_tenant()
        assert (one.id, one.path) == ("one", "/__mockstore/tenants/one")
        assert one.url == server.url + "/__mockstore/tenants/one"
        assert two.id == "tenant-1"
        with root.for_tenant(one) as first, root.for_tenant(two) as second:
            key = first.issue_key("pro").key
            created = httpx.post(
                one.url + "/v1/pets", json={"name": "Solo", "categoryId": 1}, headers=auth(key)
            )
            assert assert_conforms(created, base=one.path + "/v1")["id"] == 21
            # The key, the pet and the journal are the first tenant's alone.
            assert httpx.get(two.url + "/v1/pets", headers=auth(key)).status_code == 401
            assert httpx.get(server.api + "/pets/21", headers=auth("pro")).status_code == 404
            assert len(second.pets()) == 20 and len(first.pets()) == 21
            assert [e.operation for e in first.requests()] == ["createPet"]
            assert [e.response.status for e in second.requests()] == [401]
            assert [e.response.status for e in root.requests()] == [404]
            # A tenant's OpenAPI document names the tenant's own API.
            document = httpx.get(one.url + "/__mockstore/openapi.json").json()
            assert document["servers"][0]["url"] == one.url + "/v1"
            first.load_scenario("empty-store")
            assert second.health().scenario == "default" == root.health().scenario
        assert {t.id for t in root.tenants()} == {"one", "tenant-1"}
        root.delete_tenant("one")
        missing = httpx.get(one.url + "/v1/pets", headers=auth("pro"))
        assert missing.status_code == 404 and "no tenant 'one'" in missing.json()["message"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"id": "../x"}, 400, "invalid_request"),
        ({"id": ""}, 400, "invalid_request"),
        ({"id": 7}, 400, "invalid_request"),
        ({"name": "x"}, 400, "invalid_request"),
    ],
)
def test_bad_tenant_requests_are_refused(body: dict, status: int, code: str) -> None:
    from starlette.testclient import TestClient

    with TestClient(create_app()) as client:
        answer = client.post("/__mockstore/tenants", json=body)
    assert (answer.status_code, answer.json()["code"]) == (status, code)


def test_the_tenant_limit_and_taken_ids() -> None:
    from starlette.testclient import TestClient

    with TestClient(create_app()) as client:
        assert client.post("/__mockstore/tenants", json={"id": "a"}).status_code == 201
        taken = client.post("/__mockstore/tenants", json={"id": "a"})
        assert (taken.status_code, taken.json()["code"]) == (409, "tenant_exists")
        for n in range(MAX_TENANTS - 1):
            assert client.post("/__mockstore/tenants", json={"id": f"t{n}"}).status_code == 201
        full = client.post("/__mockstore/tenants", json={"id": "one-more"})
        assert (full.status_code, full.json()["code"]) == (507, "too_many_tenants")
        assert client.delete("/__mockstore/tenants/a").status_code == 204
        assert client.delete("/__mockstore/tenants/a").status_code == 404
        assert client.post("/__mockstore/tenants", json={"id": "one-more"}).status_code == 201
        inner = client.post("/__mockstore/tenants/one-more/__mockstore/tenants", json={})
        assert inner.status_code == 404, "a tenant has no tenants of its own"


def test_a_reset_in_process_is_the_reset_over_http() -> None:
    # What the mockstore fixture does before each test on a server it started:
    # the same reset as POST /__mockstore/reset, and the same answer, without HTTP.
    with MockServer() as server:
        created = httpx.post(
            server.url + "/pets", json={"name": "Rex", "categoryId": 1}, headers=auth("pro")
        )
        assert created.status_code == 201
        issued = server.control.issue_key("free").key
        in_process = server.reset()
        assert in_process.scenario == "default"
        assert in_process.journal_seq == server.control.requests()[-1].seq
        pets = httpx.get(server.url + "/pets?limit=100", headers=auth("pro")).json()
        assert created.json()["id"] not in [pet["id"] for pet in pets]
        assert httpx.get(server.url + "/pets", headers=auth(issued)).status_code == 401
        over_http = server.control.reset()
        assert (over_http.status, over_http.scenario) == (in_process.status, in_process.scenario)
        assert over_http.journal_seq == in_process.journal_seq + 2  # the two requests since
    with pytest.raises(RuntimeError, match="not running"):
        server.reset()
