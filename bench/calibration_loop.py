"""Drift before and after calibration, per provider stand-in: the figures issue 17 asks for.

Each provider (tests/upstream: Kennel, Menagerie, the original stand-in) is recorded
through ``mockstore record`` under one client session, drifted against the scenario a
team would write from the provider's documentation, calibrated (``--from`` the recording,
``--target`` for the rest), and drifted again. Prints a Markdown table of differences by
cause, and every reason that stays not expressible. Loopback only.

    .venv/bin/python bench/calibration_loop.py
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fidelity_session import client_session  # noqa: E402
from tests.test_fidelity_loop import MAIN, PROVIDERS, TIGHT, _before, _drift, _mockstore  # noqa: E402
from tests.upstream import provider, recorder  # noqa: E402


def _causes(report: dict) -> str:
    counts = Counter(d["cause"] for d in report.get("differences", []))
    return ", ".join(f"{cause} {n}" for cause, n in sorted(counts.items())) or "none"


def main() -> int:
    print(
        "| provider | exchanges | drift before (by cause) | drift after (by cause) "
        "| not expressible after |"
    )
    print("|---|---|---|---|---|")
    for name, spec in PROVIDERS.items():
        with tempfile.TemporaryDirectory() as folder:
            work = Path(folder)
            har = work / "session.har"
            keys = {key: plan for key, (plan, _, _) in spec["plans"].items()}
            with provider(name, keys) as upstream:
                with recorder(upstream.url, "--out", str(har)) as proxy:
                    session = client_session(proxy.url, MAIN, TIGHT, oversize=spec["oversize"])
                    proxy.stop()
                calibrated = work / "calibrated.yaml"
                calibration = _mockstore(
                    "calibrate", "--from", str(har), "--target", upstream.url,
                    "--key", f"{MAIN}=ci-key", "--key", TIGHT, "--allow-writes", "--wait", "0",
                    "--out", str(calibrated),
                )  # fmt: skip
            before_file = work / "before.yaml"
            before_file.write_text(_before(spec))
            _, before = _drift(har, before_file)
            if calibration.returncode != 0:
                print(f"| {name} | {len(session.seen)} | {_causes(before)} | calibrate failed | |")
                continue
            _, after = _drift(har, calibrated)
            reasons = sorted(
                {d["reason"] for d in after["differences"] if d["cause"] == "not_expressible"}
            )
            print(
                f"| {name} | {len(session.seen)} | {len(before['differences'])}: {_causes(before)} "
                f"| {len(after['differences'])}: {_causes(after)} | {', '.join(reasons) or '-'} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
