"""What a test suite pays for mockstore: reset time, the fixture's per-test cost, start-up.

    .venv/bin/python bench/adoption.py              # prints a Markdown report
    .venv/bin/python bench/adoption.py --only reset # the in-process reset alone

Measured side by side in one run, medians of many rounds:

- **reset**, ``default`` (20 pets) and ``large-inventory`` (100,000 pets): in process
  (``Runtime.reset()``, what ``POST /__mockstore/reset`` runs) and over HTTP
  (``Control.reset()`` against a ``MockServer``). The target is a reset whose cost
  does not depend on the number of pets.
- **the ``mockstore`` fixture's per-test overhead**: a pytest run of trivial tests that
  ask for the fixture, timing the fixture's setup (restore the session scenario if
  needed, reset, hand out the client) with a ``pytest_fixture_setup`` hook.
- **``MockServer`` start-to-ready**: ``start()`` until uvicorn accepts connections,
  in a fresh interpreter (imports included) and warm (the modules loaded).

Run ``--only reset`` with ``PYTHONPATH=<another tree>`` to measure that tree's
reset the same way. Raw figures go to ``bench/results/adoption.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCENARIOS = ("default", "large-inventory")


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p90_ms": round(ordered[int(len(ordered) * 0.9) - 1] * 1000, 3),
        "min_ms": round(ordered[0] * 1000, 3),
        "rounds": len(ordered),
    }


def reset_in_process(scenario: str, rounds: int) -> dict[str, float]:
    from mockstore.scenario import load_scenario_file
    from mockstore.state import Runtime

    runtime = Runtime(load_scenario_file(scenario))
    runtime.reset()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        runtime.reset()
        samples.append(time.perf_counter() - started)
    return _stats(samples)


def reset_over_http(rounds: int) -> dict[str, dict[str, float]]:
    """Both servers up at once, their resets interleaved: drift on a loaded machine hits both."""
    from mockstore import MockServer

    servers = {s: MockServer(s).start() for s in SCENARIOS}
    samples: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    try:
        for server in servers.values():
            server.control.reset()
        for _ in range(rounds):
            for name, server in servers.items():
                started = time.perf_counter()
                server.control.reset()
                samples[name].append(time.perf_counter() - started)
    finally:
        for server in servers.values():
            server.stop()
    return {name: _stats(values) for name, values in samples.items()}


def start_to_ready(rounds: int) -> dict[str, Any]:
    cold = []
    probe = textwrap.dedent(
        """
        import time
        started = time.perf_counter()
        from mockstore import MockServer
        server = MockServer().start()
        print(time.perf_counter() - started)
        server.stop()
        """
    )
    for _ in range(max(3, rounds // 2)):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        )
        cold.append(float(out.stdout.strip()))
    from mockstore import MockServer

    MockServer().start().stop()
    warm = []
    for _ in range(rounds):
        started = time.perf_counter()
        server = MockServer().start()
        warm.append(time.perf_counter() - started)
        server.stop()
    return {"cold": _stats(cold), "warm": _stats(warm)}


TIMING_PLUGIN = """
import json, os, time
import pytest

DURATIONS = []


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    started = time.perf_counter()
    yield
    if fixturedef.argname == "mockstore":
        DURATIONS.append(time.perf_counter() - started)


def pytest_sessionfinish(session):
    with open(os.environ["FIXTURE_TIMES"], "w") as handle:
        json.dump(DURATIONS, handle)
"""

TESTS = """
import pytest


@pytest.mark.parametrize("n", range({count}))
def test_uses_the_fixture(mockstore, n):
    assert mockstore.url
"""


def fixture_overhead(scenario: str, tests: int) -> tuple[list[float], float]:
    """The ``mockstore`` fixture's setup times over one pytest run (and the first one apart)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "timing_plugin.py").write_text(TIMING_PLUGIN)
        (root / "test_many.py").write_text(TESTS.format(count=tests))
        times = root / "times.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCKSTORE_", "PYTEST_"))}
        path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
        env.update({"FIXTURE_TIMES": str(times), "PYTHONPATH": path})
        command = [sys.executable, "-m", "pytest", "-q", "-p", "timing_plugin"]
        command += ["-p", "no:cacheprovider", "--mockstore-scenario", scenario]
        subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
        durations = json.loads(times.read_text())
    # The first setup also starts the session's server: kept apart.
    return durations[1:], durations[0]


def fixture_overheads(tests: int, runs: int = 3) -> dict[str, dict[str, float]]:
    """Interleaved pytest runs per scenario; the median over every test of every run."""
    samples: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    first: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    for _ in range(runs):
        for name in SCENARIOS:
            durations, start = fixture_overhead(name, tests)
            samples[name] += durations
            first[name].append(start)
    return {
        name: {**_stats(samples[name]), "first_ms": round(statistics.median(first[name]) * 1000, 1)}
        for name in SCENARIOS
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only",
        choices=["reset", "fixture"],
        help="measure the in-process reset (or the fixture too)",
    )
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--tests", type=int, default=200)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "reset_in_process": {s: reset_in_process(s, args.rounds) for s in SCENARIOS},
    }
    if args.only is None:
        results["reset_over_http"] = reset_over_http(args.rounds)
    if args.only != "reset":
        results["fixture"] = fixture_overheads(args.tests)
    if args.only is None:
        results["start_to_ready"] = start_to_ready(10)
    results["load_average"] = {"before": load_before, "after": os.getloadavg()}
    print(render(results))
    if args.only is None:
        out = HERE / "results" / "adoption.json"
        out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def render(results: dict[str, Any]) -> str:
    lines = [
        f"Python {results['python']}, {results['cpus']} CPUs; load average before/after: "
        f"{results['load_average']['before'][0]:.2f} / {results['load_average']['after'][0]:.2f}",
        "",
        "| Measurement | default (20 pets) | large-inventory (100,000 pets) | large / default |",
        "|---|---:|---:|---:|",
    ]

    def row(label: str, figures: dict[str, dict[str, float]], key: str = "median_ms") -> None:
        small, large = figures["default"][key], figures["large-inventory"][key]
        lines.append(f"| {label} | {small:.3f} ms | {large:.3f} ms | {large / small:.2f}x |")

    row("reset in process (`Runtime.reset()`), median", results["reset_in_process"])
    row("reset in process, fastest round", results["reset_in_process"], "min_ms")
    if "reset_over_http" in results:
        row("reset over HTTP (`Control.reset()`), median", results["reset_over_http"])
        row("reset over HTTP, fastest round", results["reset_over_http"], "min_ms")
    if "fixture" in results:
        row("`mockstore` fixture setup per test, median", results["fixture"])
        row("`mockstore` fixture setup per test, fastest", results["fixture"], "min_ms")
    if "start_to_ready" in results:
        start = results["start_to_ready"]
        lines += [
            "",
            "| `MockServer` start-to-ready | median | min | rounds |",
            "|---|---:|---:|---:|",
            f"| fresh interpreter (imports included) | {start['cold']['median_ms']:.1f} ms | "
            f"{start['cold']['min_ms']:.1f} ms | {start['cold']['rounds']} |",
            f"| warm (modules loaded) | {start['warm']['median_ms']:.1f} ms | "
            f"{start['warm']['min_ms']:.1f} ms | {start['warm']['rounds']} |",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
