"""Cold start against the floor: process launch to the first 200, side by side (issue 29).

    .venv/bin/python bench/cold_start.py                          # floor, ceiling, mockstore
    .venv/bin/python bench/cold_start.py --before ../base   # and another checkout's mockstore
    .venv/bin/python bench/cold_start.py --rounds 15

Each side is a fresh interpreter, pinned to the server CPU (``taskset -c 0``),
launched and polled from the other CPU with ``GET /v1/pets?limit=20`` (the
bench key; the bench apps ignore it) over fresh sockets until it answers 200.
Its figures are the wall time from the launch to that 200 and the server's
CPU time (user + system, from ``/proc/PID/stat``) at that moment: the CPU time
is what the start costs, the wall time what a test suite waits. The floor is
``floor.py`` (a raw ASGI app on the same uvicorn, no framework, no scenario),
the ceiling ``ceiling.py`` (bare Starlette); mockstore is ``mockstore serve``
on the bench's ``baseline`` scenario, as a user starts it. ``--before DIR``
adds the same mockstore launch run from another checkout (of main, say: ``git
worktree add ../base main``), by this interpreter from that directory, so its
``mockstore`` package is the one imported: a before/after in one run.

Rounds are interleaved (every side once per round, the order rotating), the
report gives the median of each side and the ratio of the medians, mockstore
over the floor (issue 29: at most 1.5). One launch of each side first, not
counted, so no figure includes a cold disk cache, nor the compiling of any
module: the sides run without ``PYTHONDONTWRITEBYTECODE``, so that first launch
writes each tree's bytecode as any install or first run does (set, every launch
of a checkout recompiled mockstore's sources, about a quarter of its start on a
quiet run, which no installed mockstore pays). Needs ``taskset`` and two CPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import BENCH_KEY, LIST_20, LOAD_CPU, ROOT, SCENARIOS, SERVER_CPU, free_port, raw_status

HERE = Path(__file__).resolve().parent
# The length of the baseline's answer to LIST_20: the bench apps serve a body this long.
LIST_20_BYTES = 1135
TARGET_RATIO = 1.5
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Side:
    name: str
    command: tuple[str, ...]
    cwd: Path = ROOT


@dataclass
class Start:
    wall_ms: float
    cpu_ms: float


def sides(python: str, before: Path | None) -> list[Side]:
    bench_app = ("--body-bytes", str(LIST_20_BYTES))
    serve = ("-m", "mockstore", "serve", "--log-level", "warning")
    scenario = ("--scenario", str(SCENARIOS / "baseline.yaml"))
    found = [
        Side("floor", (python, str(HERE / "floor.py"), *bench_app)),
        Side("ceiling", (python, str(HERE / "ceiling.py"), *bench_app)),
        Side("mockstore", (python, *serve, *scenario)),
    ]
    if before is not None:
        found.append(Side("before", (python, *serve, *scenario), before))
    return found


def cpu_ms(pid: int) -> float:
    """The process's user + system CPU time so far (``/proc/PID/stat``, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / _TICKS


def _environment() -> dict[str, str]:
    """This environment, with bytecode written (see the module's note)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def launch(side: Side, workdir: Path) -> Start:
    """Start ``side``, poll until it answers 200, return the figures and stop it."""
    port = free_port()
    log = workdir / f"{side.name}.log"
    with log.open("wb") as out:
        launched = time.perf_counter()
        process = subprocess.Popen(
            ["taskset", "-c", str(SERVER_CPU), *side.command, "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=side.cwd,
            env=_environment(),
        )
    try:
        deadline = launched + 60
        while True:
            status = raw_status(port, LIST_20, BENCH_KEY)
            if status == 200:
                wall = (time.perf_counter() - launched) * 1000
                return Start(wall, cpu_ms(process.pid))
            if status is not None:
                raise SystemExit(f"{side.name}: the first {LIST_20} answered {status}")
            if process.poll() is not None or time.perf_counter() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                raise SystemExit(f"{side.name}: no 200 within 60 s; its log:\n{tail}")
            # Short enough not to blur the figure, long enough not to be a busy loop.
            time.sleep(0.002)
    finally:
        process.terminate()
        process.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="this tree's interpreter")
    parser.add_argument("--before", type=Path, help="another checkout (its mockstore: 'before')")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--output", default=str(HERE / "results" / "cold_start.json"))
    args = parser.parse_args(argv)
    if {SERVER_CPU, LOAD_CPU} - os.sched_getaffinity(0):
        raise SystemExit(f"CPUs {SERVER_CPU} and {LOAD_CPU} must both be available")
    os.sched_setaffinity(0, {LOAD_CPU})  # the poller stays off the server's CPU
    if args.before is not None and not (args.before / "mockstore" / "__init__.py").is_file():
        raise SystemExit(f"--before {args.before}: not a mockstore checkout")
    measured = sides(args.python, args.before.resolve() if args.before else None)
    figures: dict[str, list[Start]] = {side.name: [] for side in measured}
    with tempfile.TemporaryDirectory(prefix="mockstore-cold-") as tmp:
        workdir = Path(tmp)
        for side in measured:  # not counted: the disk cache
            launch(side, workdir)
        for index in range(args.rounds):
            shift = index % len(measured)
            for side in measured[shift:] + measured[:shift]:
                figures[side.name].append(launch(side, workdir))
            print(f"round {index + 1}/{args.rounds}", file=sys.stderr)
    medians = {
        name: {
            "wall_ms": statistics.median(s.wall_ms for s in starts),
            "cpu_ms": statistics.median(s.cpu_ms for s in starts),
        }
        for name, starts in figures.items()
    }
    floor = medians["floor"]
    print(
        f"| Side | launch → first 200 (median of {args.rounds}) | server CPU | wall / floor "
        "| CPU / floor |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, median in medians.items():
        wall = median["wall_ms"] / floor["wall_ms"]
        cpu = median["cpu_ms"] / floor["cpu_ms"]
        print(
            f"| {name} | {median['wall_ms']:.0f} ms | {median['cpu_ms']:.0f} ms | {wall:.2f}x "
            f"| {cpu:.2f}x |"
        )
    print(f"\ntarget (issue 29): mockstore ≤ {TARGET_RATIO}x the floor's wall time; load "
          f"average {os.getloadavg()[0]:.1f}")  # fmt: skip
    Path(args.output).write_text(
        json.dumps(
            {
                "rounds": args.rounds,
                "load_average": os.getloadavg()[0],
                "medians": medians,
                "runs": {name: [vars(s) for s in starts] for name, starts in figures.items()},
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
