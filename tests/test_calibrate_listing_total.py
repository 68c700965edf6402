"""Calibrate's total-count header when a provider reads ``limit`` leniently.

A listing asked with ``limit=5.0`` or ``limit=+5`` that the provider answered with
five pets of thirty is a page, not the whole listing: its total (thirty) is not its
length. Read as a limit of the default 20, the five pets looked like the whole
listing, the total header seemed to miscount it, and calibrate left it out (Aviary's
``X-Total-Count``). Recorded from a mock that states both, calibrated with the
``mockstore`` command, the header is learned.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.fidelity_support import START, record_mock

KEY = "total-key"
PETS = "\n".join(
    f"  - {{id: {n}, name: Pet{n}, categoryId: 1, status: available}}" for n in range(1, 31)
)
PROVIDER = f"""\
version: 1
clock: {{start: 2026-03-01T12:00:30Z, mode: manual}}
keys:
  - {{key: {KEY}, plan: pro}}
collections:
  pagination: {{total_header: X-Total-Count}}
  numbers: {{query: lenient}}
pets:
{PETS}
"""
AUTH = [("authorization", f"Bearer {KEY}")]


def test_a_page_asked_with_a_lenient_limit_is_not_the_whole_listing(tmp_path: Path) -> None:
    steps = [("GET", "/v1/pets", query, AUTH, b"", 0.0)
             for query in ("limit=5.0", "limit=%2B5", "limit=2", "limit=3")]  # fmt: skip
    har = record_mock(PROVIDER, steps, START)
    shown = [e["response"]["headers"] for e in har["log"]["entries"]]
    assert all({"name": "x-total-count", "value": "30"} in h for h in shown), shown
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    learned = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert learned["collections"]["pagination"]["total_header"].lower() == "x-total-count"
