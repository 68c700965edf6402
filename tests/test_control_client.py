"""``mockstore.Control`` against a real server: every method, its errors, and its wire form."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mockstore
from mockstore import Control, ControlError, VerificationError
from mockstore.clients.types import PlanLimits
from tests.support import LiveServer, assert_conforms, examples, mock_server

START = "2026-03-01T12:00:00Z"
START_UNIX = datetime(2026, 3, 1, 12, tzinfo=UTC).timestamp()

# A manual clock, a two-request plan and a quick ban: every control call has a visible effect.
MANUAL = f"""\
version: 1
name: manual
clock: {{start: {START}, mode: manual}}
plans:
  tiny: {{per_minute: 2, per_day: 100}}
keys:
  - {{key: tiny-key, plan: tiny}}
  - {{key: pro-key, plan: pro}}
ban: {{after_rejections: 2, within_seconds: 60, duration_seconds: 600}}
pets:
  - {{id: 1, name: Rex, categoryId: 1, status: available}}
"""


@pytest.fixture(scope="module")
def running() -> Iterator[LiveServer]:
    with mock_server() as server:
        yield server


@pytest.fixture
def control(running: LiveServer) -> Iterator[Control]:
    """A client on the module's server, back on ``default`` and reset."""
    with Control(running.url) as client:
        if client.health().scenario != "default":
            client.load_scenario(Path(_bundled("default")))
        client.reset()
        yield client


def _bundled(name: str) -> str:
    from mockstore.scenario.source import bundled_dir

    return str(bundled_dir().joinpath(f"{name}.yaml"))


def _api(running: LiveServer, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=running.api, headers=headers, timeout=10)


def _journal_or_skip(control: Control) -> None:
    try:
        control.requests()
    except ControlError as exc:
        if exc.status == 404:
            pytest.skip(
                "GET /__mockstore/requests answers 404: the journal endpoints "
                "(issue 5, mockstore/control/journal.py) are not mounted yet"
            )
        raise


# -- exports ---------------------------------------------------------------------


def test_public_names_are_exported_from_the_package() -> None:
    assert mockstore.Control is Control
    assert issubclass(VerificationError, AssertionError)
    assert issubclass(ControlError, Exception)
    assert {
        "AsyncControl",
        "Control",
        "ControlError",
        "MockServer",
        "VerificationError",
        "create_app",
    } <= set(mockstore.__all__)
    assert issubclass(VerificationError, ControlError), "one error type for every call"
    with pytest.raises(AttributeError):
        mockstore.no_such_name  # noqa: B018


# -- server and scenario -----------------------------------------------------------


def test_health_and_scenario(control: Control, running: LiveServer) -> None:
    health = control.health()
    assert health.status == "ok"
    assert health.scenario == "default"
    assert health.version == mockstore.__version__
    summary = control.scenario()
    assert summary.name == "default"
    assert summary.base_path == "/v1"
    assert {k.key for k in summary.keys} == {
        "free-key",
        "pro-key",
        "business-key",
        "enterprise-key",
    }
    assert control.url == running.url
    assert repr(control) == f"Control({running.url!r})"


def test_load_scenario_from_yaml_text_path_and_dict(
    control: Control, running: LiveServer, tmp_path: Path
) -> None:
    summary = control.load_scenario(MANUAL)
    assert summary.name == "manual"
    assert control.health().scenario == "manual"
    with _api(running, "tiny-key") as api:
        response = api.get("/pets")
    assert [p["name"] for p in assert_conforms(response)] == ["Rex"]
    assert response.headers["x-ratelimit-limit"] == "2"

    path = tmp_path / "from-file.yaml"
    path.write_text(MANUAL.replace("name: manual", "name: from-file"))
    summary = control.load_scenario(path)
    assert summary.name == "from-file"
    assert summary.file == str(path)

    as_dict = {"version": 1, "name": "from-dict", "keys": [{"key": "dict-key", "plan": "pro"}]}
    summary = control.load_scenario(as_dict)
    assert summary.name == "from-dict"
    with _api(running, "dict-key") as api:
        assert api.get("/pets").status_code == 200


def test_an_invalid_scenario_is_refused_with_every_problem(control: Control) -> None:
    broken = "version: 1\nname: broken\nkeys:\n  - {key: k, plan: platinum}\nseed: nope\n"
    with pytest.raises(ControlError) as caught:
        control.load_scenario(broken, file="broken.yaml")
    error = caught.value
    assert error.status == 400
    assert error.code == "invalid_scenario"
    assert len(error.problems) >= 2
    assert all(p.startswith("broken.yaml:") for p in error.problems)
    assert any(p.startswith("broken.yaml:5:7: $.seed") for p in error.problems)
    # The readable form shows each problem, so a failing test's traceback explains itself.
    for problem in error.problems:
        assert problem in str(error)
    assert control.health().scenario == "default", "the running scenario must stay"


def test_reset_restores_pets_and_answers_the_journal_position(
    control: Control, running: LiveServer
) -> None:
    with _api(running, "pro-key") as api:
        created = api.post("/pets", json={"name": "Nova", "categoryId": 3})
        assert assert_conforms(created)["name"] == "Nova"
        assert len(api.get("/pets", params={"limit": 100}).json()) == 21
        answer = control.reset()
        assert answer.scenario == "default"
        assert isinstance(answer.journal_seq, int)
        assert len(assert_conforms(api.get("/pets", params={"limit": 100}))) == 20


# -- clock -------------------------------------------------------------------------


def test_clock_advance_and_set(control: Control) -> None:
    control.load_scenario(MANUAL)
    clock = control.clock()
    assert clock.mode == "manual"
    assert clock.unix == START_UNIX
    assert control.advance(90).unix == START_UNIX + 90
    assert control.clock().elapsed_seconds == 90
    assert control.set_time("2030-12-05T00:00:00Z").now == "2030-12-05T00:00:00Z"
    # A naive datetime is UTC, as the server reads an ISO time without an offset.
    naive = datetime(2027, 1, 2, 3, 4, 5)
    assert control.set_time(naive).now == "2027-01-02T03:04:05Z"
    paris = datetime(2027, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=1)))
    assert control.set_time(paris).now == "2027-01-02T02:04:05Z"


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    when=st.datetimes(
        min_value=datetime(1971, 1, 1),
        max_value=datetime(2200, 1, 1),
        timezones=st.sampled_from(
            [UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=9))]
        ),
    ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
)
def test_set_time_lands_on_the_same_instant_for_any_datetime(
    control: Control, when: datetime
) -> None:
    if control.health().scenario != "manual":
        control.load_scenario(MANUAL)
    assert control.set_time(when).unix == pytest.approx(when.timestamp(), abs=1e-3)


def test_an_invalid_clock_request_is_a_control_error(control: Control) -> None:
    with pytest.raises(ControlError) as caught:
        control.set_time("next tuesday")
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")


# -- keys and bans -----------------------------------------------------------------


def test_issue_keys_on_named_and_custom_plans(control: Control, running: LiveServer) -> None:
    issued = control.issue_key("pro")
    assert issued.plan == "pro"
    assert issued.limits == PlanLimits(per_minute=300, per_day=10000)
    assert issued.key != control.issue_key("pro").key, "each call is a fresh key"
    custom = control.issue_key({"per_minute": 3, "per_day": 5}, key="my-key", tenant="team-a")
    assert custom.key == "my-key"
    assert custom.tenant == "team-a"
    assert custom.limits == PlanLimits(per_minute=3, per_day=5)
    with _api(running, "my-key") as api:
        response = api.get("/pets")
    assert_conforms(response)
    assert response.headers["x-ratelimit-limit"] == "3"
    keys = control.keys()
    listed = {k.key: k for k in keys}
    assert listed["my-key"].minute.used == 1
    assert issued.key in listed


def test_key_errors_carry_the_server_code(control: Control) -> None:
    with pytest.raises(ControlError) as caught:
        control.issue_key("platinum")
    assert (caught.value.status, caught.value.code) == (400, "unknown_plan")
    assert "free" in caught.value.message
    control.issue_key("free", key="twice")
    with pytest.raises(ControlError) as caught:
        control.issue_key("free", key="twice")
    assert (caught.value.status, caught.value.code) == (409, "key_exists")
    with pytest.raises(ControlError) as caught:
        control.revoke_key("never-issued")
    assert (caught.value.status, caught.value.code) == (404, "unknown_key")


def test_revoked_key_gets_401(control: Control, running: LiveServer) -> None:
    key = control.issue_key("free").key
    with _api(running, key) as api:
        assert api.get("/pets").status_code == 200
        assert control.revoke_key(key) is None
        response = api.get("/pets")
    assert response.status_code == 401
    assert assert_conforms(response)["code"] == "invalid_token"
    remaining = control.keys()
    assert key not in {k.key for k in remaining}


# Any RFC 6750 bearer token (b64token), the rule the server holds keys to: "/", "+",
# "=" and dots included, so the client's URL escaping is exercised.
key_text = st.from_regex(r"[A-Za-z0-9._~+/-]{1,20}=*", fullmatch=True).filter(
    lambda k: k not in {"free-key", "pro-key", "business-key", "enterprise-key"}
)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(key=key_text)
def test_any_key_can_be_issued_used_and_revoked(
    control: Control, running: LiveServer, key: str
) -> None:
    issued = control.issue_key("pro", key=key)
    assert issued.key == key
    with _api(running, key) as api:
        assert api.get("/pets", params={"limit": 1}).status_code == 200
        assert control.lift_ban(key) is False
        control.revoke_key(key)
        assert api.get("/pets", params={"limit": 1}).status_code == 401


def test_lift_ban(control: Control, running: LiveServer) -> None:
    control.load_scenario(MANUAL)
    with _api(running, "tiny-key") as api:
        statuses = [api.get("/pets").status_code for _ in range(5)]
        assert statuses[:2] == [200, 200]
        banned = api.get("/pets")
        assert banned.status_code == 429
        assert assert_conforms(banned)["code"] == "key_banned"
        state = control.keys()
        assert {k.key: k for k in state}["tiny-key"].banned is True
        assert control.lift_ban("tiny-key") is True
        assert control.lift_ban("tiny-key") is False
        control.advance(61)  # past the minute window, so the allowance is back too
        assert assert_conforms(api.get("/pets"))[0]["name"] == "Rex"


# -- tokens and reachability ---------------------------------------------------------


def test_control_token() -> None:
    with mock_server(control_token="s3cret") as server:
        with Control(server.url) as anonymous:
            assert anonymous.health().status == "ok", "health needs no token"
            with pytest.raises(ControlError) as caught:
                anonymous.keys()
            assert (caught.value.status, caught.value.code) == (401, "unauthorized")
        with Control(server.url, token="wrong") as wrong, pytest.raises(ControlError):
            wrong.reset()
        with Control(server.url, token="s3cret") as right:
            assert right.reset().status == "reset"
            assert len(right.keys()) == 4


def test_an_unreachable_server_is_a_control_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with (
            Control(f"http://127.0.0.1:{port}", timeout=2) as control,
            pytest.raises(ControlError) as caught,
        ):
            control.health()
    assert caught.value.status is None
    assert caught.value.code == "unreachable"
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_a_non_json_error_is_still_a_control_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>bad gateway</html>")

    with (
        Control("http://mock.test", transport=httpx.MockTransport(handler)) as control,
        pytest.raises(ControlError) as caught,
    ):
        control.health()
    assert caught.value.status == 502
    assert caught.value.code == "http_502"
    assert "GET /__mockstore/health" in caught.value.message
    assert "bad gateway" in caught.value.message


KEY_JSON = {
    "key": "k", "plan": "pro", "tenant": "k", "limits": {"per_minute": 1, "per_day": 2},
    "minute": {"used": 0, "remaining": 1, "reset": 0},
    "day": {"used": 0, "remaining": 2, "reset": 0},
    "banned": False, "banned_until": None, "recent_rejections": 0,
}  # fmt: skip
CLOCK_JSON = {"now": "x", "unix": 1.0, "mode": "manual", "start": "x", "elapsed_seconds": 0}
SCENARIO_JSON = {
    "name": "s", "description": "", "file": "f", "seed": 1, "base_path": "/v1",
    "isolation": "shared", "clock": {"start": None, "mode": "running"}, "plans": {},
    "keys": [], "faults": 0, "routes": 0, "pets": 0, "source": "version: 1",
}  # fmt: skip


def test_the_wire_form_of_each_call() -> None:
    """What Control sends: the contract the server-side endpoints are written against."""
    seen: list[tuple[str, str, bytes, str | None, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(
            (
                request.method,
                str(request.url),
                request.content,
                request.headers.get("authorization"),
                request.headers.get("x-mockstore-client"),
            )
        )
        path = request.url.path
        if path.endswith("/verify"):
            answer = {"ok": True, "count": 1, "message": "", "matched": [4], "closest": []}
            return httpx.Response(200, json=answer)
        if path.endswith("/requests") and request.method == "GET":
            return httpx.Response(200, json={"entries": [], "dropped": 0})
        if (request.method == "DELETE" and "/keys/" in path) or path.endswith("/requests"):
            return httpx.Response(204)
        if path.endswith("/keys") and request.method == "POST":
            return httpx.Response(201, json=KEY_JSON)
        if "/bans/" in path:
            return httpx.Response(200, json={"key": "x", "lifted": True})
        if path.endswith("/clock"):
            return httpx.Response(200, json=CLOCK_JSON)
        return httpx.Response(200, json=SCENARIO_JSON)

    with Control("http://mock.test/", "tok", transport=httpx.MockTransport(handler)) as control:
        assert control.url == "http://mock.test"
        assert control.verify("createPet", body_contains={"name": "Rex"}, since=3).matched == [4]
        control.verify(count=0, method="GET", path="/pets/{petId}", status=404, key="k")
        assert control.requests(operation="listPets", status=200) == []
        control.clear_requests()
        assert control.issue_key({"per_minute": 1, "per_day": 2}, tenant="t").limits.per_day == 2
        control.revoke_key("a/b?c")
        control.revoke_key("..")
        assert control.lift_ban("x") is True
        assert control.set_time(datetime(2030, 1, 1, 0, 0, 0, 500000)).mode == "manual"
        assert control.load_scenario({"version": 1}).source == "version: 1"
    assert all(auth == "Bearer tok" for *_, auth, _ in seen)
    assert all(client == "python" for *_, client in seen), "X-Mockstore-Client on every call"
    methods_urls = [(m, u) for m, u, *_ in seen]
    bodies = [json.loads(b) if b else None for _, _, b, *_ in seen]
    assert methods_urls[0] == ("POST", "http://mock.test/__mockstore/verify")
    assert bodies[0] == {
        "operation": "createPet",
        "at_least": 1,
        "body_contains": {"name": "Rex"},
        "since": 3,
    }
    assert bodies[1] == {
        "count": 0,
        "method": "GET",
        "path": "/pets/{petId}",
        "status": 404,
        "key": "k",
    }
    assert methods_urls[2] == (
        "GET",
        "http://mock.test/__mockstore/requests?operation=listPets&status=200",
    )
    assert methods_urls[3] == ("DELETE", "http://mock.test/__mockstore/requests")
    assert bodies[4] == {"plan": {"per_minute": 1, "per_day": 2}, "tenant": "t"}
    assert methods_urls[5] == ("DELETE", "http://mock.test/__mockstore/keys/a%2Fb%3Fc")
    assert methods_urls[6] == ("DELETE", "http://mock.test/__mockstore/keys/%2E%2E")
    assert methods_urls[7] == ("DELETE", "http://mock.test/__mockstore/bans/x")
    assert bodies[8] == {"set": "2030-01-01T00:00:00.500000Z"}
    assert methods_urls[9][0] == "PUT"
    assert json.loads(seen[9][2]) == {"version": 1}


def test_an_answer_of_the_wrong_shape_is_a_control_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"status": "ok"})

    with (
        Control("http://mock.test", transport=httpx.MockTransport(handler)) as control,
        pytest.raises(ControlError) as caught,
    ):
        control.health()
    assert caught.value.code == "unexpected_answer"
    assert "Health lacks 'version'" in caught.value.message


def test_close_and_context_manager(running: LiveServer) -> None:
    control = Control(running.url)
    assert control.health().status == "ok"
    control.close()
    with pytest.raises(RuntimeError):
        control.health()


# -- the journal (issue 5's endpoints) -------------------------------------------------


def test_requests_filters_and_clear(control: Control, running: LiveServer) -> None:
    _journal_or_skip(control)
    since = control.reset().journal_seq
    key = control.issue_key("pro").key
    with _api(running, key) as api:
        api.get("/pets")
        api.post("/pets", json={"name": "Rex", "categoryId": 1})
        api.get("/pets/999")
    entries = control.requests(since=since)
    assert [e.operation for e in entries] == ["listPets", "createPet", "getPet"]
    assert [e.response.status for e in entries] == [200, 201, 404]
    assert all(e.seq > since for e in entries)
    assert key not in repr(entries), "entries show the key masked"
    assert [e.operation for e in control.requests(since=since, status=404)] == ["getPet"]
    assert len(control.requests(since=since, operation="createPet")) == 1
    assert len(control.requests(since=since, key=key)) == 3
    assert control.requests(since=since, key="free-key") == []
    control.clear_requests()
    assert control.requests() == []


def test_verify_counts_and_explains(control: Control, running: LiveServer) -> None:
    _journal_or_skip(control)
    since = control.reset().journal_seq
    with _api(running, "pro-key") as api:
        for name in ("Rex", "Rex", "Bella"):
            api.post("/pets", json={"name": name, "categoryId": 1})
    assert control.verify("createPet", count=3, since=since).count == 3
    assert control.verify("createPet", body_contains={"name": "Rex"}, since=since).count == 2
    assert control.verify("createPet", at_most=5, status=201, since=since).count == 3
    with pytest.raises(VerificationError) as caught:
        control.verify("createPet", count=1, body_contains={"name": "Rex"}, since=since)
    assert caught.value.count == 2
    assert str(caught.value), "the server's message explains the mismatch"
    with pytest.raises(AssertionError):
        control.verify("getPet", since=since)
    with pytest.raises(ControlError) as as_control_error:
        control.verify("getPet", since=since)
    assert as_control_error.value.code == "verification_failed", "one error type for every call"


def test_har_and_report(control: Control, running: LiveServer) -> None:
    _journal_or_skip(control)
    control.clear_requests()
    with _api(running, "free-key") as api:
        api.get("/pets")
        api.get("/pets/1")
    har = control.har()
    assert har["log"]["version"] == "1.2"
    assert len(har["log"]["entries"]) == 2
    assert "Bearer free-key" not in json.dumps(har), "masked by default"
    assert "Bearer free-key" in json.dumps(control.har(mask=False))
    report = control.report()
    assert report.summary.requests == 2
    assert report.timeline is None
    assert {f.id for f in report.findings} == {"ETQ004"}
    assert [op.operation for op in report.coverage.operations][:3] == [
        "listPets",
        "createPet",
        "getPet",
    ]
    assert report.raw["summary"]["requests"] == 2
    since_first = control.report(since=report.summary.first_seq, timeline=True)
    assert since_first.summary.requests == 1
    assert since_first.timeline is not None and len(since_first.timeline.rows) == 1
