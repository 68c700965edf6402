"""``collections.filters.several_statuses``: ``status=available,pending`` lists either.

Over a real uvicorn process, in memory and with its state in Redis (the request
script's union of the statuses' member sets), the pages of a filter naming several
statuses are exactly the pages of the listing kept to those statuses; and for all
inputs (hypothesis, the app in process) a walk by offset shows each such pet once,
in the listing's order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore import MockServer
from mockstore.app import create_app
from mockstore.shared.store import FIRST_GUESS
from tests.fidelity_support import record_mock
from tests.redis_server import RedisServer
from tests.support import examples, mock_server

KEY = {"Authorization": "Bearer k"}
STATUSES = ("available", "pending", "sold")


def scenario(filters: dict[str, Any], pets: list[dict[str, Any]], **collections: Any) -> str:
    return yaml.safe_dump(
        {
            "version": 1,
            "clock": {"start": "2026-03-01T12:00:00Z", "mode": "manual"},
            "keys": [{"key": "k", "plan": {"per_minute": 100_000}}],
            "pets": pets,
            "collections": {"filters": filters, **collections},
        },
        sort_keys=False,
    )


def pet(number: int, status: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"id": number, "name": f"p{number * 7 % 23:02d}~{number}"}
    found["categoryId"] = 1
    if status is not None:
        found["status"] = status
    return found


SCENARIO_PETS = [pet(n, (*STATUSES, None)[n % 4]) for n in range(1, 30)]


def test_the_spec_reading_refuses_several_statuses() -> None:
    with (
        mock_server(scenario({}, SCENARIO_PETS)) as server,
        httpx.Client(base_url=server.url, headers=KEY, timeout=10) as client,
    ):
        for query in ("status=available,pending", "status=available&status=pending"):
            refused = client.get(f"/v1/pets?{query}")
            assert refused.status_code == 400, refused.text
            assert refused.json()["status"] == 400 and refused.json()["code"]


@pytest.mark.parametrize(
    ("spelling", "served", "refused"),
    [
        ("comma", ["status=available,pending", "status=pending,available"],
         ["status=available&status=pending", "status=available,lost", "status=available,"]),
        ("repeated", ["status=available&status=pending", "status=pending&status=available"],
         ["status=available,pending", "status=available&status=Sold"]),
        ("both", ["status=available,pending", "status=pending&status=available,available"],
         ["status=available,,pending", "status=available&status=lost"]),
    ],
)  # fmt: skip
def test_each_spelling_lists_the_pets_of_any_status_it_names(
    spelling: str, served: list[str], refused: list[str]
) -> None:
    wanted = [p["name"] for p in SCENARIO_PETS if p.get("status") in ("available", "pending")]
    with (
        mock_server(scenario({"several_statuses": spelling}, SCENARIO_PETS)) as server,
        httpx.Client(base_url=server.url, headers=KEY, timeout=10) as client,
    ):
        for query in served:
            answer = client.get(f"/v1/pets?limit=100&{query}")
            assert answer.status_code == 200, (query, answer.text)
            assert [p["name"] for p in answer.json()] == wanted, query
        for query in refused:
            answer = client.get(f"/v1/pets?{query}")
            assert answer.status_code == 400, (query, answer.text)
            body = answer.json()
            assert body["status"] == 400 and body["code"] and body["message"], body
        # One status, and the other parameters' rules, as before.
        one = client.get("/v1/pets?limit=100&status=sold")
        assert [p["status"] for p in one.json()] == ["sold"] * 7
        assert client.get("/v1/pets?limit=x&status=available,pending").status_code == 400


def test_a_status_in_any_case_and_a_repeated_status_read_first() -> None:
    text = scenario(
        {"several_statuses": "comma", "status_case": "insensitive"},
        SCENARIO_PETS,
        repeated_parameters="first",
    )
    with (
        mock_server(text) as server,
        httpx.Client(base_url=server.url, headers=KEY, timeout=10) as client,
    ):
        answer = client.get("/v1/pets?limit=100&status=SOLD,Pending&status=available")
        assert answer.status_code == 200, answer.text
        assert {p["status"] for p in answer.json()} == {"sold", "pending"}


def _walk(client: httpx.Client, query: str, limit: int, total: int) -> list[list[str]]:
    pages = []
    for offset in range(0, total + limit, limit):
        page = client.get(f"/v1/pets?limit={limit}&offset={offset}&{query}")
        assert page.status_code == 200, page.text
        assert page.headers["x-total-count"] == str(total)
        pages.append([p["name"] for p in page.json()])
    return pages


def test_pages_of_several_statuses_are_exact_in_memory_and_in_redis(
    redis_server: RedisServer,
) -> None:
    """More pets created than the script's first window (interleaved by name), paged by offset."""
    text = scenario(
        {"several_statuses": "comma"},
        SCENARIO_PETS,
        pagination={"style": "offset", "total_header": "X-Total-Count"},
        order={"by": "name"},
    )
    created = [
        {"name": f"p{i % 23:02d}~c{i}", "categoryId": 2, "status": STATUSES[i % 3]}
        for i in range(FIRST_GUESS + 20)
    ]
    every = SCENARIO_PETS + created
    kept = sorted(p["name"] for p in every if p.get("status") in ("pending", "sold"))
    expected = [kept[offset : offset + 7] for offset in range(0, len(kept) + 7, 7)]
    walks = []
    for state in (None, f"redis://127.0.0.1:{redis_server.port}/1"):
        with (
            MockServer(text, state=state) as mock,
            httpx.Client(base_url=mock.base_url, headers=KEY, timeout=10) as client,
        ):
            for new in created:
                assert client.post("/v1/pets", json=new).status_code == 201
            walks.append(_walk(client, "status=sold,pending", 7, len(kept)))
            # A cursor of one filter is no cursor of another: the filter is the same
            # whichever order its statuses are written in.
            assert _walk(client, "status=pending,sold", 7, len(kept)) == walks[-1]
    assert walks[0] == expected
    assert walks[1] == expected


@settings(
    max_examples=examples(40),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    statuses=st.lists(st.sampled_from((*STATUSES, None)), max_size=14),
    created=st.lists(st.sampled_from((*STATUSES, None)), max_size=10),
    wanted=st.lists(st.sampled_from(STATUSES), min_size=1, max_size=4),
    order=st.sampled_from(["id", "name", "insertion"]),
    direction=st.sampled_from(["ascending", "descending"]),
    style=st.sampled_from(["offset", "cursor", "limit"]),
    limit=st.integers(1, 5),
)
def test_any_filter_of_several_lists_each_of_its_pets_once_in_order(
    statuses: list[str | None],
    created: list[str | None],
    wanted: list[str],
    order: str,
    direction: str,
    style: str,
    limit: int,
) -> None:
    pets = [pet(n + 1, status) for n, status in enumerate(statuses)]
    collections: dict[str, Any] = {"order": {"by": order, "direction": direction}}
    if style != "limit":
        collections["pagination"] = {"style": style, "links": ["next"]}
    text = scenario({"several_statuses": "comma"}, pets, **collections)
    app = create_app(text)
    with TestClient(app, base_url="http://testserver", headers=KEY) as client:
        for n, status in enumerate(created):
            body = pet(100 + n, status)
            del body["id"]
            assert client.post("/v1/pets", json=body).status_code == 201
        everything = client.get("/v1/pets?limit=100").json()
        if style == "cursor":
            everything = []
            target = "/v1/pets?limit=100"
            while target:
                answer = client.get(target)
                everything += answer.json()
                target = answer.links.get("next", {}).get("url", "")
        expected = [p["name"] for p in everything if p.get("status") in set(wanted)]
        query = "status=" + ",".join(wanted)
        shown: list[str] = []
        if style == "offset":
            for offset in range(0, len(expected) + limit, limit):
                page = client.get(f"/v1/pets?limit={limit}&offset={offset}&{query}")
                assert page.status_code == 200, page.text
                shown += [p["name"] for p in page.json()]
        elif style == "cursor":
            target = f"/v1/pets?limit={limit}&{query}"
            for _ in range(len(expected) + 2):
                page = client.get(target)
                assert page.status_code == 200, page.text
                shown += [p["name"] for p in page.json()]
                target = page.links.get("next", {}).get("url", "")
                if not target:
                    break
        else:
            page = client.get(f"/v1/pets?limit=100&{query}")
            assert page.status_code == 200, page.text
            shown = [p["name"] for p in page.json()]
        assert shown == expected


@pytest.mark.parametrize(
    ("spelling", "query", "learned"),
    [
        ("comma", "status=available,pending", "comma"),
        ("repeated", "status=pending&status=available", "repeated"),
        ("refuse", "status=available,pending", None),
    ],
)
def test_calibrate_learns_the_reading_from_one_listing(
    tmp_path: Path, spelling: str, query: str, learned: str | None
) -> None:
    """A recording of one listing filtered by two statuses settles the setting, citing it."""
    text = scenario({"several_statuses": spelling}, SCENARIO_PETS)
    har = record_mock(text, [("GET", "/v1/pets", query, [("authorization", "Bearer k")], b"", 0.0)])
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    calibrated = yaml.safe_load(out.read_text(encoding="utf-8"))
    filters = (calibrated.get("collections") or {}).get("filters") or {}
    assert filters.get("several_statuses") == learned, calibrated.get("collections")
