"""The pytest plugin as a user meets it: test files that use only its public fixtures and
marker, run by a separate pytest process that loads the plugin from its entry point."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mockstore import Control, create_app
from mockstore.scenario import bundled_names
from tests.support import LiveServer, mock_server

pytest_plugins = ["pytester"]

MANUAL = """\
version: 1
name: manual
clock: {start: 2026-03-01T12:00:00Z, mode: manual}
plans:
  tight: {per_minute: 2, per_day: 100}
keys:
  - {key: tight-key, plan: tight}
pets:
  - {id: 7, name: Solo, categoryId: 1, status: available}
"""

# What a user's conftest or test module would hold: plain httpx against the fixture's url.
HELPERS = f'''
import httpx
import pytest

MANUAL = """{MANUAL}"""


def auth(key):
    return {{"Authorization": f"Bearer {{key}}"}}


def pets(mockstore, key="free-key"):
    response = httpx.get(mockstore.url + "/pets", params={{"limit": 100}}, headers=auth(key))
    assert response.status_code == 200, response.text
    return response.json()
'''

USER_TESTS = """
import pathlib

import mockstore as mockstore_package

SEEN = set()


def test_url_points_at_the_api(mockstore, mockstore_server):
    SEEN.add((mockstore_server.base_url, id(mockstore_server.server)))
    assert mockstore.url == mockstore.base_url + "/v1"
    assert mockstore.base_url == mockstore_server.base_url
    response = httpx.get(mockstore.url + "/pets", headers=auth(mockstore.key("free")))
    assert response.status_code == 200
    assert len(response.json()) == 20
    assert response.headers["x-ratelimit-limit"] == "60"


def test_changes_made_in_one_test(mockstore, mockstore_server):
    SEEN.add((mockstore_server.base_url, id(mockstore_server.server)))
    created = httpx.post(
        mockstore.url + "/pets", json={"name": "Nova", "categoryId": 1}, headers=auth("pro-key")
    )
    assert created.status_code == 201
    assert len(pets(mockstore)) == 21


def test_are_gone_in_the_next(mockstore, mockstore_server):
    SEEN.add((mockstore_server.base_url, id(mockstore_server.server)))
    assert len(pets(mockstore)) == 20


def test_each_key_has_counters_of_its_own(mockstore):
    first = mockstore.key("free")
    for _ in range(3):
        httpx.get(mockstore.url + "/pets", headers=auth(first))
    second = mockstore.key("free")
    assert second != first
    response = httpx.get(mockstore.url + "/pets", headers=auth(second))
    assert response.headers["x-ratelimit-remaining"] == "59"
    pro = httpx.get(mockstore.url + "/pets", headers=auth(mockstore.key("pro")))
    assert pro.headers["x-ratelimit-limit"] == "300"
    custom = mockstore.key({"per_minute": 5, "per_day": 10}, tenant="team-a")
    assert httpx.get(mockstore.url + "/pets", headers=auth(custom)).headers[
        "x-ratelimit-limit"
    ] == "5"


@pytest.mark.mockstore_scenario(MANUAL)
def test_marker_loads_yaml_text_and_advance_moves_its_clock(mockstore):
    assert [p["name"] for p in pets(mockstore, "tight-key")] == ["Solo"]
    assert httpx.get(mockstore.url + "/pets", headers=auth("tight-key")).status_code == 200
    assert httpx.get(mockstore.url + "/pets", headers=auth("tight-key")).status_code == 429
    assert mockstore.advance(60).elapsed_seconds == 60
    assert httpx.get(mockstore.url + "/pets", headers=auth("tight-key")).status_code == 200


@pytest.mark.mockstore_scenario(str(pathlib.Path(__file__).with_name("extra.yaml")))
def test_marker_loads_a_file(mockstore):
    assert mockstore.control.health().scenario == "extra"
    assert mockstore.url.endswith("/api/v2")
    assert pets(mockstore, "extra-key") == []


@pytest.mark.mockstore_scenario(pathlib.Path(__file__).with_name("extra.yaml"))
class TestMarkedClass:
    def test_the_class_marker_applies(self, mockstore):
        assert mockstore.control.health().scenario == "extra"


@pytest.mark.mockstore_scenario("flaky-create")
def test_marker_loads_a_bundled_scenario(mockstore):
    summary = mockstore.control.scenario()
    assert summary.name == "flaky-create"
    assert summary.file == "flaky-create.yaml (bundled)"
    assert summary.faults >= 1


def test_the_session_scenario_is_back_after_a_marker(mockstore):
    assert mockstore.control.health().scenario == "default"
    assert mockstore.url.endswith("/v1")
    assert len(pets(mockstore)) == 20


def test_load_inside_a_test(mockstore):
    mockstore.load(MANUAL)
    assert mockstore.control.health().scenario == "manual"
    mockstore.set_time("2030-12-05T00:00:00Z")
    assert mockstore.control.clock().now == "2030-12-05T00:00:00Z"
    mockstore.load("default")  # a bundled name
    assert len(pets(mockstore)) == 20
    mockstore.control.load_scenario(MANUAL)


def test_and_back_again(mockstore):
    assert mockstore.control.health().scenario == "default"


def test_a_swap_behind_the_fixtures_back(mockstore):
    sneaky = MANUAL.replace("name: manual", "name: sneaky")
    put = httpx.put(mockstore.base_url + "/__mockstore/scenario", content=sneaky)
    assert put.status_code == 200


def test_is_undone_too(mockstore):
    assert mockstore.control.health().scenario == "default"


def test_in_process_app_with_asgi_transport():
    import asyncio

    from mockstore import Control, create_app

    async def main():
        transport = httpx.ASGITransport(app=create_app("default"))
        async with httpx.AsyncClient(transport=transport, base_url="http://mockstore") as client:
            listed = await client.get("/v1/pets", params={"limit": 3}, headers=auth("free-key"))
            assert listed.status_code == 200
            assert [p["id"] for p in listed.json()] == [1, 2, 3]
            issued = await client.post("/__mockstore/keys", json={"plan": "pro"})
            assert issued.status_code == 201
            mine = await client.get("/v1/pets", headers=auth(issued.json()["key"]))
            assert mine.headers["x-ratelimit-limit"] == "300"

    asyncio.run(main())
    assert mockstore_package.Control is Control


def test_the_server_was_started_once():
    assert len(SEEN) == 1, SEEN
"""

EXTRA = """\
version: 1
name: extra
base_path: /api/v2
keys:
  - {key: extra-key, plan: pro}
"""


@pytest.fixture(autouse=True)
def _lean_pytest(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user runs skip plugins this suite's own runs load and theirs do not use:
    schemathesis alone costs over a second of CPU in every pytest process started.

    After ``pytester``, which clears ``PYTEST_ADDOPTS`` when it starts.
    """
    monkeypatch.setenv(
        "PYTEST_ADDOPTS",
        "-p no:hypothesispytest -p no:anyio -p no:cacheprovider -p no:schemathesis",
    )


@pytest.fixture(scope="module")
def external() -> Iterator[LiveServer]:
    """A server started outside the user's pytest run, as a container would be."""
    with mock_server(control_token="tok") as server:
        yield server


def _write_user_suite(pytester: pytest.Pytester, tests: str) -> None:
    pytester.makepyfile(helpers=HELPERS)
    pytester.makefile(".yaml", extra=EXTRA)
    pytester.makepyfile(test_user="from helpers import *\n" + tests)


def test_fixtures_marker_and_in_process_app(pytester: pytest.Pytester) -> None:
    _write_user_suite(pytester, USER_TESTS)
    result = pytester.runpytest_subprocess("--strict-markers", "-v")
    result.assert_outcomes(passed=15)


def test_requests_and_verify_cover_only_this_test(pytester: pytest.Pytester) -> None:
    with TestClient(create_app()) as probe:
        if probe.get("/__mockstore/requests").status_code == 404:
            pytest.skip(
                "GET /__mockstore/requests answers 404: the journal endpoints "
                "(issue 5) are not mounted yet"
            )
    _write_user_suite(
        pytester,
        """
def test_earlier(mockstore):
    for _ in range(3):
        httpx.get(mockstore.url + "/pets/1", headers=auth("free-key"))


def test_requests_since_the_reset(mockstore):
    key = mockstore.key("free")
    httpx.get(mockstore.url + "/pets", headers=auth(key))
    httpx.get(mockstore.url + "/pets/1", headers=auth(key))
    httpx.post(mockstore.url + "/pets", json={"name": "Rex", "categoryId": 1}, headers=auth(key))
    entries = mockstore.requests()
    assert [e.operation for e in entries] == ["listPets", "getPet", "createPet"]
    assert [e.operation for e in mockstore.requests(status=201)] == ["createPet"]
    assert mockstore.verify("getPet", count=1).count == 1
    assert mockstore.verify("createPet", body_contains={"name": "Rex"}).count == 1
    with pytest.raises(AssertionError):
        mockstore.verify("createPet", count=2)
""",
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)


def test_a_run_that_does_not_use_the_fixtures_starts_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain="""
import os
from pathlib import Path


def children():
    mine = str(os.getpid())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\\0", b" ")
        except OSError:
            continue
        if fields[1] == mine:
            found.append(cmdline.decode())
    return found


def test_plain():
    assert not [c for c in children() if "mockstore" in c]
"""
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    # An unreachable --mockstore-url is not even looked at when no test needs it.
    result = pytester.runpytest_subprocess("--mockstore-url", "http://127.0.0.1:9")
    result.assert_outcomes(passed=1)


def test_options_and_marker_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(
        [
            "*mockstore*",
            "*--mockstore-url=URL*",
            "*--mockstore-token=TOKEN*",
            "*--mockstore-scenario*",
        ]
    )
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.mockstore_scenario(scenario):*"])


def test_xdist_workers_each_get_their_own_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "seen"
    out.mkdir()
    monkeypatch.setenv("SEEN_DIR", str(out))
    # Autoload off: the plugin is loaded by name, as `-p mockstore` in a locked-down setup.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    tests = "\n".join(
        f"""
def test_{n}(mockstore, mockstore_server, worker_id):
    created = httpx.post(
        mockstore.url + "/pets", json={{"name": "N{n}", "categoryId": 1}}, headers=auth("pro-key")
    )
    assert created.status_code == 201
    assert len(pets(mockstore)) == 21, "another worker's pet would make this 22"
    record = {{"worker": worker_id, "url": mockstore_server.base_url, "pid": os.getpid()}}
    path = os.path.join(os.environ["SEEN_DIR"], "{n}.json")
    with open(path, "w") as handle:
        json.dump(record, handle)
"""
        for n in range(8)
    )
    _write_user_suite(pytester, "import json\nimport os\n" + tests)
    result = pytester.runpytest_subprocess(
        "-p",
        "mockstore",
        "-p",
        "xdist",
        "-n",
        "2",
    )
    result.assert_outcomes(passed=8)
    records = [json.loads(p.read_text()) for p in out.iterdir()]
    assert len(records) == 8
    by_worker: dict[str, set[tuple[str, int]]] = {}
    for record in records:
        by_worker.setdefault(record["worker"], set()).add((record["url"], record["pid"]))
    assert set(by_worker) == {"gw0", "gw1"}
    assert all(len(servers) == 1 for servers in by_worker.values()), by_worker
    assert by_worker["gw0"] != by_worker["gw1"], "each worker must have its own server"


def test_an_already_running_server_by_url(
    pytester: pytest.Pytester, external: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXPECTED_URL", external.url)
    _write_user_suite(
        pytester,
        """
import os


def test_uses_the_given_server(mockstore, mockstore_server):
    assert mockstore.base_url == os.environ["EXPECTED_URL"]
    assert mockstore_server.server is None and mockstore_server.tenant is None
    assert mockstore.control.health().scenario == "checkout"
    assert len(pets(mockstore, "ci-pro-key")) == 2
    mockstore.load(MANUAL)
    assert len(pets(mockstore, "tight-key")) == 1


def test_returns_to_the_session_scenario(mockstore):
    assert mockstore.control.health().scenario == "checkout"
""",
    )
    # In the user's project, as a user keeps it: pytest picks its rootdir (and so
    # its config file) from path arguments too, and this checkout's own config
    # (-n auto) is not the user's.
    scenario = pytester.path / "checkout.yaml"
    examples = Path(__file__).resolve().parent.parent / "examples"
    scenario.write_bytes((examples / "scenarios" / "checkout.yaml").read_bytes())
    result = pytester.runpytest_subprocess(
        "--mockstore-url",
        external.url,
        "--mockstore-token",
        "tok",
        "--mockstore-scenario",
        str(scenario),
    )
    result.assert_outcomes(passed=2)


def test_a_shared_server_is_back_on_its_scenario_after_a_marked_test(
    pytester: pytest.Pytester,
) -> None:
    """The last test of a suite loads a scenario through the marker: whoever uses the
    shared server next (another job, the report) finds it on its own scenario again."""
    with mock_server("default") as shared:
        _write_user_suite(
            pytester,
            """
import pytest


def test_plain(mockstore):
    assert mockstore.control.health().scenario == "default"


@pytest.mark.mockstore_scenario(MANUAL)
def test_last_and_marked(mockstore):
    assert mockstore.control.health().scenario == "manual"
""",
        )
        result = pytester.runpytest_subprocess("--mockstore-url", shared.url)
        result.assert_outcomes(passed=2)
        with Control(shared.url) as control:
            assert control.health().scenario == "default"


def test_a_conftest_can_supply_the_url(
    pytester: pytest.Pytester, external: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Testcontainers recipe: a session fixture overriding ``mockstore_url``."""
    monkeypatch.setenv("CONTAINER_URL", external.url)
    monkeypatch.setenv("MOCKSTORE_CONTROL_TOKEN", "tok")
    pytester.makepyfile(helpers=HELPERS)
    pytester.makeconftest(
        """
import os

import pytest


@pytest.fixture(scope="session")
def mockstore_url():
    yield os.environ["CONTAINER_URL"]
"""
    )
    pytester.makepyfile(
        test_user="""
import os

import httpx
from helpers import auth


def test_runs_against_the_supplied_server(mockstore):
    assert mockstore.base_url == os.environ["CONTAINER_URL"]
    response = httpx.get(mockstore.url + "/pets", headers=auth(mockstore.key("pro")))
    assert response.status_code == 200
"""
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)


def test_url_errors_are_explained(
    pytester: pytest.Pytester, external: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user="def test_needs_it(mockstore):\n    pass\n")
    monkeypatch.setenv("MOCKSTORE_URL", external.url)  # the env form of --mockstore-url
    monkeypatch.delenv("MOCKSTORE_CONTROL_TOKEN", raising=False)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*401 unauthorized*(pass --mockstore-token)*"])


def test_scenario_mistakes_are_explained(pytester: pytest.Pytester) -> None:
    _write_user_suite(
        pytester,
        """
@pytest.mark.mockstore_scenario("version: 1\\nname: bad\\nkeys: [{key: k, plan: platinum}]\\n")
def test_invalid(mockstore):
    pass


@pytest.mark.mockstore_scenario("flakey-create")
def test_misspelt(mockstore):
    pass


def test_fine(mockstore):
    assert mockstore.control.health().scenario == "default"
""",
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*invalid_scenario*",
            "*test_user.py::test_invalid (mockstore_scenario):3:*"
            "$.keys[[]0[]].plan: unknown plan 'platinum'*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*scenario 'flakey-create' not found: no bundled scenario and no file of that "
            f"name (did you mean 'flaky-create'?); bundled: {', '.join(bundled_names())}*"
        ]
    )


def test_a_session_scenario_that_does_not_exist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user="def test_needs_it(mockstore):\n    pass\n")
    result = pytester.runpytest_subprocess("--mockstore-scenario", "nope")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*mockstore did not start*", "*bundled: *default*"])


SHARED = """\
version: 1
name: shared
clock: {start: 2026-03-01T12:00:00Z, mode: manual}
keys:
  - {key: free-key, plan: free}
  - {key: pro-key, plan: pro}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""

# Each test writes what only its worker can write (a pet named after it, its own clock,
# its free-key's counters) and checks it sees nothing of the other workers' writes.
WORKER_TESTS = """
import json
import os

import httpx
import pytest

SEEN = os.environ["SEEN_DIR"]


@pytest.mark.parametrize("n", range(24))
def test_a_worker_sees_only_its_own(mockstore, mockstore_server, worker_id, n):
    mine = f"{worker_id}-{n}"
    for _ in range(3):
        created = httpx.post(
            mockstore.url + "/pets", json={"name": mine, "categoryId": 1}, headers=auth("pro-key")
        )
        assert created.status_code == 201
    names = [p["name"] for p in pets(mockstore, "pro-key")]
    assert names == ["Rex", mine, mine, mine], names
    listed = httpx.get(mockstore.url + "/pets", headers=auth("free-key"))
    assert listed.headers["x-ratelimit-remaining"] == "59", "free-key's counters are ours"
    hour = {"gw0": 1, "gw1": 2, "gw2": 3, "gw3": 4}[worker_id]
    mockstore.set_time(f"2027-01-01T0{hour}:00:00Z")
    assert mockstore.control.clock().now == f"2027-01-01T0{hour}:00:00Z"
    entries = mockstore.requests()
    assert [e.operation for e in entries] == ["createPet"] * 3 + ["listPets"] * 2
    assert all(json.loads(e.request.body)["name"] == mine for e in entries[:3])
    key = mockstore.key("pro")
    assert key not in {k.key for k in _other_keys()}, "keys issued here exist only here"
    with open(os.path.join(SEEN, f"{mine}.json"), "w") as handle:
        json.dump({"worker": worker_id, "tenant": mockstore_server.tenant,
                   "base_url": mockstore.base_url, "key": key}, handle)


def _other_keys():
    from mockstore import Control

    with Control(os.environ["ROOT_URL"]) as root:
        return root.keys()
"""


@pytest.mark.slow  # seconds of CPU for one test (.ci/run's slow step)
def test_xdist_workers_share_one_server_through_tenants(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """N=4 workers, ONE server: each worker works in an isolated tenant of its own."""
    seen = tmp_path / "seen"
    seen.mkdir()
    with mock_server(SHARED) as shared:
        monkeypatch.setenv("SEEN_DIR", str(seen))
        monkeypatch.setenv("ROOT_URL", shared.url)
        _write_user_suite(pytester, WORKER_TESTS)
        # The API base (what the banner prints) is forgiven, as the server root is.
        result = pytester.runpytest_subprocess(
            "-p", "xdist", "-n", "4", "--mockstore-url", shared.api
        )
        result.assert_outcomes(passed=24)
        with Control(shared.url) as root:
            assert root.tenants() == [], "every worker deleted its tenant"
            assert root.requests() == [], "no request reached the shared server's own state"
            assert [p["name"] for p in root.pets()] == ["Rex"]
    records = [json.loads(p.read_text()) for p in seen.iterdir()]
    assert len(records) == 24
    tenants = {r["worker"]: r["tenant"] for r in records}
    assert set(tenants) == {"gw0", "gw1", "gw2", "gw3"}
    assert len(set(tenants.values())) == 4
    for record in records:
        assert record["base_url"] == f"{shared.url}/__mockstore/tenants/{record['tenant']}"
    header = result.stdout.str()
    assert f"mockstore: {shared.api} is not a mockstore server root; using {shared.url}" in header


def test_one_process_under_an_xdist_run_is_not_a_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pytest run started inside an xdist worker inherits its PYTEST_XDIST_* variables
    without being a worker: the plugin reads xdist's own config, never the environment."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "8")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    with mock_server() as server:
        pytester.makepyfile(
            test_user="""
def test_on_the_server_itself(mockstore, mockstore_server):
    assert mockstore_server.tenant is None
    assert mockstore.control.health().scenario == "default"
"""
        )
        result = pytester.runpytest_subprocess("--mockstore-url", server.url)
    result.assert_outcomes(passed=1)
