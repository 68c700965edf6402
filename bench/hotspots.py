"""Where mockstore spends its time under wrk load: a py-spy profile, summarised.

    .venv/bin/python bench/hotspots.py                      # baseline, listPets?limit=20
    .venv/bin/python bench/hotspots.py --scenario bench/scenarios/faults-50.yaml
    .venv/bin/python bench/hotspots.py --target '/v1/pets?limit=100&status=sold' \\
        --scenario bench/scenarios/large-inventory.yaml

The server runs on CPU 0; wrk and py-spy share CPU 1, so the sampler does not
take the server's core. py-spy samples without pausing the process
(``--nonblocking``), so a few samples are torn and dropped: it says how many.
Prints two tables: the functions the samples were in (self time) and the
mockstore functions on the stack (inclusive time), each as a share of all
samples. Needs py-spy (``.venv/bin/pip install py-spy``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# bench/ is not a package: run.py is imported from beside this file.
from run import (
    BENCH_KEY,
    HEALTH,
    LIST_20,
    LOAD_CPU,
    SCENARIOS,
    WRK,
    BenchError,
    mockstore_server,
    wait_until_serving,
)

_LINE = re.compile(r"^(?P<function>.*) \((?P<file>[^():]+)(?::\d+)?\)$")


def frame_name(frame: str) -> str:
    """``f (pkg/mod.py:12)`` -> ``f (pkg/mod.py)``: lines apart, a function is one entry."""
    match = _LINE.match(frame)
    return f"{match['function']} ({match['file']})" if match else frame


def summarise(raw_lines: Iterable[str]) -> tuple[int, Counter[str], Counter[str]]:
    """Total samples, self samples per function, inclusive samples per mockstore function."""
    total = 0
    leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for line in raw_lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame_name(f) for f in stack.split(";")]
        total += count
        leaf[frames[-1]] += count
        for name in set(frames):
            if "(mockstore/" in name:
                inclusive[name] += count
    return total, leaf, inclusive


def table(title: str, counts: Counter[str], total: int, top: int) -> str:
    lines = [f"| {title} | samples | share |", "|---|---:|---:|"]
    for name, count in counts.most_common(top):
        lines.append(f"| `{name}` | {count} | {count / total:.1%} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Profile mockstore under wrk load (py-spy).")
    parser.add_argument("--scenario", default=str(SCENARIOS / "baseline.yaml"))
    parser.add_argument("--target", default=LIST_20, help="the request wrk sends")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        print("bench: py-spy is not installed (.venv/bin/pip install py-spy)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mockstore-profile-") as tmp:
        workdir = Path(tmp)
        server = mockstore_server("profiled", args.scenario, workdir)
        server.start()
        try:
            wait_until_serving(server, HEALTH)
            raw = workdir / "profile.raw"
            sampler = subprocess.Popen(
                ["taskset", "-c", str(LOAD_CPU), py_spy, "record", "--pid", str(server.pid),
                 "--format", "raw", "--rate", str(args.rate), "--duration", str(args.seconds),
                 "--nonblocking", "-o", str(raw)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
            time.sleep(0.5)  # let py-spy attach before the load starts
            load = subprocess.run(
                ["taskset", "-c", str(LOAD_CPU), WRK, "-t1", "-c32", f"-d{args.seconds}s",
                 "-H", f"Authorization: Bearer {BENCH_KEY}",
                 f"http://127.0.0.1:{server.port}{args.target}"],
                capture_output=True, text=True, timeout=args.seconds + 60,
            )  # fmt: skip
            sampler_output, _ = sampler.communicate(timeout=args.seconds + 60)
        except BenchError as exc:
            print(f"bench: {exc}", file=sys.stderr)
            return 2
        finally:
            server.stop()
        if sampler.returncode != 0 or not raw.exists():
            print(f"bench: py-spy failed:\n{sampler_output}", file=sys.stderr)
            return 2
        total, leaf, inclusive = summarise(raw.read_text().splitlines())
    rps = re.search(r"Requests/sec:\s+([\d.]+)", load.stdout)
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", load.stdout)
    invalid = f", {non_2xx[1]} NON-2xx (invalid)" if non_2xx else ""
    print(
        f"{args.scenario}, GET {args.target}: {rps[1] if rps else '?'} req/s under py-spy"
        f"{invalid}; {total} samples"
    )
    print()
    print(table("Self time (innermost frame)", leaf, total, args.top))
    print()
    print(table("mockstore function on the stack (inclusive)", inclusive, total, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
