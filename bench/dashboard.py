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
  second and its ``/report`` refreshes.

The readers run on CPU 1 beside wrk (this process pins itself there before
starting them), so CPU 0 measures the server's own cost. Besides req/s, each
side's server CPU time per request is compared: it is what the dashboard costs
the server even when sharing CPU 1 slows wrk a little. The target (issue: "with
a dashboard open, bench/ throughput stays within 10% of none") is a ratio of at
least 90%.

Markdown on stdout, raw figures in bench/results/dashboard.json.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
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
SIDES = ("none", "sse", "dashboard")


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
            chunk = response.read1(65536)
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

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/__mockstore/ui"
        self.stats = ReaderStats()
        self._stack = contextlib.ExitStack()
        self.page: Any = None

    def start(self) -> None:
        if not os.path.exists(CHROMIUM):
            raise bench.BenchError(f"{CHROMIUM} is missing (apt-get install chromium)")
        from playwright.sync_api import sync_playwright

        playwright = self._stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"],
        )  # fmt: skip
        self._stack.callback(browser.close)
        self.page = browser.new_page(viewport={"width": 1280, "height": 800})
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
        self._stack.close()


@contextlib.contextmanager
def watchers(servers: dict[str, bench.Server]) -> Iterator[dict[str, Any]]:
    readers: dict[str, Any] = {
        "sse": SseReader(servers["sse"].port),
        "dashboard": DashboardPage(servers["dashboard"].port),
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
        with watchers(servers) as readers:
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
        for side in sides:
            if not side.server.alive():
                raise side.server.fail("died during the run")
    by_id = {side.id: side for side in sides}
    comparisons = [compare(by_id[s], by_id["none"]) for s in ("sse", "dashboard")]
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
    }


def compare(top: bench.Side, bottom: bench.Side) -> dict[str, Any]:
    ratio = top.median("requests_per_second") / bottom.median("requests_per_second")
    cpu_ratio = bottom.median("cpu_us_per_request") / top.median("cpu_us_per_request")
    rounds = {run.round: run.requests_per_second for run in bottom.runs}
    per_round = [r.requests_per_second / rounds[r.round] for r in top.runs if r.round in rounds]
    valid = top.valid and bottom.valid
    verdict = ("met" if ratio >= TARGET else "MISSED") if valid else "INVALID"
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
        "| Side | req/s (median) | req/s per round | server CPU µs/req |",
        "|---|---:|---|---:|",
    ]
    for name, side in result["sides"].items():
        per_round = ", ".join(f"{run['requests_per_second']:,.0f}" for run in side["runs"])
        lines.append(
            f"| {name} | {side['median_rps']:,.0f} | {per_round} | {side['median_cpu_us']:.1f} |"
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
    readers = result["readers"]
    page = readers["dashboard"]
    polls = ", ".join(f"{path} x{n}" for path, n in sorted(page["page_requests"].items()))
    lines += [
        "",
        f"The SSE reader received {readers['sse']['entries']:,} entries in "
        f"{readers['sse']['events']:,} batches ({readers['sse']['bytes'] / 1e6:,.1f} MB), "
        f"{readers['sse']['skipped']:,} skipped; the page {page['entries']:,} entries, "
        f"{page['skipped']:,} skipped. The page's requests: {polls}.",
    ]
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
