"""Where a request's instructions go, stage by stage: callgrind with marker functions.

    .venv/bin/python bench/stages.py                 # the floor and mockstore, side by side
    .venv/bin/python bench/stages.py --sides floor,ceiling,mockstore
    .venv/bin/python bench/stages.py --python ../base/.venv/bin/python   # another tree's mockstore
    .venv/bin/python bench/stages.py --scenario faults-50 --sides mockstore

``instructions.py`` says how many instructions a request costs; this says where
they go. Python code all runs inside the interpreter's evaluation loop, so
callgrind alone cannot tell one Python function's instructions from another's.
Here each stage's functions are called through a C function of its own
(``stage_markers.c``, compiled with gcc at run time), and callgrind's inclusive
cost of that C function is the stage's cost. The server is the real one
(uvicorn, httptools, uvloop, the same settings as ``mockstore serve`` and
``ceiling.py``), driven as ``instructions.py`` drives it: a warm-up beyond the
journal's size, then ``--requests`` keep-alive requests counted.

The stages (``STAGES``) are the functions that implement each step; the
pipeline's own code between them (reading scope and headers, the branches,
building the exchange) is "dispatch", what is left of the app's cost. Outside
the app: uvicorn's protocol reading and parsing the request, and the event
loop (its iteration, the task that runs the app, the socket calls' user-space
side). Calling through a marker costs a little (a Python wrapper, a C call);
that cost is measured in a calibration run and subtracted, so the total agrees
with ``instructions.py`` within a fraction of a percent.

``--python`` runs the server with another interpreter, e.g. the virtualenv of a
checkout of main: the stage table of main and of this tree, on one machine.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENARIOS = HERE / "scenarios"
BENCH_KEY = "bench-key"
LIST_20 = "/v1/pets?limit=20"
# The length of the baseline's answer to LIST_20, for a ceiling measured alone.
LIST_20_BYTES = 1135

# Each stage and the functions that implement it, as ``module:Class.attribute``
# or ``module:function``. Several spellings are listed where the code has
# moved between versions; those that exist are measured, and the report says
# which. A function must not be listed under two stages, nor call another
# listed function (inclusive costs would count it twice).
STAGES: dict[str, tuple[str, ...]] = {
    "route": (
        "mockstore.routing:Router.resolve",
        "mockstore.faults:RouteTable.for_path",
    ),
    "auth": (
        "mockstore.api:parse_authorization",
        "mockstore.keys:KeyRing.lookup",
    ),
    "limits": ("mockstore.ratelimit:RateLimiter.check",),
    "faults": (
        "mockstore.faults:FaultEngine.applies",
        "mockstore.faults:FaultEngine.screen",
        "mockstore.faults:FaultEngine.evaluate",
        "mockstore.api:PetStoreAPI._facts",
    ),
    "answer": ("mockstore.api:PetStoreAPI._answer",),
    "headers": (
        "mockstore.api:PetStoreAPI._headers",
        "mockstore.headers:ResponseHeaders.head",
        "mockstore.state:MockState.next_request_id",
    ),
    "journal": ("mockstore.api:PetStoreAPI._record",),
}
RECEIVE = {
    "mockstore": "mockstore.protocol:GuardedHttpToolsProtocol.data_received",
    "ceiling": "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.data_received",
    "floor": "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol.data_received",
}
# The bench apps (no mockstore): ``ceiling.py`` (bare Starlette) and ``floor.py`` (raw ASGI).
BENCH_APPS = ("ceiling", "floor")

# The rows of the report: (label, what it is computed from).
ROWS = (
    ("uvicorn: read and parse the request (protocol, httptools)", "receive"),
    ("event loop: task, iteration, socket calls (user space)", "loop"),
    ("ASGI send: uvicorn writes the head and the body", "send"),
    ("app: route (base path, operation, scripted routes)", "route"),
    ("app: auth (Authorization header, key lookup)", "auth"),
    ("app: limits (two windows, the decision)", "limits"),
    ("app: faults (index, rules)", "faults"),
    ("app: answer (query, handler, list body)", "answer"),
    ("app: headers (request id, X-RateLimit-*, Date, ...)", "headers"),
    ("app: journal (entry, access log)", "journal"),
    ("app: dispatch (the pipeline's own code between stages)", "dispatch"),
)


# -- the server side (``--serve``): runs under callgrind --------------------------


def _resolve(spec: str) -> tuple[Any, str, Any] | None:
    """``module:Class.attr`` -> (owner, attribute name, current value), or None if absent."""
    module_name, _, path = spec.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError:
        return None
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent, None)
        if owner is None:
            return None
    value = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if value is None or not callable(value):
        return None
    return owner, name, value


def wrap(marker: Callable[..., Any], original: Callable[..., Any], method: bool) -> Any:
    """``original`` called through ``marker``: its instructions counted as the marker's.

    No Python frame is added: ``partial`` and the instance-method binding are C,
    so what a call through a marker adds is small and the same every time
    (measured by ``calibrate`` and subtracted).
    """
    markers = importlib.import_module("stage_markers")
    measured = functools.partial(marker, original)
    return markers.as_method(measured) if method else measured


@types.coroutine
def _finish(coro: Any, waiting: Any) -> Any:
    """Run the rest of a coroutine whose first step ran through a marker (it suspended)."""
    while True:
        try:
            yield waiting
        except BaseException as exc:  # handed to the coroutine, as await would
            try:
                waiting = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                waiting = coro.send(None)
            except StopIteration as stop:
                return stop.value


def wrap_async(step: Callable[[Any], Any], original: Callable[..., Any]) -> Callable[..., Any]:
    """An async callable whose first step (all of it, unless it waits) runs through ``step``."""

    async def measured(*args: Any) -> Any:
        coro = original(*args)
        value, finished = step(coro)
        if finished:
            return value
        return await _finish(coro, value)

    return measured


def measured_app(app: Any, markers: Any) -> Any:
    """The ASGI app through the ``app`` marker, its ``send`` through the ``send`` marker."""
    run = wrap_async(markers.app_step, app)
    send_step = markers.send_step

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        await run(scope, receive, wrap_async(send_step, send))

    return asgi


def patch(markers: Any, side: str) -> list[str]:
    """Route every stage function that exists through its marker; returns those patched."""
    patched = []
    specs = [("receive", RECEIVE[side])]
    if side == "mockstore":
        specs += [(stage, spec) for stage, listed in STAGES.items() for spec in listed]
    for stage, spec in specs:
        found = _resolve(spec)
        if found is None:
            continue
        owner, name, value = found
        setattr(owner, name, wrap(getattr(markers, stage), value, isinstance(owner, type)))
        patched.append(f"{stage} {spec}")
    return patched


def serve(args: argparse.Namespace) -> int:
    sys.path.insert(0, args.markers)
    markers = importlib.import_module("stage_markers")
    import uvicorn

    patched = patch(markers, args.side)
    Path(args.report).write_text(json.dumps(patched))
    if args.side in BENCH_APPS:
        import floor

        bench_app = importlib.import_module(args.side)
        app = bench_app.build_app(floor.constant_body(args.body_bytes))
        settings = floor.settings("127.0.0.1", args.port)
        uvicorn.Server(uvicorn.Config(measured_app(app, markers), **settings)).run()
        return 0
    from mockstore.app import MockstoreApp
    from mockstore.server import listen, uvicorn_config

    app = MockstoreApp(args.scenario)
    config = uvicorn_config(app, log_level="warning")
    config.app = measured_app(app, markers)
    uvicorn.Server(config).run(sockets=[listen("127.0.0.1", args.port)])
    return 0


def calibrate(args: argparse.Namespace) -> int:
    """Loops whose marker costs give what calling through a marker adds (see ``Overhead``).

    Each loop runs inside a marker of its own, so its cost is read like a stage's.
    """
    sys.path.insert(0, args.markers)
    markers = importlib.import_module("stage_markers")
    n = args.requests

    class Probe:
        def noop(self, a: object, b: object) -> None:
            return None

    Probe.measured = wrap(markers.calibrate, Probe.noop, method=True)  # type: ignore[attr-defined]
    probe = Probe()

    def empty() -> None:
        for _ in range(n):
            pass

    def plain() -> None:
        for _ in range(n):
            probe.noop(1, 2)

    def through() -> None:
        for _ in range(n):
            probe.measured(1, 2)  # type: ignore[attr-defined]

    sends = args.sends

    async def app(scope: Any, receive: Any, send: Any) -> None:
        for _ in range(sends):
            await send(scope)

    async def send(message: Any) -> None:
        return None

    class Wrapped:  # the app and its sends through markers that no loop uses
        app_step = markers.answer_step
        send_step = markers.headers_step

    asgi = measured_app(app, Wrapped)
    run = markers.receive_step  # resumes a coroutine as an asyncio task does (in C)

    def plain_asgi() -> None:
        for _ in range(n):
            run(app(None, None, send))

    def through_asgi() -> None:
        for _ in range(n):
            run(asgi(None, None, send))

    markers.route(empty)
    markers.auth(plain)
    markers.limits(through)
    markers.faults(plain_asgi)
    markers.journal(through_asgi)
    return 0


# -- reading callgrind's output -------------------------------------------------


@dataclass
class Profile:
    """What one callgrind run counted: every function's inclusive cost and call count."""

    total: int
    inclusive: Counter[str]
    calls: Counter[str]


def read_callgrind(lines: Iterable[str]) -> Profile:
    """Inclusive instructions and calls per function name, from a callgrind output file.

    A function's inclusive cost is its own cost plus the cost of every call it
    makes (callgrind writes each call's inclusive cost after its ``calls=``
    line). Right for the markers, which never call themselves; a recursive
    function (the interpreter's evaluation loop) would be counted more than once.
    """
    names: dict[str, str] = {}
    inclusive: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    positions = 1
    total = 0
    current = callee = ""
    call_count = -1

    def name(spec: str) -> str:
        spec = spec.strip()
        if spec.startswith("("):
            ident, _, rest = spec[1:].partition(")")
            rest = rest.strip()
            if rest:
                names[ident] = rest
            return names.get(ident, ident)
        return spec

    for line in lines:
        if not line:
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            fields = line.split()
            cost = int(fields[positions]) if len(fields) > positions else 0
            inclusive[current] += cost
            if call_count >= 0:
                calls[callee] += call_count
                call_count = -1
        elif line.startswith("fn="):
            current = name(line[3:])
        elif line.startswith("cfn="):
            callee = name(line[4:])
        elif line.startswith("calls="):
            call_count = int(line[6:].split()[0])
        elif line.startswith("positions:"):
            positions = len(line.split()) - 1
        elif line.startswith(("totals:", "summary:")) and not total:
            total = int(line.split()[1])
    return Profile(total, inclusive, calls)


def read_dumps(workdir: Path) -> Profile:
    merged = Profile(0, Counter(), Counter())
    for dump in sorted(workdir.glob("callgrind.out*")):
        profile = read_callgrind(dump.read_text(errors="replace").splitlines())
        merged.total += profile.total
        merged.inclusive.update(profile.inclusive)
        merged.calls.update(profile.calls)
    return merged


@dataclass(frozen=True)
class Overhead:
    """What calling through markers adds, per call, from the calibration runs.

    ``inside``: a synchronous stage call, counted inside its marker (the C call
    into the Python function); ``wrapper``: the whole of it, wrapper included.
    ``app_*`` and ``send_*``: the same for the ASGI call and for each of its
    sends; a send's wrapper runs inside the app's marker.
    """

    inside: float
    wrapper: float
    app_inside: float
    app_wrapper: float
    send_wrapper: float


def _inclusive(profile: Profile, stage: str) -> int:
    """A stage's instructions: its marker's and its coroutine-step marker's."""
    return profile.inclusive[f"stage_{stage}"] + profile.inclusive[f"stage_{stage}_step"]


def overhead_from(one_send: Profile, two_sends: Profile, n: int) -> Overhead:
    """From two calibration runs: the ASGI app sends once in the first, twice in the second."""

    def per(profile: Profile, stage: str) -> float:
        return _inclusive(profile, stage) / n

    def asgi(profile: Profile) -> tuple[float, float]:
        """The app's wrappers in all, and the part of it inside the app's marker."""
        plain = per(profile, "faults") - per(profile, "route")
        return per(profile, "journal") - per(profile, "route") - plain, per(
            profile, "answer"
        ) - plain

    empty, plain, through = (per(one_send, s) for s in ("route", "auth", "limits"))
    (whole_1, inside_1), (whole_2, inside_2) = asgi(one_send), asgi(two_sends)
    send_wrapper = whole_2 - whole_1
    return Overhead(
        inside=per(one_send, "calibrate") - (plain - empty),
        wrapper=through - plain,
        app_inside=inside_1 - (inside_2 - inside_1),
        app_wrapper=whole_1 - send_wrapper,
        send_wrapper=send_wrapper,
    )


# -- the driver ---------------------------------------------------------------------


def compile_markers(python: str, workdir: Path) -> Path:
    """Build stage_markers.c for ``python`` into ``workdir``; returns the directory."""
    info = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
         "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    include, suffix = info[0], info[1]
    target = workdir / f"stage_markers{suffix}"
    subprocess.run(
        ["gcc", "-O2", "-fno-ipa-icf", "-shared", "-fPIC", f"-I{include}",
         str(HERE / "stage_markers.c"), "-o", str(target)],
        check=True,
    )  # fmt: skip
    return workdir


def _get(connection: http.client.HTTPConnection, target: str, key: str | None) -> bytes:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    connection.request("GET", target, headers=headers)
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        raise SystemExit(f"GET {target} answered {response.status}: {body[:200]!r}")
    return body


def _callgrind(out: Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]


def measure_calibration(python: str, markers: Path, n: int) -> Overhead:
    profiles = []
    for sends in (1, 2):
        workdir = Path(tempfile.mkdtemp(prefix="mockstore-stages-"))
        try:
            subprocess.run(
                [*_callgrind(workdir / "callgrind.out"), python, __file__, "--calibrate",
                 "--markers", str(markers), "--requests", str(n), "--sends", str(sends)],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            profiles.append(read_dumps(workdir))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return overhead_from(profiles[0], profiles[1], n)


@dataclass
class Measured:
    side: str
    requests: int
    profile: Profile
    patched: list[str]
    body_bytes: int


def measure_side(
    python: str,
    markers: Path,
    side: str,
    scenario: str,
    requests: int,
    warmup: int,
    body: int,
    target: str = LIST_20,
) -> Measured:
    from run import free_port

    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="mockstore-stages-"))
    report = workdir / "patched.json"
    command = [
        *_callgrind(workdir / "callgrind.out"), "--instr-atstart=no",
        python, __file__, "--serve", "--side", side, "--port", str(port),
        "--markers", str(markers), "--report", str(report), "--scenario", scenario,
        "--body-bytes", str(body),
    ]  # fmt: skip
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    log = workdir / "server.log"
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb")
    )
    key = BENCH_KEY if side == "mockstore" else None
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                body_bytes = len(_get(connection, target, key))
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    tail = log.read_text(errors="replace")[-2000:]
                    raise SystemExit(f"{side}: no server; its log:\n{tail}") from None
                time.sleep(0.5)
        for _ in range(warmup):
            _get(connection, target, key)
        control = ["callgrind_control"]
        subprocess.run([*control, "-i", "on", str(process.pid)], check=True, capture_output=True)
        for _ in range(requests):
            _get(connection, target, key)
        subprocess.run([*control, "-i", "off", str(process.pid)], check=True, capture_output=True)
        subprocess.run([*control, "-d", str(process.pid)], check=True, capture_output=True)
        connection.close()
    finally:
        process.terminate()
        process.wait(60)
    patched = json.loads(report.read_text())
    profile = read_dumps(workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    return Measured(side, requests, profile, patched, body_bytes)


def breakdown(measured: Measured, overhead: Overhead) -> dict[str, float]:
    """Instructions per request for every row of ``ROWS``, and ``total``; overhead removed."""
    n = measured.requests
    profile = measured.profile
    calls = profile.calls
    figures: dict[str, float] = {"send": _inclusive(profile, "send") / n}
    wrapped = 0  # calls through a synchronous marker
    for stage in ("receive", *STAGES):
        count = calls[f"stage_{stage}"]
        wrapped += count
        figures[stage] = (_inclusive(profile, stage) - count * overhead.inside) / n
    # The app's marker holds the stage wrappers (not the receive one) and the send wrappers.
    apps, sends = calls["stage_app_step"], calls["stage_send_step"]
    app = _inclusive(profile, "app") - (wrapped - calls["stage_receive"]) * overhead.wrapper
    app -= apps * overhead.app_inside + sends * overhead.send_wrapper
    figures["app"] = app / n
    figures["dispatch"] = app / n - sum(figures[s] for s in ("send", *STAGES))
    total = profile.total - wrapped * overhead.wrapper
    total -= apps * overhead.app_wrapper + sends * overhead.send_wrapper
    figures["total"] = total / n
    figures["loop"] = figures["total"] - figures["receive"] - figures["app"]
    # Where a collection starts depends on which allocation crosses the threshold:
    # its cost lands in that stage; this row says how much it is in all.
    figures["gc"] = profile.inclusive["gc_collect_main"] / n
    return figures


def table(columns: dict[str, dict[str, float]]) -> str:
    names = list(columns)
    lines = [
        "| Stage | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    rows = (*ROWS, ("**total**", "total"), ("of which: cyclic garbage collector", "gc"))
    for label, key in rows:
        cells = []
        for name in names:
            value = columns[name].get(key)
            cells.append("—" if not value or (key in STAGES and value < 1) else f"{value:,.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the server's interpreter")
    parser.add_argument("--scenario", default="baseline", help="a file of bench/scenarios")
    parser.add_argument("--target", default=LIST_20, help="the request measured")
    parser.add_argument("--sides", default="floor,mockstore")
    parser.add_argument("--label", default="", help="a name for the mockstore column")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=12_000)
    parser.add_argument("--output", default=str(HERE / "results" / "stages.json"))
    # The server and calibration processes (this file, run by the driver).
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calibrate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--markers", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    parser.add_argument("--body-bytes", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--sends", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args)
    if args.calibrate:
        return calibrate(args)
    for tool in ("valgrind", "callgrind_control", "gcc"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed (valgrind and gcc Debian packages)")

    scenario = args.scenario
    if not Path(scenario).exists():
        scenario = str(SCENARIOS / f"{scenario}.yaml")
    body_bytes = LIST_20_BYTES if "mockstore" not in args.sides.split(",") else 0
    with tempfile.TemporaryDirectory(prefix="mockstore-markers-") as tmp:
        markers = compile_markers(args.python, Path(tmp))
        overhead = measure_calibration(args.python, markers, 20_000)
        print(
            f"marker overhead per call: {overhead.inside:.0f} inside, {overhead.wrapper:.0f} "
            f"in all; per ASGI call {overhead.app_inside:.0f} / {overhead.app_wrapper:.0f}, "
            f"per send {overhead.send_wrapper:.0f}",
            file=sys.stderr,
        )
        sides = args.sides.split(",")
        results: dict[str, dict[str, float]] = {}
        # mockstore first: a bench app's constant body is as long as its answer.
        for side in sorted(sides, key=lambda s: s in BENCH_APPS):
            measured = measure_side(
                args.python,
                markers,
                side,
                scenario,
                args.requests,
                args.warmup,
                body_bytes,
                args.target,
            )
            body_bytes = body_bytes or measured.body_bytes
            results[side] = breakdown(measured, overhead)
            print(f"{side}: measured {', '.join(measured.patched)}", file=sys.stderr)
        columns = {
            side if side in BENCH_APPS else (args.label or side): results[side] for side in sides
        }
        if "floor" in results and "mockstore" in results:
            # What mockstore costs beyond the stack, row by row (issue 29).
            floor, mine = results["floor"], results["mockstore"]
            columns[f"{args.label or 'mockstore'} - floor"] = {
                key: mine[key] - floor.get(key, 0.0) for key in mine
            }
    print(table(columns))
    Path(args.output).write_text(
        json.dumps(
            {
                "python": args.python,
                "scenario": scenario,
                "target": args.target,
                "requests": args.requests,
                "warmup": args.warmup,
                "overhead": vars(overhead),
                "per_request": columns,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
