"""One mock, one journal: every worker and every replica on one state reads the same journal.

Against a real ``redis-server`` and real ``mockstore serve`` processes. A journal
read (the list, the report, verify, the HAR) through any process holds every
answer any process gave before the read began, at once (no waiting: a read runs a
barrier), and the sequence numbers, a reset's ``journal_seq`` and the run numbers
are the mock's: the same through every process.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.redis_server import RedisServer, redis_available, required
from tests.support import TOOL, LiveServer, live_server

pytestmark = pytest.mark.skipif(
    not redis_available() and not required(), reason="redis-server is not installed"
)

SCENARIO = """\
version: 1
name: one-journal
clock: {start: "2026-03-01T12:00:05Z", mode: manual}
keys:
  - {key: pro-key, plan: enterprise}
"""
KEY = {"Authorization": "Bearer pro-key"}


@pytest.fixture
def scenario_file(tmp_path: Path) -> str:
    path = tmp_path / "one-journal.yaml"
    path.write_text(SCENARIO)
    return str(path)


def _fresh(method: str, url: str, **kwargs: object) -> httpx.Response:
    """One request on a connection of its own (so whichever worker the kernel picks)."""
    with httpx.Client(timeout=30, headers={"Connection": "close"}) as client:
        return client.request(method, url, **kwargs)  # type: ignore[arg-type]


def _entries(server: LiveServer, query: str = "") -> list[dict]:
    return _fresh("GET", server.url + "/__mockstore/requests" + query).json()["entries"]


def _verified(server: LiveServer, operation: str, count: int) -> dict:
    body = {"operation": operation, "count": count}
    answer = _fresh("POST", server.url + "/__mockstore/verify", json=body, headers=TOOL)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _report_requests(server: LiveServer) -> int:
    report = _fresh("GET", server.url + "/__mockstore/report?run=current").json()
    return int(report["summary"]["requests"])


def test_every_worker_reads_every_workers_answers_at_once(
    redis_server: RedisServer, scenario_file: str
) -> None:
    with live_server(
        "--scenario", scenario_file, "--state", redis_server.url, "--workers", "2"
    ) as server:
        for _ in range(100):
            answer = _fresh("GET", server.url + "/v1/pets?limit=1", headers=KEY)
            assert answer.status_code == 200
        # Read right away, through whichever worker, several times: all 100 every time.
        for _ in range(4):
            entries = _entries(server, "?run=current")
            assert len(entries) == 100
            assert _report_requests(server) == 100
            verdict = _verified(server, "listPets", 100)
            assert verdict["ok"], verdict
            assert len(_fresh("GET", server.url + "/__mockstore/requests.har").json()["log"][
                "entries"]) == 100  # fmt: skip


def test_creates_through_two_replicas_are_verified_through_a_third_right_after(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as a, live_server(*state) as b, live_server(*state) as c:
        for round_ in range(3):
            for index, server in enumerate((a, b)):
                body = {"name": f"pet-{round_}-{index}", "categoryId": 1}
                created = _fresh("POST", server.url + "/v1/pets", json=body, headers=KEY)
                assert created.status_code == 201
            verdict = _verified(c, "createPet", 2 * (round_ + 1))
            assert verdict["ok"], verdict
        names = [e["request"]["body"] for e in _entries(c)]
        assert len(names) == 6


def test_sequence_numbers_journal_seq_and_runs_are_the_mocks(
    redis_server: RedisServer, scenario_file: str
) -> None:
    state = ("--scenario", scenario_file, "--state", redis_server.url)
    with live_server(*state) as a, live_server(*state) as b, live_server(*state) as c:
        servers = (a, b, c)
        for index in range(9):
            _fresh("GET", servers[index % 3].url + "/v1/pets?limit=1", headers=KEY)
        numbered = [[(e["seq"], e["request_id"]) for e in _entries(s)] for s in servers]
        assert numbered[0] == numbered[1] == numbered[2]
        assert len(numbered[0]) == 9

        seqs = []
        runs = []
        for server in servers:  # a reset through each in turn, nothing between them
            reset = _fresh("POST", server.url + "/__mockstore/reset", headers=TOOL).json()
            seqs.append(reset["journal_seq"])
            runs.append(reset["run"])
            health = [_fresh("GET", s.url + "/__mockstore/health").json()["run"] for s in servers]
            assert health == [reset["run"]] * 3
            last = [
                _fresh("GET", s.url + "/__mockstore/requests").json()["last_seq"] for s in servers
            ]
            assert last == [reset["journal_seq"]] * 3
        assert seqs == [numbered[0][-1][0]] * 3
        assert runs == sorted(set(runs))  # three runs, numbered by the mock, in order

        # After a reset, since=journal_seq through any process is what came after it.
        _fresh("GET", a.url + "/v1/pets?limit=1", headers=KEY)
        _fresh("GET", b.url + "/v1/pets?limit=1", headers=KEY)
        for server in servers:
            after = _entries(server, f"?since={seqs[-1]}")
            assert [e["run"] for e in after] == [runs[-1]] * 2
