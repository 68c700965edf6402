"""Instructions per request, counted by callgrind: the bench's noise-free companion.

    .venv/bin/python bench/instructions.py [--requests 3000] [--warmup 12000] [--cache]

wrk's requests per second move by 10-20% from one run to the next on a shared
virtual machine, which is as large as some of the differences the issues ask
about (a journal within 15%, fault rules under 10%). Valgrind's callgrind
counts the instructions the server process executes, and that count is the
same run after run whatever else the machine does. For each side of
``run.py``'s comparisons this starts the server under callgrind with
instrumentation off, warms it up (with ``--warmup`` requests, more than the
journal holds, so the ring buffer is full and evicting), switches
instrumentation on for ``--requests`` keep-alive requests from one client,
and divides. ``--cache`` also simulates the caches and reports last-level
misses per request, the cost that instruction counts do not show.

It counts user-space instructions only: the kernel's share of each request
(the socket calls) is left out, so these ratios overstate differences in
mockstore's own code compared with run.py's, and the two are read together.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import BENCH_KEY, COMPARISONS, ROOT, SCENARIOS, free_port

PYTHON = sys.executable
LIST_20 = "/v1/pets?limit=20"
LIST_SOLD = "/v1/pets?limit=100&status=sold"
LIST_5 = "/v1/pets?limit=5"
# A side whose target is the first page's rel="next" (a cursor only the server makes).
NEXT_OF = "next-of:"


@dataclass(frozen=True)
class Side:
    id: str
    scenario: str | None  # None: a bench app (``ceiling.py`` or ``floor.py``, by ``id``)
    target: str
    method: str = "GET"
    # Request headers beyond the key; "{etag}" stands for the target's ETag (read first).
    headers: tuple[tuple[str, str], ...] = ()
    status: int = 200
    key: bool = True


PREFLIGHT = (("Origin", "https://app.example.com"), ("Access-Control-Request-Method", "GET"))
SIDES = (
    Side("floor", None, LIST_20),
    Side("ceiling", None, LIST_20),
    Side("mockstore", "baseline", LIST_20),
    Side("journal-off", "journal-off", LIST_20),
    Side("faults-50", "faults-50", LIST_20),
    Side("faults-50-other-ops", "faults-50-other-ops", LIST_20),
    Side("default-sold", "baseline", LIST_SOLD),
    Side("large-sold", "large-inventory", LIST_SOLD),
    # The general limiter (ratelimit:): what a token bucket and a sliding log cost.
    Side("token-bucket", "token-bucket", LIST_20),
    Side("sliding-log", "sliding-log", LIST_20),
    # Issue 25's HTTP semantics (bench/scenarios/http-semantics.yaml), each beside mockstore:
    # the same list with the section on, a 304, the list gzip-coded, a CORS preflight.
    Side("semantics-plain", "http-semantics", LIST_20),
    Side("semantics-304", "http-semantics", LIST_20, headers=(("If-None-Match", "{etag}"),),
         status=304),
    Side("semantics-gzip", "http-semantics", LIST_20, headers=(("Accept-Encoding", "gzip"),)),
    Side("semantics-preflight", "http-semantics", "/v1/pets", method="OPTIONS",
         headers=PREFLIGHT, status=204, key=False),
    # Issue 25's collections: a middle page by cursor (Link with four relations and the
    # total; its target, the first page's rel="next") against a plain listing of as many
    # pets, and a listing by name, case-insensitively, against one by id.
    Side("list-5", "baseline", LIST_5),
    Side("cursor-page", "collections-cursor", NEXT_OF + LIST_5),
    Side("name-ci", "collections-name-ci", LIST_20),
    # Issue 29: a reset over HTTP (the server's part of Control.reset(), no body sent).
    Side("reset", "baseline", "/__mockstore/reset", method="POST", key=False),
)  # fmt: skip
# Stated, not held to a target: (label, numerator, denominator).
COLLECTIONS = (
    ("a cursor page (Link, total) / a plain listing, 5 pets", "cursor-page", "list-5"),
    ("by name, case-insensitively / by id, 20 pets", "name-ci", "mockstore"),
)
# Costs stated, not held to a target: (id, label, numerator, denominator).
LIMITER_COSTS = (
    ("token_bucket", "a token bucket's minute / the classic fixed windows", "token-bucket",
     "mockstore"),
    ("sliding_log", "a sliding log's minute / the classic fixed windows", "sliding-log",
     "mockstore"),
)  # fmt: skip


@dataclass
class Count:
    instructions: float
    ll_misses: float | None


def _get(
    connection: http.client.HTTPConnection,
    target: str,
    key: str | None,
    side: Side | None = None,
    etag: str = "",
) -> bytes:
    headers = {"Authorization": f"Bearer {key}"} if key and (side is None or side.key) else {}
    method, status = "GET", 200
    if side is not None:
        headers.update({name: value.replace("{etag}", etag) for name, value in side.headers})
        method, status = side.method, side.status
    connection.request(method, target, headers=headers)
    response = connection.getresponse()
    body = response.read()
    if response.status != status:
        raise SystemExit(f"{method} {target} answered {response.status}: {body[:200]!r}")
    return body


def _etag(connection: http.client.HTTPConnection, target: str, key: str | None) -> str:
    """The ETag of ``target``'s answer now (for a side that asks If-None-Match)."""
    connection.request("GET", target, headers={"Authorization": f"Bearer {key}"})
    response = connection.getresponse()
    response.read()
    return response.getheader("etag") or ""


def _command(side: Side, port: int, body_bytes: int) -> list[str]:
    if side.scenario is None:
        app = str(ROOT / "bench" / f"{side.id}.py")
        return [PYTHON, app, "--port", str(port), "--body-bytes", str(body_bytes)]
    scenario = str(SCENARIOS / f"{side.scenario}.yaml")
    serve = [PYTHON, "-m", "mockstore", "serve", "--port", str(port), "--log-level", "warning"]
    return [*serve, "--scenario", scenario]


def _next_of(connection: http.client.HTTPConnection, target: str, key: str | None) -> str:
    """The path of ``target``'s rel="next" Link."""
    connection.request("GET", target, headers={"Authorization": f"Bearer {key}"})
    response = connection.getresponse()
    response.read()
    found = re.search(r'<([^>]+)>;\s*rel="next"', response.getheader("link") or "")
    if found is None:
        raise SystemExit(f"GET {target} has no rel=next Link")
    return found.group(1)


def count(side: Side, requests: int, warmup: int, cache: bool, body_bytes: int) -> Count:
    """Instructions (and last-level misses) per request for one side."""
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="mockstore-callgrind-"))
    out = workdir / "callgrind.out"
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    if cache:
        valgrind.append("--cache-sim=yes")
    process = subprocess.Popen(
        [*valgrind, *_command(side, port, body_bytes)],
        cwd=ROOT,
        # One hash seed: a random one lays out dicts and sets differently from run to run,
        # which moves the counts by thousands (``bench/journal_add.py`` found it).
        env={**os.environ, "PYTHONHASHSEED": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                key = None if side.scenario is None else BENCH_KEY
                target = side.target
                if target.startswith(NEXT_OF):
                    target = _next_of(connection, target.removeprefix(NEXT_OF), key)
                # The side's own request when it needs no ETag and answers 200 (a POST).
                plain = side if not side.headers and side.status == 200 else None
                _get(connection, target, key, plain)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit(f"{side.id}: no server under valgrind") from None
                time.sleep(0.5)
        etag = _etag(connection, target, key) if side.scenario is not None else ""
        for _ in range(warmup):
            _get(connection, target, key, side, etag)
        subprocess.run(["callgrind_control", "-i", "on", str(process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        for _ in range(requests):
            _get(connection, target, key, side, etag)
        subprocess.run(["callgrind_control", "-i", "off", str(process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        subprocess.run(["callgrind_control", "-d", str(process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        connection.close()
    finally:
        process.terminate()
        process.wait(60)
    events: list[str] = []
    totals = [0] * 16
    for dump in workdir.glob("callgrind.out*"):
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("totals:"):
                for index, value in enumerate(line.split()[1:]):
                    totals[index] += int(value)
    shutil.rmtree(workdir, ignore_errors=True)
    figures = dict(zip(events, totals, strict=False))
    misses = None
    if cache:
        misses = (figures.get("DLmr", 0) + figures.get("DLmw", 0)) / requests
    return Count(figures["Ir"] / requests, misses)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=12_000)
    parser.add_argument("--cache", action="store_true", help="also count last-level misses")
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" / "instructions.json"))
    parser.add_argument(
        "--sides", help="only these sides (comma-separated ids, e.g. default-sold,large-sold)"
    )
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")

    probe_port = free_port()
    probe = subprocess.Popen(
        _command(Side("mockstore", "baseline", LIST_20), probe_port, 0),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                body_bytes = len(
                    _get(http.client.HTTPConnection("127.0.0.1", probe_port), LIST_20, BENCH_KEY)
                )
                break
            except OSError:
                time.sleep(0.1)
    finally:
        probe.terminate()
        probe.wait(10)

    counts: dict[str, Count] = {}
    chosen = set(args.sides.split(",")) if args.sides else {side.id for side in SIDES}
    for side in (side for side in SIDES if side.id in chosen):
        counts[side.id] = count(side, args.requests, args.warmup, args.cache, body_bytes)
        misses = counts[side.id].ll_misses
        extra = f", {misses:.1f} LL misses" if misses is not None else ""
        print(f"  {side.id:<22} {counts[side.id].instructions:>10,.0f} instructions/request{extra}")

    print()
    print("| Comparison | Issue | Instructions per request | Ratio (inverse) | Target | Verdict |")
    print("|---|---|---|---:|---|---|")
    rows = []
    for comparison in COMPARISONS:
        if not {comparison.numerator, comparison.denominator} <= counts.keys():
            continue
        numerator = counts[comparison.numerator].instructions
        denominator = counts[comparison.denominator].instructions
        # Throughput is the inverse of the cost per request.
        ratio = denominator / numerator
        rows.append({"id": comparison.id, "ratio": ratio})
        label = re.sub(r"`", "", comparison.label)
        # The instructions target where an issue set one; else the req/s target.
        if comparison.instructions is not None:
            target, text, met = comparison.instructions, comparison.instructions_text, None
        else:
            target, text = comparison.target, comparison.target_text
            met = ratio > target if comparison.strict else None
        met = ratio >= target if met is None else met
        print(
            f"| {label} | {comparison.issue} | {numerator:,.0f} / {denominator:,.0f} "
            f"| {ratio:.1%} | {text} | {'met' if met else 'MISSED'} |"
        )
    for cost_id, label, numerator_id, denominator_id in LIMITER_COSTS:
        if {numerator_id, denominator_id} <= counts.keys():
            numerator = counts[numerator_id].instructions
            denominator = counts[denominator_id].instructions
            print(
                f"| {label} | #25 | {numerator:,.0f} / {denominator:,.0f} "
                f"| {denominator / numerator:.1%} | stated | +{numerator - denominator:,.0f} "
                "instructions per request |"
            )
            rows.append({"id": cost_id, "ratio": denominator / numerator})
    for label, numerator_id, denominator_id in COLLECTIONS:
        if {numerator_id, denominator_id} <= counts.keys():
            numerator = counts[numerator_id].instructions
            denominator = counts[denominator_id].instructions
            rows.append({"id": numerator_id, "ratio": denominator / numerator})
            print(
                f"| {label} | #25 | {numerator:,.0f} / {denominator:,.0f} "
                f"| {denominator / numerator:.1%} | stated | - |"
            )
    semantics = [side.id for side in SIDES if side.id.startswith("semantics-")]
    if "mockstore" in counts and any(s in counts for s in semantics):
        # Issue 25: what each part of the http section costs beside the default answer.
        print()
        print("| Side (http-semantics.yaml) | Instructions per request | / mockstore |")
        print("|---|---:|---:|")
        base = counts["mockstore"].instructions
        for name in (s for s in semantics if s in counts):
            figure = counts[name].instructions
            print(f"| {name} | {figure:,.0f} | {figure / base:.2f}x |")
    Path(args.output).write_text(
        json.dumps(
            {
                "requests": args.requests,
                "warmup": args.warmup,
                "per_request": {k: vars(v) for k, v in counts.items()},
                "comparisons": rows,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
