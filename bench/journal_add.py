"""Instructions per ``Journal.add`` on a full journal, counted by callgrind, in one process.

    .venv/bin/python bench/journal_add.py [--tree DIR] [--entries 10000] [--adds 30000]

``instructions.py``'s journal side (the whole server, journal on / off) moves by a few
thousand instructions from run to run on a loaded machine (the once-a-second header
template is spread over fewer requests when the server is slower), which is as large as a
change to the journal. This counts the journal alone: a loop makes records the way
``api.py``'s ``_record`` does (a request id, the request's header pairs as a tuple, a
header block, a 1,135-byte answer) and appends them to a ``Journal`` of ``--entries``
that is already full, so every add evicts. It runs the loop twice under callgrind, with
the records appended and without (the same records made and dropped), each at two
lengths, and divides the differences: instructions per add, start-up and imports
cancelled out (with one hash seed: a random one moves them by thousands).
``--tree`` counts another checkout's ``mockstore`` (e.g. main's, for a before/after).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LOOP = """
import gc, sys
from mockstore.journal import Journal

def main(on, adds):
    journal = Journal(ENTRIES, 65536)
    headers = [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"python-httpx/0.27"),
               (b"accept", b"*/*"), (b"authorization", b"Bearer bench-key-0000000000")]
    block = b"content-type: application/json\\r\\n" * 12
    gc.freeze()  # as the server does before it serves (mockstore.server)
    for i in range(adds):
        body = bytes(1135)
        request_id = b"req-%010d" % i
        if on:
            journal.add(
                (next(journal.sequence), request_id, 1.0, 2.0 + i, "GET", "/v1/pets",
                 b"limit=20", tuple(headers), b"", ("127.0.0.1", 5555), "listPets", "k",
                 "free", 200, block, body, 0.5 * i, None, "response", 3.0 + i, 0, -1, 0.0),
                120,
            )

main(sys.argv[1] == "on", int(sys.argv[2]))
"""


def _instructions(tree: Path, script: Path, on: bool, adds: int) -> int:
    with tempfile.TemporaryDirectory(prefix="mockstore-journal-add-") as work:
        out = Path(work) / "callgrind.out"
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             str(script), "on" if on else "off", str(adds)],
            cwd=tree, capture_output=True, text=True,
            env={"PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"},
        )  # fmt: skip
        found = re.search(r"Collected : (\d+)", run.stderr)
        if run.returncode or found is None:
            raise SystemExit(f"callgrind failed: {run.stderr[-2000:]}")
        return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=str(ROOT), help="the checkout whose mockstore to count")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--adds", type=int, default=30_000)
    args = parser.parse_args()
    tree = Path(args.tree).resolve()
    with tempfile.TemporaryDirectory(prefix="mockstore-journal-add-") as work:
        script = Path(work) / "loop.py"
        script.write_text(LOOP.replace("ENTRIES", str(args.entries)))
        fill, total = args.entries, args.entries + args.adds
        on = _instructions(tree, script, True, total) - _instructions(tree, script, True, fill)
        off = _instructions(tree, script, False, total) - _instructions(tree, script, False, fill)
    per_add = (on - off) / args.adds
    print(f"{tree}: {per_add:,.0f} instructions per Journal.add on a full journal")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
