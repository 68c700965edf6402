"""The HTML report: one self-contained page, with its charts checked in headless Chromium."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from mockstore.journal import mask
from mockstore.reports.html import render_html
from tests.support import assert_conforms, auth, mock_server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.path.exists("/usr/bin/chromium"):
    CHROMIUM = "/usr/bin/chromium"

SCENARIO = """
version: 1
name: html-report
clock: {start: "2026-03-01T12:00:00Z", mode: manual}
keys:
  - {key: pro-key, plan: pro}
  - {key: tight-key, plan: {per_minute: 4, per_day: 1000}}
"""


class Dom(HTMLParser):
    """Elements of a page as (tag, attributes, id of the enclosing svg, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict[str, Any]] = []
        self._svg: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "svg":
            self._svg.append(found.get("id") or found.get("class") or "svg")
        self.elements.append(
            {"tag": tag, "attrs": found, "svg": self._svg[-1] if self._svg else None}
        )

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg" and self._svg:
            self._svg.pop()

    def select(self, tag: str, css_class: str | None = None, svg: str | None = None) -> list[dict]:
        return [
            e
            for e in self.elements
            if e["tag"] == tag
            and (css_class is None or css_class in (e["attrs"].get("class") or "").split())
            and (svg is None or e["svg"] == svg)
        ]


def _chromium(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=90)


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    return width, height, zlib.decompress(b"".join(chunks))


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A session on a live server, its HTML report, and the journal behind it."""
    tmp = tmp_path_factory.mktemp("html")
    out = tmp / "report.html"
    with mock_server(SCENARIO) as server:
        control = server.url + "/__mockstore"
        with server.client() as http:
            for step in range(12):
                assert_conforms(http.get("/v1/pets", headers=auth("pro")))
                status = http.get("/v1/pets", headers=auth("tight-key")).status_code
                assert status in (200, 429)
                if step == 3:
                    assert_conforms(http.get("/v1/pets/1", headers=auth("pro")))
                    assert_conforms(http.get("/v1/pets"))
                moved = httpx.post(control + "/clock", json={"advance_seconds": 7})
                assert moved.status_code == 200
        entries = httpx.get(control + "/requests").json()["entries"]
        command = [sys.executable, "-m", "mockstore", "report", "--url", server.url]
        result = subprocess.run(
            [*command, "--format", "html", "--output", str(out), "--fail-on", "never"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    return {"tmp": tmp, "html": out, "entries": entries}


def test_the_page_is_self_contained(page: dict[str, Any]) -> None:
    html = page["html"].read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    lowered = html.lower()
    for marker in ("<script", "<link", "<img", "<iframe", "src=", "@import", "url("):
        assert marker not in lowered, f"{marker} would fetch or run something"
    assert "http://" not in lowered.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in lowered
    assert "tight-key" not in html and mask("tight-key") in html


def test_chromium_renders_both_charts(page: dict[str, Any]) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (CI installs it: apt-get install chromium)")
    result = _chromium("--dump-dom", page["html"].as_uri(), tmp=page["tmp"])
    assert result.returncode == 0, result.stderr[-2000:]
    dom = Dom()
    dom.feed(result.stdout)
    entries = page["entries"]

    assert dom.select("svg", svg="timeline"), "the timeline chart is in the DOM"
    bars = dom.select("rect", "bar", svg="timeline")
    assert bars and all(float(b["attrs"]["height"]) > 0 for b in bars)
    assert {b["attrs"]["class"] for b in bars} >= {"bar ok", "bar limited", "bar auth"}

    headroom = dom.select("svg", "headroom")
    keys = {e["key"] for e in entries}
    assert len(headroom) == len(keys) == 3  # two keys and the anonymous client
    lines = dom.select("path", "headroom-line")
    assert len(lines) == 3 and all(line["attrs"]["d"].startswith("M") for line in lines)
    limited = sum(1 for e in entries if e["response"]["status"] == 429)
    assert limited > 0
    assert len(dom.select("circle", "limited")) == limited

    findings = dom.select("article", "finding")
    assert {f["attrs"]["id"].split("-")[0] for f in findings} >= {"ETQ001", "ETQ004", "ETQ007"}
    assert dom.select("table") and dom.select("td", "never")


def test_chromium_screenshot_is_a_drawn_page(page: dict[str, Any]) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (CI installs it: apt-get install chromium)")
    shot = page["tmp"] / "report.png"
    result = _chromium(
        f"--screenshot={shot}", "--window-size=1100,1500", page["html"].as_uri(), tmp=page["tmp"]
    )
    assert result.returncode == 0, result.stderr[-2000:]
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (1100, 1500)
    # A blank page compresses to almost nothing and has a handful of byte values.
    assert len(set(pixels)) > 50
    keep = os.environ.get("MOCKSTORE_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


def test_a_frozen_clock_plots_by_request_number(client: TestClient) -> None:
    for _ in range(3):
        assert_conforms(client.get("/v1/pets", headers=auth("free")))
    report = client.get("/__mockstore/report", params={"include": "timeline"}).json()
    assert [row[1] for row in report["timeline"]["rows"]] == [0, 0, 0]
    html = render_html(report)
    assert "request number" in html and "#1" in html
    assert html.count('class="bar ok"') == 3


def test_an_empty_journal_renders(client: TestClient) -> None:
    report = client.get("/__mockstore/report", params={"include": "timeline"}).json()
    html = render_html(report)
    assert "No requests." in html and "every rule passed" in html
