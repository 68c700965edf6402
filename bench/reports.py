"""How long the reports take on a full journal.

    .venv/bin/python bench/reports.py [--requests 10000] [--rounds 5]

The journal is filled by the real request pipeline (the ASGI app, in process,
on a manual clock), with a mix that gives every rule work: lists, creations
(some invalid), deprecated fetches, missing keys, and a Free key that runs
into 429s and a ban. Then each report step is timed on that journal. Prints
one line per step; ``--requests N`` changes the journal's size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.fidelity.replayer import call
from mockstore.reports.har import HarMeta, to_har
from mockstore.reports.html import render_html
from mockstore.reports.junit import render_junit
from mockstore.reports.model import ReportContext
from mockstore.reports.report import build_report
from mockstore.reports.text import render_text
from mockstore.scenario import load_scenario

SCENARIO = """
version: 1
name: benchmark
clock: {start: "2026-03-01T12:00:00Z", mode: manual}
keys:
  - {key: pro-key, plan: pro}
  - {key: free-key, plan: free}
journal: {size: %d}
"""


async def fill(requests: int) -> Any:
    """A runtime whose journal holds ``requests`` exchanges from the real pipeline."""
    clock = Clock(start=0, mode="manual")
    scenario = load_scenario(SCENARIO % requests, "benchmark.yaml")
    app = create_app(scenario, clock=clock)
    clock.set(scenario.clock_start or 0)
    pro = [("authorization", "Bearer pro-key")]
    free = [("authorization", "Bearer free-key")]
    body = json.dumps({"name": "Rex", "categoryId": 1}).encode()
    typed = [("content-type", "application/json")]
    for n in range(requests):
        clock.advance(0.05)
        kind = n % 10
        if kind < 4:
            await call(app, "GET", "/v1/pets", "limit=5", pro, b"", "127.0.0.1")
        elif kind == 4:
            await call(app, "POST", "/v1/pets", "", pro + typed, body, "127.0.0.1")
        elif kind == 5:
            await call(app, "POST", "/v1/pets", "", pro + typed, b'{"name": 1}', "127.0.0.1")
        elif kind == 6:
            await call(app, "GET", f"/v1/pets/{n % 30 + 1}", "", pro, b"", "127.0.0.1")
        elif kind == 7:
            await call(app, "GET", "/v1/pets", "", [], b"", f"10.0.0.{n % 7}")
        else:
            await call(app, "GET", "/v1/pets", "", free, b"", "127.0.0.1")
    return app.runtime


def _time(label: str, step: Callable[[], Any], rounds: int) -> Any:
    best = float("inf")
    result = None
    for _ in range(rounds):
        started = time.perf_counter()
        result = step()
        best = min(best, time.perf_counter() - started)
    print(f"{label:<34} {best * 1000:8.1f} ms (best of {rounds})")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time the reports on a full journal.")
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    runtime = asyncio.run(fill(args.requests))
    entries = runtime.journal.select()
    context = ReportContext(scenario="benchmark", journal_size=runtime.journal.size)
    print(f"journal: {len(entries)} entries")
    report = _time("build_report (JSON dict)", lambda: build_report(entries, context), args.rounds)
    findings = ", ".join(f"{f['id']}x{f['count']}" for f in report["findings"])
    print(f"  findings: {findings}")
    _time("json.dumps(report)", lambda: json.dumps(report), args.rounds)
    full = _time(
        "build_report + timeline",
        lambda: build_report(entries, context, timeline=True),
        args.rounds,
    )
    html = _time("render_html", lambda: render_html(full), args.rounds)
    print(f"  html: {len(html) // 1024} KiB")
    _time("render_junit", lambda: render_junit(report), args.rounds)
    _time("render_text", lambda: render_text(report), args.rounds)
    _time("to_har", lambda: to_har(entries, HarMeta()), args.rounds)
    _time(
        "report + timeline + html (end to end)",
        lambda: render_html(build_report(entries, context, timeline=True)),
        args.rounds,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
