"""What ``mockstore record`` adds to a request, and how long ``mockstore drift`` takes.

    .venv/bin/python bench/fidelity.py [--requests 3000] [--exchanges 10000]

**Record overhead** (target: under 2 ms added, median). The upstream is
bench/ceiling.py (a bare Starlette app on the same uvicorn settings as
mockstore, ``GET /v1/pets`` with a constant 1,135-byte JSON body), so the
figure is the proxy's alone. ``mockstore record`` runs in front of it. One
client (this script, ``http.client``, keep-alive) times each request from
send to last byte, alternating direct and proxied requests one by one (the
order flips every pair), so a noisy moment hits both sides alike. Reported:
each side's median, p90 and p99, the difference of the medians, and the
median of the per-pair differences.

**Drift speed** (target: a 10,000-exchange HAR in under 10 s). A HAR of
``--exchanges`` exchanges is made by running a mixed client session
(listings, creates, fetches, invalid requests, missing and unknown keys,
unknown paths, HEAD, 429s) against an in-process mock, and ``mockstore drift``
is timed on it as a subprocess, from launch to exit, against the same
scenario (no drift) and against one with every knob changed (drift on most
exchanges, so the report is large). Median of 3 runs each.

Results go to bench/results/fidelity.json, the tables to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run import free_port  # noqa: E402

PYTHON = sys.executable
BODY_BYTES = 1135  # the size of mockstore's GET /v1/pets?limit=20 body (bench/README.md)

SCENARIO = """\
version: 1
name: drift-bench
clock: {start: 2026-03-01T12:00:00Z, mode: manual}
keys:
  - {key: bench-a, plan: {per_minute: 100000, per_day: 100000000}}
  - {key: bench-b, plan: {per_minute: 20, per_day: 100000}}
generate: {pets: 200}
"""
KNOBS = """\
behaviour:
  validation_status: 422
  ratelimit_reset: delta
  retry_after: http-date
  serve_head: false
  path_check: before_auth
  unknown_fields: keep
  default_status: available
  ratelimit_draft_headers: true
  error_codes: {bad_limit: BAD_LIMIT, unknown_key: BAD_KEY, rate_limited: SLOW_DOWN}
"""


def _wait_for(port: int, path: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", path)
            connection.getresponse().read()
            connection.close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing answered on port {port}")


def _timed(connection: http.client.HTTPConnection, path: str) -> float:
    started = time.perf_counter()
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise SystemExit(f"GET {path} answered {response.status}")
    return elapsed * 1000


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def record_overhead(requests: int, warmup: int) -> dict[str, Any]:
    upstream_port, proxy_port = free_port(), free_port()
    upstream = subprocess.Popen(
        [
            PYTHON,
            str(ROOT / "bench" / "ceiling.py"),
            "--port",
            str(upstream_port),
            "--body-bytes",
            str(BODY_BYTES),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proxy = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "mockstore",
            "record",
            "--upstream",
            f"http://127.0.0.1:{upstream_port}/v1",
            "--port",
            str(proxy_port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(upstream_port, "/v1/pets")
        _wait_for(proxy_port, "/__mockstore/health")
        direct = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
        proxied = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=30)
        for _ in range(warmup):
            _timed(direct, "/v1/pets")
            _timed(proxied, "/v1/pets")
        direct_ms, proxied_ms = [], []
        for index in range(requests):
            if index % 2:
                direct_ms.append(_timed(direct, "/v1/pets"))
                proxied_ms.append(_timed(proxied, "/v1/pets"))
            else:
                proxied_ms.append(_timed(proxied, "/v1/pets"))
                direct_ms.append(_timed(direct, "/v1/pets"))
        direct.close()
        proxied.close()
    finally:
        for process in (proxy, upstream):
            process.terminate()
            process.wait(30)
    pairs = [p - d for p, d in zip(proxied_ms, direct_ms, strict=True)]
    return {
        "requests": requests,
        "direct_ms": _summary(direct_ms),
        "proxied_ms": _summary(proxied_ms),
        "added_median_ms": statistics.median(proxied_ms) - statistics.median(direct_ms),
        "added_pair_median_ms": statistics.median(pairs),
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": statistics.median(values),
        "p90": _percentile(values, 0.90),
        "p99": _percentile(values, 0.99),
    }


def make_har(exchanges: int, path: Path) -> float:
    """A HAR of ``exchanges`` mixed exchanges from an in-process mock; seconds it took."""
    from mockstore import __version__
    from mockstore.app import create_app
    from mockstore.clock import Clock
    from mockstore.fidelity.replayer import call
    from mockstore.reports.har import HarMeta, to_har
    from mockstore.scenario import load_scenario

    started = time.perf_counter()
    text = SCENARIO.replace(
        "name: drift-bench", f"name: drift-bench\njournal: {{size: {exchanges}}}"
    )
    scenario = load_scenario(text)
    clock = Clock(start=1772366400.0, mode="manual", wall=lambda: 1772366400.0)
    app = create_app(scenario, clock=clock)
    rng = random.Random(12)
    a = [("authorization", "Bearer bench-a")]
    b = [("authorization", "Bearer bench-b")]
    body = [*a, ("content-type", "application/json")]
    kinds = [
        (30, lambda: ("GET", "/v1/pets", f"limit={rng.randint(1, 40)}", a, b"")),
        (10, lambda: ("GET", "/v1/pets", "status=" + rng.choice(["sold", "available"]), a, b"")),
        (15, lambda: ("GET", f"/v1/pets/{rng.randint(1, 260)}", "", a, b"")),
        (
            10,
            lambda: (
                "POST",
                "/v1/pets",
                "",
                body,
                json.dumps({"name": f"n{rng.randint(1, 999)}", "categoryId": 2}).encode(),
            ),
        ),
        (5, lambda: ("POST", "/v1/pets", "", body, b'{"name": 7}')),
        (5, lambda: ("GET", "/v1/pets", "limit=0", a, b"")),
        (5, lambda: ("GET", "/v1/pets", "", [], b"")),
        (3, lambda: ("GET", "/v1/pets", "", [("authorization", "Bearer nobody")], b"")),
        (3, lambda: ("GET", "/v1/nowhere", "", a, b"")),
        (4, lambda: ("HEAD", "/v1/pets", "", a, b"")),
        (10, lambda: ("GET", "/v1/pets", "limit=1", b, b"")),
    ]
    weights = [w for w, _ in kinds]

    async def session() -> None:
        for _ in range(exchanges):
            clock.advance(rng.choice([0.05, 0.2, 0.5, 1.0]))
            method, target, query, headers, content = rng.choices(kinds, weights)[0][1]()
            await call(app, method, target, query, headers, content, "127.0.0.1")

    asyncio.run(session())
    entries = app.runtime.journal.select()
    meta = HarMeta(creator_version=__version__, scenario=scenario.name, base_path="/v1")
    path.write_text(json.dumps(to_har(entries, meta)))
    assert len(entries) == exchanges, len(entries)
    return time.perf_counter() - started


def drift_speed(exchanges: int, runs: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="mockstore-drift-bench-"))
    har = work / "session.har"
    made = make_har(exchanges, har)
    same, changed = work / "same.yaml", work / "changed.yaml"
    same.write_text(SCENARIO)
    changed.write_text(SCENARIO + KNOBS)
    result: dict[str, Any] = {
        "exchanges": exchanges,
        "har_bytes": har.stat().st_size,
        "har_made_s": made,
    }
    for label, scenario in (("same scenario", same), ("every knob changed", changed)):
        times, status, report = [], None, {}
        for _ in range(runs):
            out = work / "drift.json"
            started = time.perf_counter()
            done = subprocess.run(
                [
                    PYTHON,
                    "-m",
                    "mockstore",
                    "drift",
                    str(har),
                    "--scenario",
                    str(scenario),
                    "--format",
                    "json",
                    "-o",
                    str(out),
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            times.append(time.perf_counter() - started)
            status = done.returncode
            report = json.loads(out.read_text())
        result[label] = {
            "seconds": times,
            "median_s": statistics.median(times),
            "exit": status,
            "compared": report["compared"],
            "differences": len(report["differences"]),
        }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--exchanges", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "fidelity.json"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    record = record_overhead(args.requests, args.warmup)
    drift = drift_speed(args.exchanges, args.runs)
    load_after = os.getloadavg()

    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f}")
    print()
    print("| Side | Requests | median | p90 | p99 |")
    print("|---|---:|---:|---:|---:|")
    for label, key in (
        ("upstream directly", "direct_ms"),
        ("through mockstore record", "proxied_ms"),
    ):
        figures = record[key]
        print(
            f"| {label} | {args.requests} | {figures['median']:.3f} ms | "
            f"{figures['p90']:.3f} ms | {figures['p99']:.3f} ms |"
        )
    print()
    print(
        f"record adds {record['added_median_ms']:.3f} ms (difference of the medians); "
        f"median of per-pair differences {record['added_pair_median_ms']:.3f} ms; "
        "target < 2 ms"
    )
    print()
    print(
        f"| drift of a {drift['exchanges']:,}-exchange HAR ({drift['har_bytes'] / 1e6:.1f} MB) "
        "| median | runs | exit | differences |"
    )
    print("|---|---:|---|---:|---:|")
    for label in ("same scenario", "every knob changed"):
        figures = drift[label]
        runs = ", ".join(f"{t:.2f} s" for t in figures["seconds"])
        print(
            f"| {label} | {figures['median_s']:.2f} s | {runs} | {figures['exit']} | "
            f"{figures['differences']:,} |"
        )
    print("target: < 10 s")
    Path(args.output).write_text(
        json.dumps(
            {
                "load_before": load_before,
                "load_after": load_after,
                "record": record,
                "drift": drift,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
