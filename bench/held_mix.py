"""Issues 19 and 27's hostile paths all at once, with a well-behaved client measured alongside.

    .venv/bin/python bench/held_mix.py [--seconds 60] [--budget 128MiB]
        [--output bench/results/held_mix.json] [--log FILE] [--no-probe]
    PYTHONPATH=/work/main .venv/bin/python bench/held_mix.py   # another tree (main's)

The clients of ``tests/held_attacks.py``'s ``HeldMix``: issue 19's soak
(``tests/budget_soak.py``: huge heads and queries, anonymous floods, creates
until 507, huge numbers, broken uploads, slow-loris and silent connections,
pipelined heads, slow readers of a 16.6 MB listing, tenants filled and deleted,
per-key stores and endless keys, alias bombs, the clock pushed out of range,
raw HARs) and issue 27's (connections pipelining small requests they never
read the answers to, readers of the HAR and the request list that never read,
``verify`` scans over 1 MiB bodies), against one ``mockstore serve
--memory-budget``, for ``--seconds``, while a well-behaved client in a tenant
of its own reads and creates pets and checks every answer. Every loop is
bounded in count and time; everything goes to 127.0.0.1.

Prints the peak resident memory (VmHWM) against the budget plus the
documented allowance (160 MiB), the good client's latencies (median, 99th
percentile, worst), answers by kind, 500s and tracebacks in the server's log;
writes them to ``--output``. The attacked server's whole log (its stdout and
stderr, to its last line after it stopped) is always kept in a file, named in
the output (``--log``, else a new file in the system's temporary folder); each
traceback in it is summarised in the results by its first and last lines (the
log line that announced it and the exception), counted by kind. Exits 1 when
the peak passes budget + allowance, the good client got a wrong answer, any
answer was a 500, the log holds a traceback, or the 99th percentile passes
100 ms: the latency bound is held here, never in a test (the load average is
printed with it).

The same well-behaved client also runs, for the same seconds and at the same
time, against a second, idle ``mockstore serve`` of the same settings: its
latencies are the reference, what the machine's load alone gives (on a shared
machine at load 25 the mix's p99 cannot be judged without it).

The attacked server runs under ``bench/loop_probe.py`` (unless ``--no-probe``):
how late a 5 ms tick on its event loop ran (the longest the loop was held),
and its garbage collections' pauses, printed and kept with the results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from mockstore.memory import format_size, parse_size  # noqa: E402
from tests.attacks import ALLOWANCE, mib  # noqa: E402
from tests.budget_soak import SCENARIO, BudgetSoak  # noqa: E402
from tests.held_attacks import HeldMix  # noqa: E402
from tests.support import live_server  # noqa: E402

LATENCY_BOUND = 0.100  # seconds, the good client's 99th percentile


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--budget", default="128MiB")
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "held_mix.json"))
    parser.add_argument("--no-probe", action="store_true", help="no event-loop probe")
    parser.add_argument("--log", help="where the attacked server's log goes (default: a temp file)")
    args = parser.parse_args()
    if args.log is None:
        handle, args.log = tempfile.mkstemp(prefix="held_mix-", suffix=".log")
        os.close(handle)
    budget = parse_size(args.budget)
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    env = {"MOCKSTORE_SCENARIO_YAML": SCENARIO, "MOCKSTORE_MEMORY_BUDGET": str(budget)}
    probed = {**env}
    launcher = None
    with tempfile.TemporaryDirectory() as scratch:
        probe_file = Path(scratch) / "probe.json"
        if not args.no_probe:
            probed["PROBE_OUTPUT"] = str(probe_file)
            launcher = [sys.executable, str(ROOT / "bench" / "loop_probe.py")]
        code = _run(args, budget, env, probed, launcher, probe_file)
    return code


def _run(
    args: argparse.Namespace,
    budget: int,
    env: dict[str, str],
    probed: dict[str, str],
    launcher: list[str] | None,
    probe_file: Path,
) -> int:
    with (
        live_server("--log-level", "warning", env=probed, launcher=launcher) as server,
        live_server("--log-level", "warning", env=env) as idle,
    ):
        assert server.process is not None and idle.process is not None
        mix = HeldMix(server.url, server.process.pid, args.seconds, 10**9)
        # The reference: the same client, at the same time, against a server no one attacks.
        reference = BudgetSoak(idle.url, idle.process.pid, args.seconds, 10**9)
        beside = threading.Thread(target=reference.well_behaved, daemon=True)
        beside.start()
        try:
            result = mix.run(sample_every=1.0)
        finally:
            reference.stop.set()
            beside.join(120)
        health = httpx.get(server.url + "/__mockstore/health", timeout=60).status_code
    # Read once the server stopped and its output was drained: a traceback logged as it
    # stopped is kept too.
    log = server.log()
    Path(args.log).write_text(log + "\n")
    probe = json.loads(probe_file.read_text()) if probe_file.exists() else None
    load = os.getloadavg()[0]
    ordered = sorted(mix.good.latencies) or [0.0]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    errors_500 = sum(count for kind, count in result.statuses.items() if "500" in kind.split())
    found = tracebacks_in(log)
    tracebacks = len(found)
    print(f"load average after: {load:.2f}")
    print(result.summary())
    print(
        f"peak (VmHWM) {mib(mix.peak)} against {format_size(budget)} + {mib(ALLOWANCE)} "
        f"= {mib(budget + ALLOWANCE)}"
    )
    print(mix.good.summary())
    print(
        "reference, the same client against an idle server meanwhile: " + reference.good.summary()
    )
    print(f"500 answers: {errors_500}; tracebacks in the server's log: {tracebacks}")
    for kind, count in Counter((t["first"], t["last"]) for t in found).most_common():
        print(f"  {count} x {kind[0]!r} ... {kind[1]!r}")
    print(f"the attacked server's log: {args.log}")
    if probe is not None:
        print(f"the attacked server's event loop, lag of a 5 ms tick: {probe['loop_lag']}")
        print(f"its garbage collections: {probe['gc']}")
    Path(args.output).write_text(
        json.dumps(
            {
                "seconds": args.seconds,
                "budget_mib": budget / 2**20,
                "allowance_mib": ALLOWANCE / 2**20,
                "peak_rss_mib": round(mix.peak / 2**20, 1),
                "requests": result.requests,
                "statuses": dict(result.statuses),
                "errors": dict(result.errors),
                "answers_500": errors_500,
                "tracebacks": tracebacks,
                "traceback_kinds": [
                    {"first": first, "last": last, "count": count}
                    for (first, last), count in Counter(
                        (t["first"], t["last"]) for t in found
                    ).most_common()
                ],
                "server_log": str(args.log),
                "good_client": _latencies(mix.good.latencies, mix.good.wrong),
                "reference_client": _latencies(reference.good.latencies, reference.good.wrong),
                "load_average_after": round(load, 2),
                "server_loop": probe,
                "samples": [(round(s, 1), round(r / 2**20, 1)) for s, r in result.samples],
            },
            indent=2,
        )
        + "\n"
    )
    failed = []
    if mix.peak > budget + ALLOWANCE:
        failed.append(f"peak {mib(mix.peak)} over {mib(budget + ALLOWANCE)}")
    if mix.good.wrong:
        failed.append(f"{len(mix.good.wrong)} wrong answers: {mix.good.wrong[:3]}")
    if errors_500 or tracebacks:
        failed.append(f"{errors_500} answers 500, {tracebacks} tracebacks")
    if p99 > LATENCY_BOUND:
        failed.append(f"the good client's p99 {p99 * 1000:.0f} ms is over 100 ms (load {load:.1f})")
    if health != 200:
        failed.append(f"/health answered {health} after the mix")
    for reason in failed:
        print(f"FAILED: {reason}")
    return 1 if failed else 0


def tracebacks_in(log: str) -> list[dict[str, str]]:
    """Each traceback in a log: its first line (the log line that announced it, or the
    ``Traceback`` line itself when none did) and its last (the exception raised).

    mockstore's log indents a traceback under its line: the frames are indented more
    than the ``Traceback`` line, and the exception as much as it.
    """
    lines = log.splitlines()
    found = []
    for number, line in enumerate(lines):
        text = line.lstrip()
        if not text.startswith("Traceback (most recent call last)"):
            continue
        indent = len(line) - len(text)
        before = lines[number - 1] if number else ""
        announced = before.strip() and len(before) - len(before.lstrip()) <= indent
        last = text
        for after in lines[number + 1 :]:
            if not after.strip():
                continue
            depth = len(after) - len(after.lstrip())
            if depth > indent:
                continue  # a frame
            if depth == indent:
                last = after.strip()  # the exception
            break
        found.append({"first": before.strip() if announced else text, "last": last})
    return found


def _latencies(latencies: list[float], wrong: list[str]) -> dict[str, object]:
    """A client's answers, wrong ones and latencies (ms) as the results file keeps them."""
    ordered = sorted(latencies) or [0.0]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "answers": len(latencies),
        "wrong": wrong[:20],
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p99_ms": round(p99 * 1000, 1),
        "worst_ms": round(ordered[-1] * 1000, 1),
    }


if __name__ == "__main__":
    sys.exit(main())
