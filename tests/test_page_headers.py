"""``collections.pagination.page_headers``: GitLab's page headers, served and learned.

A provider that pages by number without ``Link`` (GitLab, Aviary) states on every
listing its page, its size, the number of pages and the pages around it, empty
where there is none. The docs' example is served over HTTP and walked to the end;
for any listing size and limit the figures are what a client computes (a Hypothesis
property); a scenario that asks for them without pages is refused; and calibrate
learns them from a recording of a mock that writes them.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.keys import key_alias
from mockstore.scenario import ScenarioError, load_scenario
from tests.docs_pages import page, section
from tests.fidelity_support import START, record_mock
from tests.support import mock_server

KEY = "pages-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
NAMES = ("X-Page", "X-Per-Page", "X-Total-Pages", "X-Next-Page", "X-Prev-Page")


def _docs_example() -> dict:
    text = section(page("collections.md"), "## Pages")
    fenced = text.split("```yaml", 1)[1].split("```", 1)[0]
    block = "\n".join(line[2:] if line.startswith("  ") else line for line in fenced.split("\n"))
    return yaml.safe_load(block)


def _scenario(collections: dict, pets: int) -> str:
    return yaml.safe_dump(
        {
            "version": 1,
            "keys": [{"key": KEY, "plan": "pro"}],
            **collections,
            "pets": [{"id": n, "name": f"Pet{n}", "categoryId": 1} for n in range(1, pets + 1)],
        }
    )


def test_the_docs_example_is_served_and_walked_to_the_last_page() -> None:
    example = _docs_example()
    assert example["collections"]["pagination"]["page_headers"]["next_page"] == "X-Next-Page"
    seen: list[int] = []
    with (
        mock_server(load_scenario(_scenario(example, 7))) as server,
        httpx.Client(base_url=server.api, headers=AUTH, timeout=30) as client,
    ):
        page_number = "1"
        while page_number:
            answer = client.get("/pets", params={"limit": 3, "page": page_number})
            assert answer.status_code == 200
            seen += [pet["id"] for pet in answer.json()]
            assert answer.headers["x-page"] == page_number
            assert answer.headers["x-per-page"] == "3"
            assert answer.headers["x-total-pages"] == "3"
            assert answer.headers["x-total-count"] == "7"
            previous = answer.headers["x-prev-page"]
            assert previous == ("" if page_number == "1" else str(int(page_number) - 1))
            page_number = answer.headers["x-next-page"]
        document = client.get(server.url + "/__mockstore/openapi.json").json()
    assert seen == list(range(1, 8))
    declared = document["paths"]["/pets"]["get"]["responses"]["200"]["headers"]
    assert set(NAMES) <= set(declared)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pets=st.integers(0, 12), limit=st.integers(1, 5), number=st.integers(1, 6))
def test_the_figures_are_what_a_client_computes(pets: int, limit: int, number: int) -> None:
    collections = {
        "collections": {
            "pagination": {
                "style": "page",
                "page_headers": {"page": "X-Page", "total_pages": "X-Total-Pages",
                                 "next_page": "X-Next-Page", "prev_page": "X-Prev-Page"},
            }
        }
    }  # fmt: skip
    with TestClient(create_app(load_scenario(_scenario(collections, pets)))) as client:
        answer = client.get(f"/v1/pets?limit={limit}&page={number}", headers=AUTH)
    pages = max(1, math.ceil(pets / limit))
    assert answer.status_code == 200
    assert len(answer.json()) == max(0, min(limit, pets - (number - 1) * limit))
    assert answer.headers["x-page"] == str(number)
    assert answer.headers["x-total-pages"] == str(pages)
    assert answer.headers["x-next-page"] == (str(number + 1) if number * limit < pets else "")
    assert answer.headers["x-prev-page"] == (str(number - 1) if number > 1 else "")
    assert "x-per-page" not in answer.headers  # a figure left out is not written


def test_page_headers_without_page_numbers_are_refused_where_they_are() -> None:
    text = "version: 1\ncollections:\n  pagination:\n    page_headers: {page: X-Page}\n"
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text)
    assert "collections.pagination.page_headers" in str(refused.value)
    assert "style to page" in str(refused.value)


def test_calibrate_learns_them_from_a_recording(tmp_path: Path) -> None:
    provider = _scenario(_docs_example(), 9)
    auth = [("authorization", f"Bearer {KEY}")]
    steps = [("GET", "/v1/pets", query, auth, b"", 0.0)
             for query in ("limit=2", "limit=4&page=1", "limit=4&page=2", "limit=4&page=3",
                           "limit=5")]  # fmt: skip
    har = record_mock(provider, steps, START)
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pagination = yaml.safe_load(out.read_text(encoding="utf-8"))["collections"]["pagination"]
    assert pagination["style"] == "page"
    assert {k: v.lower() for k, v in pagination["page_headers"].items()} == {
        "page": "x-page", "per_page": "x-per-page", "total_pages": "x-total-pages",
        "next_page": "x-next-page", "prev_page": "x-prev-page",
    }  # fmt: skip


def test_first_pages_alone_calibrate_to_a_scenario_that_validates(tmp_path: Path) -> None:
    # Only first pages: X-Prev-Page is empty on every listing, a constant no scenario
    # header can state (calibrate wrote it, and its own file failed validation).
    auth = [("authorization", f"Bearer {KEY}")]
    steps = [("GET", "/v1/pets", f"limit={n}", auth, b"", 0.0) for n in (2, 3, 4)]
    har = record_mock(_scenario(_docs_example(), 9), steps, START)
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    load_scenario(out.read_text(encoding="utf-8"))
    assert "the header x-prev-page has a value no constant header can state" in done.stderr


def test_probes_of_a_live_provider_do_not_make_them_constants(tmp_path: Path) -> None:
    # calibrate --target probes the provider: one probe's listing shows X-Page: 1; it is
    # the page header, not a constant header as well (the mock wrote both, joined).
    provider = _scenario(_docs_example(), 9)
    auth = [("authorization", f"Bearer {KEY}")]
    steps = [("GET", "/v1/pets", query, auth, b"", 0.0)
             for query in ("limit=4&page=1", "limit=4&page=2", "limit=3&page=3")]  # fmt: skip
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(record_mock(provider, steps, START)), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    with mock_server(load_scenario(provider)) as upstream:
        done = subprocess.run(
            [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path),
             "--target", upstream.api, "--key", KEY, "--wait", "0", "--out", str(out)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    calibrated = load_scenario(out.read_text(encoding="utf-8"))
    with TestClient(create_app(calibrated)) as client:
        answer = client.get(
            "/v1/pets?limit=4&page=2", headers={"Authorization": f"Bearer {key_alias(KEY)}"}
        )
    assert answer.status_code == 200
    assert answer.headers.get_list("x-page") == ["2"]
    assert answer.headers.get_list("x-next-page") == ["3"]


def test_a_page_refused_for_its_number_is_learned_as_bad_offset(tmp_path: Path) -> None:
    # page=0 refused: the recording's paged listings name page, so the refusal is the
    # page's (bad_offset), its code and message learned (it was unexplained: the mock
    # answered invalid_parameter where the provider said E4001).
    example = _docs_example()
    example["behaviour"] = {
        "error_codes": {"bad_offset": "E4001"},
        "error_messages": {"bad_offset": "Invalid value '{value}' for parameter '{parameter}'"},
    }
    provider = _scenario(example, 9)
    auth = [("authorization", f"Bearer {KEY}")]
    steps = [("GET", "/v1/pets", query, auth, b"", 0.0)
             for query in ("limit=4&page=1", "limit=4&page=2", "page=0", "page=x")]  # fmt: skip
    har = record_mock(provider, steps, START)
    assert [e["response"]["status"] for e in har["log"]["entries"]] == [200, 200, 400, 400]
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    behaviour = yaml.safe_load(out.read_text(encoding="utf-8"))["behaviour"]
    assert behaviour["error_codes"]["bad_offset"] == "E4001"
    assert (
        behaviour["error_messages"]["bad_offset"]
        == example["behaviour"]["error_messages"]["bad_offset"]
    )
