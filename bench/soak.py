"""The hostile mix for longer than CI runs it, with the server's memory sampled throughout.

    .venv/bin/python bench/soak.py [--minutes 10] [--output bench/results/soak.json]

The same clients as ``tests/test_soak.py`` (``tests/hostile_mix.py``: huge
headers, huge queries, anonymous floods, creates with 64 KiB names, huge
numbers, broken uploads, slow-loris and silent connections), against one
``mockstore serve`` with its defaults, for ``--minutes``. Prints the peak and
final resident memory (VmRSS), a sample per minute, and the answers by
status; writes every sample to ``--output``. The README's ceiling is the
figure this reaches, with room to spare.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.hostile_mix import SCENARIO, HostileMix  # noqa: E402
from tests.support import live_server  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "soak.json"))
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as server:
        mix = HostileMix(server.url, server.process.pid, args.minutes * 60, 10**9)
        result = mix.run(sample_every=5.0)
        health = httpx.get(server.url + "/__mockstore/health", timeout=30).status_code
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for seconds, rss in result.samples:
        if int(seconds) % 60 < 5:
            print(f"  {seconds:6.0f} s  RSS {rss / 2**20:6.1f} MiB")
    print(result.summary())
    print(f"client errors: {dict(result.errors)}; health after: {health}")
    Path(args.output).write_text(
        json.dumps(
            {
                "minutes": args.minutes,
                "requests": result.requests,
                "statuses": dict(result.statuses),
                "errors": dict(result.errors),
                "peak_rss_mib": round(result.peak_rss / 2**20, 1),
                "samples": [(round(s, 1), round(r / 2**20, 1)) for s, r in result.samples],
            },
            indent=2,
        )
        + "\n"
    )
    return 0 if health == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
