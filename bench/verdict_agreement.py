"""Verdict agreement per provider stand-in: the table issue 25 tracks.

For each stand-in (tests/upstream: Tollgate, Corral, Aviary, Kennel, Menagerie, the
original stand-in) its client suite (tests/client_suites) runs against the provider;
the provider is recorded with ``mockstore record`` under the fidelity session and the
suite, calibrated from the recording (``--from`` and ``--target``, no opt-in), and the
suite runs again against ``mockstore serve`` of the team's scenario (from the docs) and
of the calibrated one. Prints a Markdown table (exchanges, drift before and after by
cause, agreement before and after, the reasons that stay not expressible), then the
tests that still disagree after calibration, and writes every figure to
``bench/results/verdict_agreement.json``. Loopback only; a few minutes a stand-in.

    .venv/bin/python bench/verdict_agreement.py                 # all six
    .venv/bin/python bench/verdict_agreement.py tollgate kennel # some
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.agreement import STANDINS, measure, table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("standins", nargs="*", help=f"of {', '.join(STANDINS)} (default: all)")
    parser.add_argument("--keep", metavar="DIR", help="keep every run's files in DIR")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "verdict_agreement.json"))
    args = parser.parse_args(argv)
    names = args.standins or list(STANDINS)
    unknown = sorted(set(names) - set(STANDINS))
    if unknown:
        parser.error(f"no stand-in {', '.join(unknown)}; known: {', '.join(STANDINS)}")
    measures = []
    with tempfile.TemporaryDirectory(prefix="agreement-") as folder:
        work = Path(args.keep or folder)
        for name in names:
            started = time.monotonic()
            print(f"{name}: measuring", file=sys.stderr, flush=True)
            measures.append(measure(STANDINS[name], work / name))
            print(f"{name}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    print(table(measures))
    for m in measures:
        if m.calibrate != "ok":
            print(f"{m.name}: calibrate failed: {m.calibrate}\n")
        disagreeing = m.disagreeing()
        print(f"{m.name}: {len(disagreeing)} test(s) disagree after calibration")
        for test in disagreeing:
            print(f"  {test}: provider {m.provider[test]}, mock {m.after.get(test, 'not run')}")
        print()
    Path(args.out).write_text(
        json.dumps([m.to_json() for m in measures], indent=1) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
