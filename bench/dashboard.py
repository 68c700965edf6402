"""Does an open dashboard slow the API? Throughput with a dashboard open, against none.

    .venv/bin/python bench/dashboard.py                 # about 4 minutes
    .venv/bin/python bench/dashboard.py --rounds 1 --seconds 3 --warmup 1   # a smoke check

The method is bench/run.py's (its helpers are reused): identical servers of
``bench/scenarios/baseline.yaml`` on CPU 0, ``wrk -t1 -c32`` on CPU 1 against
``GET /v1/pets?limit=20``, the sides measured round after round in rotating
order, medians compared. The sides differ only in who watches:

* ``none``: nobody;
* ``sse``: a Python reader consuming ``GET /__mockstore/events`` (the stream alone);
* ``dashboard``: the real page in headless Chromium (Debian's, through
  Playwright): the stream, plus the page's ``/keys`` and ``/clock`` polls every
  second and its ``/report`` refreshes;
* ``dashboard-nice``: the same, with Chromium at nice 19.

The readers run on CPU 1 beside wrk (this process pins itself there before
starting them), so CPU 0 measures the server's own cost. On a 2-CPU machine the
browser then competes with wrk for CPU 1: a page that takes CPU from wrk lowers
req/s without the server doing any more work. ``dashboard-nice`` shows the same
page when it only gets what wrk leaves, as a browser on another core would. Besides
req/s, each side's server CPU time per request is compared. The target (issue:
"with a dashboard open, bench/ throughput stays within 10% of none") is a ratio
of at least 90%.

Markdown on stdout, raw figures in bench/results/dashboard.json.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # bench/ is not a package: imported from beside this file

CHROMIUM = "/usr/bin/chromium"
TARGET = 0.90
SIDES = ("none", "sse", "dashboard", "dashboard-nice")
NICE = 19


@dataclass
class ReaderStats:
    """What a watcher received while the rounds ran."""

    events: int = 0
    entries: int = 0
    skipped: int = 0
    bytes: int = 0
    page_requests: dict[str, int] = field(default_factory=dict)


class SseReader:
    """Reads /__mockstore/events in a thread, as a browser would, counting what arrives."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stats = ReaderStats()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self.connected = threading.Event()

    def start(self) -> None:
        self._thread.start()
        if not self.connected.wait(10):
            raise bench.BenchError("the SSE reader could not connect to /__mockstore/events")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _read(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request("GET", "/__mockstore/events")
        response = connection.getresponse()
        if response.status != 200:
            return
        self.connected.set()
        buffer = b""
        while not self._stop.is_set():
            try:
                chunk = response.read1(65536)
            except (OSError, http.client.HTTPException):
                return  # the server stopped
            if not chunk:
                return
            self.stats.bytes += len(chunk)
            buffer += chunk
            *blocks, buffer = buffer.split(b"\n\n")
            for block in blocks:
                self._count(block)
        connection.close()

    def _count(self, block: bytes) -> None:
        lines = block.split(b"\n")
        if lines[0] != b"event: requests":
            return
        data = json.loads(lines[1].removeprefix(b"data: "))
        self.stats.events += 1
        self.stats.entries += len(data["entries"])
        self.stats.skipped += data["skipped"]


class DashboardPage:
    """The real page in headless Chromium, left open on its Live view."""

    def __init__(self, playwright: Any, port: int, executable: str = CHROMIUM) -> None:
        self.playwright = playwright
        self.url = f"http://127.0.0.1:{port}/__mockstore/ui"
        self.executable = executable
        self.stats = ReaderStats()
        self.browser: Any = None
        self.page: Any = None

    def start(self) -> None:
        self.browser = self.playwright.chromium.launch(
            executable_path=self.executable,
            args=["--no-sandbox", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"],
        )  # fmt: skip
        self.page = self.browser.new_page(viewport={"width": 1280, "height": 800})
        self.page.on("request", self._count)
        self.page.goto(self.url)
        self.page.wait_for_selector('#connection[data-state="live"]', timeout=30_000)

    def _count(self, request: Any) -> None:
        path = request.url.split("/__mockstore", 1)[-1].split("?", 1)[0]
        self.stats.page_requests[path] = self.stats.page_requests.get(path, 0) + 1

    def stop(self) -> None:
        stats = self.page.locator("#traffic-stats").inner_text()
        self.stats.entries = int(stats.split(" received", 1)[0].replace(",", ""))
        note = self.page.locator("#skipped")
        if note.is_visible():
            self.stats.skipped = int(note.inner_text().split(" ", 1)[0].replace(",", ""))
        self.browser.close()


def niced_chromium(workdir: Path) -> str:
    """A launcher that runs Chromium (and every process it starts) at nice 19."""
    launcher = workdir / "chromium-nice"
    launcher.write_text(f'#!/bin/sh\nexec nice -n {NICE} {CHROMIUM} "$@"\n')
    launcher.chmod(0o755)
    return str(launcher)


@contextlib.contextmanager
def watchers(servers: dict[str, bench.Server], workdir: Path) -> Iterator[dict[str, Any]]:
    if not os.path.exists(CHROMIUM):
        raise bench.BenchError(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        readers: dict[str, Any] = {
            "sse": SseReader(servers["sse"].port),
            "dashboard": DashboardPage(playwright, servers["dashboard"].port),
            "dashboard-nice": DashboardPage(
                playwright, servers["dashboard-nice"].port, niced_chromium(workdir)
            ),
        }
        started = []
        try:
            for reader in readers.values():
                reader.start()
                started.append(reader)
            yield readers
        finally:
            for reader in started:
                with contextlib.suppress(Exception):
                    reader.stop()


def measure(seconds: int, rounds: int, warmup: int, log: Any) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="mockstore-dashboard-bench-"))
    scenario = str(bench.SCENARIOS / "baseline.yaml")
    servers = {side: bench.mockstore_server(side, scenario, workdir) for side in SIDES}
    with bench.servers_running(list(servers.values())):
        for server in servers.values():
            bench.wait_until_serving(server, bench.HEALTH)
        sides = [bench.Side(s, s, bench.LIST_20, servers[s]) for s in SIDES]
        reference = bench.get(servers["none"].port, bench.LIST_20, bench.BENCH_KEY).body
        for side in sides:
            bench.check_side(side, reference)
        with watchers(servers, workdir) as readers:
            log(f"warming up each side ({warmup} s)")
            for side in sides:
                bench.run_wrk(side.server, side.target, warmup, side.id)
            for round_ in range(rounds):
                shift = round_ % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    run = bench.run_wrk(side.server, side.target, seconds, side.id, round_ + 1)
                    side.runs.append(run)
                    flag = "" if run.valid else "  INVALID: " + "; ".join(run.problems)
                    log(
                        f"  round {round_ + 1} {side.id:<10} {run.requests_per_second:>9.0f} "
                        f"req/s  {run.cpu_us_per_request:.1f} us CPU/req  "
                        f"server CPU {run.server_cpu_share:.0%}{flag}"
                    )
            light = light_load_cost(sides, seconds, rounds, workdir, log)
        for side in sides:
            if not side.server.alive():
                raise side.server.fail("died during the run")
    by_id = {side.id: side for side in sides}
    comparisons = [compare(by_id[s], by_id["none"]) for s in SIDES if s != "none"]
    return {
        "environment": bench.environment(),
        "method": {
            "seconds": seconds,
            "rounds": rounds,
            "warmup": warmup,
            "target": bench.LIST_20,
            "wrk": f"taskset -c {bench.LOAD_CPU} wrk -t{bench.WRK_THREADS} "
            f"-c{bench.WRK_CONNECTIONS} -d{seconds}s --latency",
            "servers": f"taskset -c {bench.SERVER_CPU}, bench/scenarios/baseline.yaml",
        },
        "sides": {
            side.id: {
                "runs": [asdict(run) for run in side.runs],
                "median_rps": side.median("requests_per_second"),
                "median_cpu_us": side.median("cpu_us_per_request"),
                "valid": side.valid,
            }
            for side in sides
        },
        "readers": {name: asdict(reader.stats) for name, reader in readers.items()},
        "comparisons": comparisons,
        "light_load": light,
    }


def light_load_cost(
    sides: list[bench.Side], seconds: int, rounds: int, workdir: Path, log: Any
) -> dict[str, dict[str, Any]]:
    """What each watcher costs the server, in ms of CPU per second, at a fixed light load.

    wrk paced to a little over 1,000 requests a second (two connections, 1 ms
    between requests): every side serves the same traffic, far from saturation, so
    another tenant of the machine barely changes the server's CPU time, while
    the stream still runs at its cap of 1,000 entries a second. A side's cost
    is its server CPU per second minus what its requests cost at ``none``'s
    price per request; out of the 1,000 ms of a second, it predicts what a
    saturated server loses.
    """
    script = workdir / "paced.lua"
    script.write_text("function delay()\n  return 1\nend\n")
    runs: dict[str, list[bench.WrkRun]] = {side.id: [] for side in sides}
    for round_ in range(rounds):
        shift = round_ % len(sides)
        for side in sides[shift:] + sides[:shift]:
            run = _paced_wrk(side.server, script, seconds)
            runs[side.id].append(run)
            log(
                f"  paced round {round_ + 1} {side.id:<14} {run.requests_per_second:>6.0f} "
                f"req/s  server CPU {run.server_cpu_share * 1000:.0f} ms/s"
            )
    price = statistics.median(r.server_cpu_seconds / r.requests for r in runs["none"])
    out = {}
    for side_id, side_runs in runs.items():
        out[side_id] = {
            "runs": [asdict(r) for r in side_runs],
            "median_rps": statistics.median(r.requests_per_second for r in side_runs),
            "median_cpu_ms_per_s": statistics.median(r.server_cpu_share * 1000 for r in side_runs),
            "added_ms_per_s": statistics.median(_added_ms_per_second(r, price) for r in side_runs),
        }
    return out


def _paced_wrk(server: bench.Server, script: Path, seconds: int) -> bench.WrkRun:
    command = [
        "taskset", "-c", str(bench.LOAD_CPU), bench.WRK, "-t1", "-c2", f"-d{seconds}s",
        "--latency", "-s", str(script), "-H", f"Authorization: Bearer {bench.BENCH_KEY}",
        f"http://127.0.0.1:{server.port}{bench.LIST_20}",
    ]  # fmt: skip
    cpu_before = bench.process_cpu_seconds(server.pid)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise bench.BenchError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    run = bench.parse_wrk(done.stdout, "paced")
    run.server_cpu_seconds = bench.process_cpu_seconds(server.pid) - cpu_before
    run.server_cpu_share = run.server_cpu_seconds / wall
    return run


def _added_ms_per_second(run: bench.WrkRun, price: float) -> float:
    """Server CPU ms per wall second beyond ``price`` seconds for each request served."""
    wall = run.server_cpu_seconds / run.server_cpu_share
    return (run.server_cpu_seconds - run.requests * price) / wall * 1000


def compare(top: bench.Side, bottom: bench.Side) -> dict[str, Any]:
    ratio = top.median("requests_per_second") / bottom.median("requests_per_second")
    cpu_ratio = bottom.median("cpu_us_per_request") / top.median("cpu_us_per_request")
    rounds = {run.round: run.requests_per_second for run in bottom.runs}
    per_round = [r.requests_per_second / rounds[r.round] for r in top.runs if r.round in rounds]
    valid = top.valid and bottom.valid
    verdict = ("met" if ratio >= TARGET else "MISSED") if valid else "INVALID"
    # As in run.py: a run whose server did not have CPU 0 to itself says more
    # about the machine than about the dashboard.
    contended = [r for r in top.runs + bottom.runs if r.server_cpu_share < bench.CONTENDED_SHARE]
    if valid and contended:
        verdict += f" (noisy: {len(contended)} of {len(top.runs + bottom.runs)} runs)"
    return {
        "side": top.id,
        "ratio": ratio,
        "cpu_ratio": cpu_ratio,
        "per_round": per_round,
        "verdict": verdict,
    }


def markdown(result: dict[str, Any]) -> str:
    env = result["environment"]
    method = result["method"]
    lines = [
        f"Measured {env['time']} on {env['cpus']} x {env['cpu']}, Python {env['python']}, "
        f"commit {env['commit']}{' (uncommitted changes)' if env['uncommitted_changes'] else ''}.",
        "",
        f"`{method['wrk']}` against `{method['target']}`; servers {method['servers']}; "
        f"median of {method['rounds']} interleaved round(s) after a {method['warmup']} s warm-up.",
        "",
        "| Side | req/s (median) | req/s per round | server CPU µs/req | server CPU share |",
        "|---|---:|---|---:|---|",
    ]
    for name, side in result["sides"].items():
        per_round = ", ".join(f"{run['requests_per_second']:,.0f}" for run in side["runs"])
        shares = ", ".join(f"{run['server_cpu_share']:.0%}" for run in side["runs"])
        lines.append(
            f"| {name} | {side['median_rps']:,.0f} | {per_round} | "
            f"{side['median_cpu_us']:.1f} | {shares} |"
        )
    lines += [
        "",
        "| Ratio | req/s | per round | by server CPU cost | target | verdict |",
        "|---|---:|---|---:|---|---|",
    ]
    for c in result["comparisons"]:
        per_round = ", ".join(f"{r:.0%}" for r in c["per_round"])
        lines.append(
            f"| {c['side']} / none | {c['ratio']:.0%} | {per_round} | {c['cpu_ratio']:.0%} "
            f"| ≥ {TARGET:.0%} | {c['verdict']} |"
        )
    light = result["light_load"]
    lines += [
        "",
        f"Paced load, a little over 1,000 requests a second (`wrk -t1 -c2`, 1 ms between "
        f"requests; {method['rounds']} rounds): the server's CPU per second, and what the "
        "watcher adds beyond its requests' own cost.",
        "",
        "| Side | req/s | server CPU ms/s | added ms/s | predicted saturated ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, figures in light.items():
        added = figures["added_ms_per_s"]
        lines.append(
            f"| {name} | {figures['median_rps']:,.0f} | {figures['median_cpu_ms_per_s']:.0f} | "
            f"{added:.0f} | {1 - added / 1000:.1%} |"
        )
    readers = result["readers"]
    sse = readers["sse"]
    lines += [
        "",
        f"The SSE reader received {sse['entries']:,} entries in {sse['events']:,} batches "
        f"({sse['bytes'] / 1e6:,.1f} MB), {sse['skipped']:,} skipped.",
    ]
    for name in ("dashboard", "dashboard-nice"):
        page = readers[name]
        polls = ", ".join(
            f"{path} x{n}"
            for path, n in sorted(page["page_requests"].items())
            if not path.startswith("/ui")
        )
        lines.append(
            f"The {name} page showed {page['entries']:,} entries, {page['skipped']:,} "
            f"skipped; it asked {polls}."
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--output", type=Path, default=bench.RESULTS / "dashboard.json")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        bench.preflight()
        # This process, its Chromium and its SSE reader share wrk's CPU; the servers get CPU 0.
        os.sched_setaffinity(0, {bench.LOAD_CPU})
        started = time.monotonic()
        result = measure(args.seconds, args.rounds, args.warmup, log)
    except bench.BenchError as exc:
        print(f"bench/dashboard.py: {exc}", file=sys.stderr)
        return 2
    log(f"done in {time.monotonic() - started:.0f} s")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    valid = all(side["valid"] for side in result["sides"].values())
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
