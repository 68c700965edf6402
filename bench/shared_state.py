"""What a shared state in Redis costs: req/s side by side, and Redis commands per request.

    .venv/bin/python bench/shared_state.py            # 3 rounds of 10 s per side, ~2 minutes
    .venv/bin/python bench/shared_state.py --quick    # 1 round of 3 s: proves the script works
    .venv/bin/python bench/shared_state.py --before /tmp/main   # and main's Redis-backed process

``--before DIR`` adds a fourth side, in the same run: a Redis-backed process of
the mockstore in ``DIR`` (another commit's tree, e.g. ``git archive main | tar
-x -C /tmp/main``), run by this Python without the current directory on its path,
for a before/after measured side by side.

Three sides, measured in one run and interleaved round by round (the machine
is noisy): the in-memory process (``mockstore serve``), a Redis-backed process
(``--state redis://…``) and Redis-backed ``--workers 2``; each on
``bench/scenarios/baseline.yaml`` and ``GET /v1/pets?limit=20`` with the bench
key, as ``bench/run.py`` measures the stack. Single processes are pinned to
CPU 0; the two workers may use both CPUs. wrk and the ``redis-server`` (started
here, on a free loopback port, persistence off) share CPU 1, so on this
2-CPU machine the Redis-backed sides pay for Redis's CPU out of the load
generator's core: the ratio is a floor, not what a machine with a core for
Redis would show. Each Redis-backed side is a mock of its own (a database of
its own): with one mock for all, the idle sides' processes took in the
measured side's journal entries (journal sharing) on the measured side's CPU.

Redis commands per request come from ``INFO commandstats`` (reset before each
Redis-backed run): ``EVALSHA`` calls per request are the round trips, and the
commands the script runs inside count too.

Prints a Markdown table and writes ``bench/results/shared_state.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import (
    PYTHON,
    RESULTS,
    SCENARIOS,
    BenchError,
    Server,
    _children,
    _stop_all,
    environment,
    free_port,
    run_wrk,
    wait_until_serving,
)
from tests.redis_server import RedisServer

TARGET = "/v1/pets?limit=20"


class Workers(Server):
    """``serve --workers N``: not pinned to one CPU (its workers spread over both)."""

    def start(self) -> None:
        import subprocess
        import time

        with self.log_path.open("wb") as log:
            self.launched_at = time.perf_counter()
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        _children.append(self.process)


def serve_command(
    port: int, state: str | None, workers: int = 1, tree: Path | None = None
) -> list[str]:
    mockstore = [PYTHON, "-m", "mockstore"]
    if tree is not None:  # the mockstore in tree, whatever the current directory holds
        run = f"import sys; sys.path.insert(0, {str(tree)!r}); from mockstore.cli.main import main"
        mockstore = [PYTHON, "-P", "-c", f"{run}; sys.exit(main())"]
    command = [*mockstore, "serve", "--port", str(port), "--log-level", "warning"]
    command += ["--scenario", str(SCENARIOS / "baseline.yaml")]
    if state:
        command += ["--state", state]
    if workers > 1:
        command += ["--workers", str(workers)]
    return command


def commandstats(redis: RedisServer) -> dict[str, int]:
    """Calls per command since the last CONFIG RESETSTAT."""
    text = redis.command("INFO", "commandstats").decode()
    return {name: int(calls) for name, calls in re.findall(r"cmdstat_(\w+):calls=(\d+)", text)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (default 3)")
    parser.add_argument(
        "--before", type=Path, metavar="DIR", help="also a Redis-backed process of DIR's mockstore"
    )
    args = parser.parse_args(argv)
    rounds, seconds = (1, 3) if args.quick else (args.rounds, 10)
    workdir = Path(tempfile.mkdtemp(prefix="mockstore-bench-shared-"))
    redis = RedisServer()
    redis.start()
    # Redis shares the load generator's CPU (see the docstring).
    import subprocess

    assert redis.process is not None
    subprocess.run(["taskset", "-pc", "1", str(redis.process.pid)], check=True, capture_output=True)
    sides: dict[str, Server] = {}
    try:
        # Each Redis-backed side is a mock of its own (a database each): one side's
        # processes never take in another's journal while it is measured.
        database = f"redis://127.0.0.1:{redis.port}/%d"
        chosen: list[tuple[str, str | None, int, Path | None]] = [
            ("in-memory", None, 1, None),
            ("redis", database % 1, 1, None),
            ("redis --workers 2", database % 2, 2, None),
        ]
        if args.before:
            chosen.insert(1, (f"redis, before ({args.before})", database % 3, 1, args.before))
        for name, state, workers, tree in chosen:
            port = free_port()
            kind = Workers if workers > 1 else Server
            command = serve_command(port, state, workers, tree)
            log = workdir / (re.sub(r"[^\w-]+", "-", name) + ".log")
            sides[name] = kind(name, command, port, log)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
        for server in sides.values():
            server.start()
        for server in sides.values():
            wait_until_serving(server, "/__mockstore/health")
        for round_ in range(rounds):
            for name, server in sides.items():
                shared = "redis" in name
                if shared:
                    redis.command("CONFIG", "RESETSTAT")
                run = run_wrk(server, TARGET, seconds, name, round_)
                if not run.valid:
                    raise server.fail(f"invalid run: {run.problems}")
                figures: dict[str, Any] = {
                    "requests_per_second": run.requests_per_second,
                    "requests": run.requests,
                    "p50_ms": run.p50_ms,
                    "p99_ms": run.p99_ms,
                    # The server's own CPU per request: what another job on the same
                    # core cannot inflate the way it deflates req/s (all workers' for
                    # --workers: their parent's children are not counted, so none).
                    "cpu_us_per_request": None if "workers" in name else run.cpu_us_per_request,
                }
                if shared:
                    stats = commandstats(redis)
                    stats.pop("config", None)
                    figures["evalsha_per_request"] = stats.get("evalsha", 0) / run.requests
                    figures["commands_per_request"] = sum(stats.values()) / run.requests
                    figures["commands"] = stats
                runs[name].append(figures)
                rps = run.requests_per_second
                print(f"{name} round {round_}: {rps:,.0f} req/s", file=sys.stderr)
    except BenchError as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 2
    finally:
        _stop_all()
        redis.close()
    memory = statistics.median(r["requests_per_second"] for r in runs["in-memory"])
    summary = {}
    for name, measured in runs.items():
        rps = statistics.median(r["requests_per_second"] for r in measured)
        summary[name] = {"requests_per_second": rps, "ratio": rps / memory, "runs": measured}
        if "workers" not in name:
            summary[name]["cpu_us_per_request"] = statistics.median(
                r["cpu_us_per_request"] for r in measured
            )
        if "redis" in name:
            summary[name]["evalsha_per_request"] = max(r["evalsha_per_request"] for r in measured)
            summary[name]["commands_per_request"] = statistics.median(
                r["commands_per_request"] for r in measured
            )
    result = {"target": TARGET, "rounds": rounds, "seconds": seconds, "sides": summary}
    result["environment"] = environment()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "shared_state.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"| Side (`GET {TARGET}`, median of {rounds}) | req/s | vs in-memory | "
          "server CPU µs / request | EVALSHA / request | Redis commands / request |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, figures in summary.items():
        evalsha = figures.get("evalsha_per_request")
        commands = figures.get("commands_per_request")
        cpu = figures.get("cpu_us_per_request")
        print(
            f"| {name} | {figures['requests_per_second']:,.0f} | {figures['ratio']:.0%} | "
            f"{'-' if cpu is None else f'{cpu:.0f}'} | "
            f"{'-' if evalsha is None else f'{evalsha:.2f}'} | "
            f"{'-' if commands is None else f'{commands:.2f}'} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
