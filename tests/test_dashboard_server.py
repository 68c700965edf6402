"""The dashboard's server side: its files, its headers, the event stream, and the reads it adds."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.control import events as event_stream
from mockstore.control.dashboard import PAGE_POLICY, ui_files
from mockstore.control.events import MAX_STREAMS, encode_entry, next_batch
from mockstore.control.guard import is_public_path
from mockstore.journal import Entry, Journal, mask
from mockstore.scenario import bundled_names, read_scenario_source
from tests.support import auth, live_server

ROOT = Path(__file__).resolve().parent.parent
UI = ROOT / "mockstore" / "ui"


# -- the page and its files -----------------------------------------------------------


def test_the_page_is_served_with_a_strict_policy(server: Any) -> None:
    page = httpx.get(server.url + "/__mockstore/ui")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["content-security-policy"] == PAGE_POLICY
    for directive in ("default-src 'none'", "script-src 'self'", "style-src 'self'"):
        assert directive in PAGE_POLICY
    assert "unsafe-inline" not in PAGE_POLICY and "unsafe-eval" not in PAGE_POLICY
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    for name, kind in (("main.js", "text/javascript"), ("app.css", "text/css")):
        asset = httpx.get(f"{server.url}/__mockstore/ui/{name}")
        assert asset.status_code == 200
        assert asset.headers["content-type"].startswith(kind)
        assert asset.headers["x-content-type-options"] == "nosniff"
        assert asset.content == (UI / name).read_bytes()
    missing = httpx.get(server.url + "/__mockstore/ui/nope.js")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


@pytest.mark.parametrize("path", ["/__mockstore", "/__mockstore/", "/__mockstore/ui/"])
def test_the_control_root_redirects_to_the_page(server: Any, path: str) -> None:
    answer = httpx.get(server.url + path)
    assert answer.status_code == 307
    assert answer.headers["location"] == "/__mockstore/ui"


def test_the_files_need_no_network_and_run_nothing_inline() -> None:
    page = (UI / "index.html").read_text(encoding="utf-8")
    assert "<style" not in page and " style=" not in page
    for tag in re.findall(r"<script[^>]*>", page):
        assert 'src="/__mockstore/ui/' in tag, f"an inline script: {tag}"
    for path in UI.iterdir():
        text = path.read_text(encoding="utf-8")
        # The SVG namespace is a name, not an address anything fetches.
        text = text.replace('"http://www.w3.org/2000/svg"', "")
        assert not re.search(r"https?://", text), f"{path.name} names an external address"
        assert "@import" not in text and "url(" not in text, path.name
        assert "innerHTML" not in text and "eval(" not in text, path.name
    served = set(ui_files())
    assert served == {p.name for p in UI.iterdir()}


def test_page_weight_stays_small() -> None:
    raw = sum(len(body) for body, _ in ui_files().values())
    zipped = sum(len(gzip.compress(body, 9)) for body, _ in ui_files().values())
    print(f"dashboard page weight: {raw:,} bytes raw, {zipped:,} bytes gzipped")
    assert raw < 150_000 and zipped < 50_000


def test_the_page_needs_no_token_and_everything_else_still_does() -> None:
    with live_server("--control-token", "s3cret") as server:
        control = server.url + "/__mockstore"
        assert httpx.get(control + "/ui").status_code == 200
        assert httpx.get(control + "/ui/main.js").status_code == 200
        assert httpx.get(control + "/").status_code == 307
        assert httpx.get(control + "/health").status_code == 200
        for path in ("/events", "/scenarios", "/scenarios/default", "/requests/1", "/report.html"):
            refused = httpx.get(control + path)
            assert refused.status_code == 401, path
            assert refused.json()["code"] == "unauthorized"
        token = {"Authorization": "Bearer s3cret"}
        assert httpx.get(control + "/scenarios", headers=token).status_code == 200


def test_only_the_pages_own_paths_skip_the_token() -> None:
    assert all(is_public_path(p) for p in ("/", "/ui", "/ui/", "/ui/main.js", "/ui/app.css"))
    for path in ("/health", "/keys", "/events", "/uix", "/ui/../keys", "/ui/a/b", "/ui/.."):
        assert not is_public_path(path), path


def test_no_control_means_no_page() -> None:
    with live_server("--no-control") as server:
        for path in ("/__mockstore", "/__mockstore/", "/__mockstore/ui", "/__mockstore/ui/main.js"):
            answer = httpx.get(server.url + path)
            assert answer.status_code == 404, path
            assert answer.json()["code"] == "not_found"
        assert "dashboard:" not in server.log()


def test_serve_prints_the_dashboard_address() -> None:
    with live_server() as server:
        assert f"dashboard: {server.url}/__mockstore/ui" in server.log()
    with live_server("--log-format", "json") as server:
        start = json.loads(server.output[0])
        assert start["dashboard"] == server.url + "/__mockstore/ui"


def test_a_non_editable_install_ships_the_page(tmp_path: Path) -> None:
    # The Dockerfile's build: a wheel from pyproject.toml, README.md, mockstore/, scenarios/.
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "mockstore", source / "mockstore", ignore=ignore)
    shutil.copytree(ROOT / "scenarios", source / "scenarios", ignore=ignore)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), "."],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("mockstore-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in UI.iterdir():
        assert f"mockstore/ui/{path.name}" in names


# -- the small reads the page uses ---------------------------------------------------------


def test_bundled_scenarios_are_listed_with_their_yaml(server: Any) -> None:
    control = server.url + "/__mockstore"
    listed = httpx.get(control + "/scenarios").json()
    assert [s["name"] for s in listed] == bundled_names()
    assert all(isinstance(s["description"], str) for s in listed)
    one = httpx.get(control + "/scenarios/chaos").json()
    assert one["source"] == read_scenario_source("chaos")[0]
    for name in ("nope", "..%2Fpyproject.toml", "%2Fetc%2Fpasswd"):
        missing = httpx.get(control + "/scenarios/" + name)
        assert missing.status_code == 404
        assert missing.json()["status"] == 404


def test_a_bundled_name_never_reads_a_file_of_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app("default")
    (tmp_path / "default").write_text("not for the page\n")
    monkeypatch.chdir(tmp_path)
    with TestClient(app) as client:
        shown = client.get("/__mockstore/scenarios/default").json()
    assert shown["source"] == (ROOT / "scenarios" / "default.yaml").read_text(encoding="utf-8")


def test_one_request_by_its_sequence_number(fresh_server: Any) -> None:
    control = fresh_server.url + "/__mockstore"
    with fresh_server.client() as http:
        http.get("/v1/pets", headers=auth("pro"))
        http.get("/v1/pets/2", headers=auth("free"))
    listed = httpx.get(control + "/requests").json()["entries"]
    for entry in listed:
        assert httpx.get(f"{control}/requests/{entry['seq']}").json() == entry
    missing = httpx.get(control + "/requests/99")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_the_html_report_is_served(fresh_server: Any) -> None:
    with fresh_server.client() as http:
        http.get("/v1/pets/1", headers=auth("pro"))
    answer = httpx.get(fresh_server.url + "/__mockstore/report.html")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src" not in answer.headers["content-security-policy"]
    assert answer.text.startswith("<!DOCTYPE html>") and "ETQ004" in answer.text


# -- the event stream over HTTP ---------------------------------------------------------------


def read_events(lines: Iterator[str], wanted: int, timeout: float = 15.0) -> list[tuple]:
    """Events (name, data) from an open stream's lines until ``wanted`` have come."""
    events: list[tuple[str, Any]] = []
    name = None
    deadline = time.monotonic() + timeout
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[len("data: ") :])))
            if len(events) >= wanted:
                return events
        assert time.monotonic() < deadline, f"only {events} within {timeout} s"
    raise AssertionError(f"the stream ended after {events}")


def test_the_stream_sends_each_exchange_as_the_journal_shows_it(fresh_server: Any) -> None:
    url = fresh_server.url
    with fresh_server.client() as http:
        http.get("/v1/pets", headers=auth("pro"))
    with httpx.stream("GET", url + "/__mockstore/events", timeout=15) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["cache-control"] == "no-store"
        lines = stream.iter_lines()
        (hello, backlog) = read_events(lines, 2)
        assert hello[0] == "hello" and hello[1]["since"] == 0 and hello[1]["last_seq"] == 1
        assert hello[1]["max_streams"] == MAX_STREAMS and hello[1]["streams"] == 1
        assert backlog[0] == "requests" and [e["seq"] for e in backlog[1]["entries"]] == [1]
        with fresh_server.client() as http:
            http.post("/v1/pets", json={"name": "Rex", "categoryId": 1}, headers=auth("pro"))
        ((name, batch),) = read_events(lines, 1)
    assert name == "requests" and batch["skipped"] == 0 and batch["last_seq"] == 2
    (entry,) = batch["entries"]
    journal = httpx.get(url + "/__mockstore/requests?since=1").json()["entries"]
    assert entry == journal[0]
    assert entry["key"] == mask("pro-key")
    assert "pro-key" not in json.dumps(entry)


def test_the_stream_resumes_after_a_sequence_number(fresh_server: Any) -> None:
    with fresh_server.client() as http:
        for _ in range(3):
            http.get("/v1/pets", headers=auth("pro"))
    events = fresh_server.url + "/__mockstore/events"
    with httpx.stream("GET", events, params={"since": 2}, timeout=15) as stream:
        (_, (_, batch)) = read_events(stream.iter_lines(), 2)
    assert [e["seq"] for e in batch["entries"]] == [3]
    assert httpx.get(events, params={"since": "x"}).status_code == 400


def test_streams_are_capped_and_a_closed_one_frees_its_slot(fresh_server: Any) -> None:
    events = fresh_server.url + "/__mockstore/events"
    with httpx.Client(timeout=15, limits=httpx.Limits(max_connections=20)) as http:
        opened = []
        try:
            for _ in range(MAX_STREAMS):
                stream = http.send(http.build_request("GET", events), stream=True)
                assert stream.status_code == 200
                opened.append(stream)
            refused = http.get(events)
            assert refused.status_code == 503
            assert refused.json() == {
                "code": "too_many_streams",
                "message": refused.json()["message"],
                "status": 503,
            }
            assert str(MAX_STREAMS) in refused.json()["message"]
            opened.pop().close()
            # The server notices the disconnect on its own time: wait for the slot.
            deadline = time.monotonic() + 15
            while True:
                again = http.send(http.build_request("GET", events), stream=True)
                again.close()
                if again.status_code == 200:
                    break
                assert again.status_code == 503
                assert time.monotonic() < deadline, "the closed stream never gave its slot back"
                time.sleep(0.1)
        finally:
            for stream in opened:
                stream.close()


# -- batching, in process ---------------------------------------------------------------------


def _journal(count: int, body: bytes = b"[]") -> Journal:
    journal = Journal(size=10_000, body_bytes=4096)
    for _ in range(count):
        seq = journal.next_seq()
        journal.append(
            Entry(
                seq, f"req-{seq:06d}", 0.0, 0.0, "GET", "/v1/pets", b"",
                ((b"authorization", b"Bearer pro-key"),), b"", "127.0.0.1", "listPets",
                "pro-key", "pro", 200, (), body, 0.1, None,
            )
        )  # fmt: skip
    return journal


def _decode(event: bytes) -> dict[str, Any]:
    name, data = event.decode().removesuffix("\n\n").split("\n")
    assert name == "event: requests"
    return json.loads(data.removeprefix("data: "))


def test_a_flood_is_sent_newest_first_and_the_rest_counted_as_skipped() -> None:
    journal = _journal(600)
    sent = asyncio.run(next_batch(journal, 0, max_entries=250))
    batch, cursor = _decode(sent.event), sent.cursor
    assert [e["seq"] for e in batch["entries"]] == list(range(351, 601))
    assert batch["skipped"] == 350 and batch["last_seq"] == cursor == 600
    assert asyncio.run(next_batch(journal, cursor)) is None


def test_a_batch_holds_a_bounded_number_of_bytes() -> None:
    journal = _journal(20, body=b"x" * 1000)
    one = len(encode_entry(journal.select()[0]))
    sent = asyncio.run(next_batch(journal, 0, max_bytes=3 * one + 10))
    batch, cursor = _decode(sent.event), sent.cursor
    assert [e["seq"] for e in batch["entries"]] == [1, 2, 3]
    assert batch["skipped"] == 0 and cursor == 3
    # The rest waits for the next poll rather than being dropped.
    sent = asyncio.run(next_batch(journal, cursor, max_bytes=3 * one + 10))
    assert [e["seq"] for e in _decode(sent.event)["entries"]] == [4, 5, 6]


def test_an_entry_too_large_for_the_stream_is_cut_and_says_so() -> None:
    journal = _journal(1, body=b"y" * (event_stream.MAX_ENTRY_BYTES * 2))
    shown = json.loads(encode_entry(journal.select()[0]))
    assert shown["stream_truncated"] is True
    assert len(shown["response"]["body"]) == event_stream.BODY_PREVIEW


def test_a_cleared_journal_moves_the_cursor_on() -> None:
    journal = _journal(5)
    journal.clear()
    sent = asyncio.run(next_batch(journal, 2))
    assert _decode(sent.event) == {"entries": [], "skipped": 3, "last_seq": 5}
    assert sent.cursor == 5
