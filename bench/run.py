"""mockstore's benchmark: speed as ratios against references measured in the same run.

    .venv/bin/python bench/run.py           # the full run (about 6 minutes)
    .venv/bin/python bench/run.py --quick   # a smoke check (about 1 minute)

Absolute requests per second say more about the machine than about mockstore,
so every throughput figure is compared with a reference served on the same
core, in the same minutes, by the same wrk: the stack's ceiling (a bare
Starlette app, bench/ceiling.py), or mockstore itself without the feature
being priced. Servers run on CPU 0 (``taskset -c 0``) and wrk on CPU 1
(``taskset -c 1 wrk -t1 -c32 --latency``); each side is warmed up, then the
sides are measured round after round (A B C ... A B C ...) so that a noisy
minute hits every side alike, and the medians are compared.

Start-up and memory are measured from process launch: the time to the first
200 on ``/__mockstore/health`` (and to the first API 200 after it), and VmRSS
from /proc once the server has served a few requests.

A noisy machine is detected rather than trusted: each run records the server's
CPU time, so a run whose server did not have its core to itself is flagged
``(noisy)``, and mockstore's own cost per request is also measured in process
(bench/inprocess.py), in CPU time, which sharing the machine barely moves.

The output is a Markdown report on stdout (ready for the README) and every raw
figure in bench/results/latest.json. See bench/README.md for how to read it.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import http.client
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SCENARIOS = BENCH / "scenarios"
RESULTS = BENCH / "results"
PYTHON = sys.executable
WRK = "/usr/bin/wrk" if Path("/usr/bin/wrk").exists() else (shutil.which("wrk") or "wrk")
SERVER_CPU = 0
LOAD_CPU = 1
WRK_THREADS = 1
WRK_CONNECTIONS = 32
# A plan no wrk run can exhaust (bench/scenarios/*.yaml): the bench measures the
# allowed path, with authentication, accounting and every header still on.
BENCH_KEY = "bench-key"
BENCH_PER_MINUTE = 100_000_000
# A key of the bundled default scenario, for the start-up figures.
DEFAULT_KEY = "enterprise-key"
LIST_20 = "/v1/pets?limit=20"
LIST_SOLD = "/v1/pets?limit=100&status=sold"
HEALTH = "/__mockstore/health"
# Below this share of the wall time on the server's CPU, a run did not have the
# core to itself (or wrk was starved): its req/s says more about the machine.
CONTENDED_SHARE = 0.90


class BenchError(RuntimeError):
    """A run that cannot produce trustworthy figures; the message says why."""


# -- processes ----------------------------------------------------------------

_children: list[subprocess.Popen[bytes]] = []


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop one server we started: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    if process in _children:
        _children.remove(process)


def _stop_all() -> None:
    for process in list(_children):
        with contextlib.suppress(Exception):
            _stop(process)


atexit.register(_stop_all)


def _exit_on_signal(signum: int, frame: Any) -> None:
    # Turn SIGTERM/SIGHUP into SystemExit so the finally blocks and atexit run.
    raise SystemExit(128 + signum)


def free_port() -> int:
    """A port the kernel just handed out; the server binds it a moment later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A server process pinned to the server CPU, with its log in a file."""

    name: str
    command: list[str]
    port: int
    log_path: Path
    scenario: str | None = None  # None for the ceiling
    process: subprocess.Popen[bytes] | None = None
    launched_at: float = 0.0

    def start(self) -> None:
        with self.log_path.open("wb") as log:
            self.launched_at = time.perf_counter()
            # taskset execs the server, so the pid is the server's own (for /proc).
            self.process = subprocess.Popen(
                ["taskset", "-c", str(SERVER_CPU), *self.command],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
        _children.append(self.process)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"

    def memory(self) -> dict[str, float]:
        """VmRSS and VmHWM (peak RSS) in MiB, from /proc/PID/status."""
        figures = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                figures[name] = int(value.split()[0]) / 1024
        return figures

    def fail(self, message: str) -> BenchError:
        status = "running" if self.alive() else f"exited with {self.process.returncode}"  # type: ignore[union-attr]
        return BenchError(f"{self.name}: {message} (server {status}); its log:\n{self.log_tail()}")


def mockstore_server(name: str, scenario: str, workdir: Path) -> Server:
    port = free_port()
    command = [PYTHON, "-m", "mockstore", "serve", "--port", str(port)]
    command += ["--log-level", "warning", "--scenario", scenario]
    return Server(name, command, port, workdir / f"{name}.log", scenario)


# The bench apps, by side id: ``floor.py`` (raw ASGI) and ``ceiling.py`` (bare Starlette).
BENCH_APPS = ("floor", "ceiling")


def bench_app_server(name: str, body_bytes: int, workdir: Path) -> Server:
    """``floor.py`` or ``ceiling.py`` (``name``) serving a constant body of ``body_bytes``."""
    port = free_port()
    command = [PYTHON, str(BENCH / f"{name}.py"), "--port", str(port)]
    command += ["--body-bytes", str(body_bytes)]
    return Server(name, command, port, workdir / f"{name}.log")


def ceiling_server(body_bytes: int, workdir: Path) -> Server:
    return bench_app_server("ceiling", body_bytes, workdir)


# -- HTTP probes --------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def get(port: int, target: str, key: str | None = None, timeout: float = 10.0) -> Reply:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        connection.request("GET", target, headers=headers)
        response = connection.getresponse()
        body = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        connection.close()


def wait_until_serving(server: Server, target: str, timeout: float = 60.0) -> None:
    """Poll ``target`` until it answers 200; fail loudly if the server dies or hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not server.alive():
            raise server.fail("the server exited before it served")
        try:
            if get(server.port, target, timeout=2).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise server.fail(f"no 200 on {target} within {timeout:.0f} s")


def raw_status(port: int, target: str, key: str | None = None) -> int | None:
    """One request over a fresh socket; None while nothing listens yet.

    A raw socket rather than http.client: the poller should cost the server
    under test as little as possible between its attempts.
    """
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(request.encode())
            head = b""
            while b"\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk:
                    return None
                head += chunk
    except (ConnectionRefusedError, ConnectionResetError):
        return None
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


# -- wrk ----------------------------------------------------------------------

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_DURATION = re.compile(r"^([\d.]+)(us|ms|s|m|h)$")


def _ms(text: str) -> float:
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"not a wrk duration: {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass
class WrkRun:
    """One wrk run, parsed. A run with non-2xx/3xx answers or socket errors is invalid."""

    side: str
    round: int
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    socket_errors: dict[str, int]
    problems: list[str] = field(default_factory=list)
    # Filled in by run_wrk: the server's CPU seconds during the run, their share
    # of the wall time (below ~0.9 the server did not have its core to itself,
    # or wrk was starved), the CPU cost of one request, and how busy each CPU was.
    server_cpu_seconds: float = 0.0
    server_cpu_share: float = 0.0
    cpu_us_per_request: float = 0.0
    server_cpu_busy: float = 0.0
    load_cpu_busy: float = 0.0

    @property
    def valid(self) -> bool:
        return not self.problems


def parse_wrk(output: str, side: str = "", round_: int = 0) -> WrkRun:
    """Requests/sec, the 50% and 99% latency lines, and everything that invalidates a run."""
    problems: list[str] = []

    def find(pattern: str) -> re.Match[str] | None:
        return re.search(pattern, output, re.MULTILINE)

    rps = find(r"^Requests/sec:\s+([\d.]+)")
    p50 = find(r"^\s+50%\s+(\S+)")
    p99 = find(r"^\s+99%\s+(\S+)")
    total = find(r"^\s+(\d+) requests in ")
    if not (rps and p50 and p99 and total):
        raise BenchError(f"cannot read wrk's output (was --latency given?):\n{output}")
    non_2xx_match = find(r"^\s+Non-2xx or 3xx responses:\s+(\d+)")
    non_2xx = int(non_2xx_match.group(1)) if non_2xx_match else 0
    errors_match = find(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
    socket_errors = dict(
        zip(
            ("connect", "read", "write", "timeout"),
            (int(n) for n in errors_match.groups()) if errors_match else (0, 0, 0, 0),
            strict=True,
        )
    )
    requests = int(total.group(1))
    if non_2xx:
        problems.append(f"{non_2xx} non-2xx/3xx responses")
    if any(socket_errors.values()):
        problems.append("socket errors " + ", ".join(f"{k} {v}" for k, v in socket_errors.items()))
    if requests == 0:
        problems.append("no request completed")
    return WrkRun(
        side=side,
        round=round_,
        requests_per_second=float(rps.group(1)),
        p50_ms=_ms(p50.group(1)),
        p99_ms=_ms(p99.group(1)),
        requests=requests,
        non_2xx=non_2xx,
        socket_errors=socket_errors,
        problems=problems,
    )


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc/PID/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_busy() -> dict[int, tuple[int, int]]:
    """(busy, total) jiffies per CPU since boot, from /proc/stat."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *values = line.split()
        if name.startswith("cpu") and name != "cpu":
            ticks = [int(v) for v in values]
            idle = ticks[3] + ticks[4]  # idle + iowait
            out[int(name[3:])] = (sum(ticks[:8]) - idle, sum(ticks[:8]))
    return out


def run_wrk(server: Server, target: str, seconds: int, side: str = "", round_: int = 0) -> WrkRun:
    """One wrk run against ``server``, with the CPU the server and both CPUs spent on it.

    The server's CPU time turns the run into a cost per request, which another
    engineer's job on the same core cannot inflate the way it deflates req/s.
    """
    command = [
        "taskset", "-c", str(LOAD_CPU), WRK,
        f"-t{WRK_THREADS}", f"-c{WRK_CONNECTIONS}", f"-d{seconds}s", "--latency",
        "-H", f"Authorization: Bearer {BENCH_KEY}",
        f"http://127.0.0.1:{server.port}{target}",
    ]  # fmt: skip
    cpu_before = process_cpu_seconds(server.pid)
    busy_before = cpu_busy()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    wall = time.perf_counter() - started
    cpu = process_cpu_seconds(server.pid) - cpu_before
    busy_after = cpu_busy()
    if done.returncode != 0:
        raise BenchError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    run = parse_wrk(done.stdout, side, round_)
    run.server_cpu_seconds = cpu
    run.server_cpu_share = cpu / wall
    run.cpu_us_per_request = cpu * 1e6 / run.requests if run.requests else 0.0
    for number, key in ((SERVER_CPU, "server_cpu_busy"), (LOAD_CPU, "load_cpu_busy")):
        busy = busy_after[number][0] - busy_before[number][0]
        total = busy_after[number][1] - busy_before[number][1]
        setattr(run, key, busy / total if total else 0.0)
    return run


# -- the sides and the comparisons ---------------------------------------------


@dataclass
class Side:
    """One server and one request, measured round after round."""

    id: str
    label: str
    target: str
    server: Server
    expect_body: Callable[[bytes], str | None] | None = None
    body_bytes: int = 0
    runs: list[WrkRun] = field(default_factory=list)
    memory_after: dict[str, float] = field(default_factory=dict)
    # bench/inprocess.py: mockstore's own CPU µs per request, one figure per round.
    inprocess_us: list[float] = field(default_factory=list)

    def median(self, attribute: str) -> float:
        return statistics.median(getattr(run, attribute) for run in self.runs)

    @property
    def valid(self) -> bool:
        return bool(self.runs) and all(run.valid for run in self.runs)


@dataclass(frozen=True)
class Comparison:
    """``numerator / denominator`` of median req/s, against a target ratio.

    ``instructions`` and ``instructions_text``: the target for the same ratio
    of instructions per request (``instructions.py``), where an issue set one.
    """

    id: str
    issue: str
    label: str
    numerator: str
    denominator: str
    target: float
    target_text: str
    strict: bool = False  # "cost under 10%": the ratio must be above, not at, the target
    instructions: float | None = None  # ratio of instructions: at least this
    instructions_text: str = ""


COMPARISONS = (
    Comparison(
        "floor", "#29", "mockstore / floor (raw ASGI, same bytes), `GET /v1/pets?limit=20`",
        "mockstore", "floor", 0.75, "≥ 75% of the floor by server CPU (#29)",
        instructions=0.75, instructions_text="≥ 75% of the floor (#29)",
    ),
    Comparison(
        "stack", "#2, #21", "mockstore / ceiling, `GET /v1/pets?limit=20`",
        "mockstore", "ceiling", 0.80, "≥ 80% of the ceiling (#21; #2: ≥ 60%)",
        instructions=0.85, instructions_text="≥ 85% of the ceiling (#21)",
    ),
    Comparison(
        "large_inventory", "#3",
        "large-inventory (100,000 pets) / default, `GET /v1/pets?limit=100&status=sold`",
        "large-sold", "default-sold", 0.80, "within 20% (≥ 80%)",
    ),
    Comparison(
        "faults_50", "#3, #21", "50 fault rules on listPets, none matching / no rules",
        "faults-50", "mockstore", 0.90, "costs < 10% (> 90%)", strict=True,
        instructions=0.97, instructions_text="costs ≤ 3% (≥ 97%, #21)",
    ),
    Comparison(
        "faults_50_other_ops", "#3", "50 fault rules on other operations / no rules",
        "faults-50-other-ops", "mockstore", 0.90, "costs < 10% (> 90%)", strict=True,
    ),
    Comparison(
        "journal", "#5, #21", "journal on (10,000 entries) / journal off",
        "mockstore", "journal-off", 0.85, "within 15% (≥ 85%)",
        instructions=0.97, instructions_text="≥ 97% (#21)",
    ),
)  # fmt: skip


def _is_list(status: str | None, most: int) -> Callable[[bytes], str | None]:
    """A check that a body is a JSON array of at most ``most`` pets, all of ``status``."""

    def check(body: bytes) -> str | None:
        try:
            pets = json.loads(body)
        except ValueError:
            return "the body is not JSON"
        if not isinstance(pets, list) or not pets or len(pets) > most:
            return f"expected a non-empty JSON array of at most {most} pets"
        if status and any(p.get("status") != status for p in pets):
            return f"a listed pet is not {status}"
        return None

    return check


def check_side(side: Side, reference_body: bytes | None) -> None:
    """Fail loudly unless the side answers the benchmarked request with 200 as intended."""
    server = side.server
    reply = get(server.port, side.target, BENCH_KEY)
    if reply.status != 200:
        raise server.fail(f"GET {side.target} with the bench key answered {reply.status}: "
                          f"{reply.body[:300]!r}")  # fmt: skip
    side.body_bytes = len(reply.body)
    if side.id in BENCH_APPS:
        return
    limit = reply.headers.get("x-ratelimit-limit")
    if limit != str(BENCH_PER_MINUTE):
        raise server.fail(
            f"X-RateLimit-Limit is {limit!r}, not the bench plan's {BENCH_PER_MINUTE}: "
            "the bench key is not on the never-limited plan"
        )
    if side.expect_body is not None and (problem := side.expect_body(reply.body)):
        raise server.fail(f"GET {side.target}: {problem}")
    if reference_body is not None and reply.body != reference_body:
        raise server.fail(
            f"GET {side.target} answers a different body than the reference side "
            f"({len(reply.body)} vs {len(reference_body)} bytes): not a like-for-like comparison"
        )


def check_floor(floor: Server, reference: Reply) -> None:
    """The floor must send mockstore's header names with values of the same lengths."""
    reply = get(floor.port, LIST_20, BENCH_KEY)

    def shape(headers: dict[str, str]) -> dict[str, int]:
        return {name: len(value) for name, value in headers.items()}

    # The request id and the remaining count grow a digit now and then: the lengths of
    # the names and values in all, within a few bytes, and the same names.
    if (
        set(reply.headers) != set(reference.headers)
        or abs(sum(shape(reply.headers).values()) - sum(shape(reference.headers).values())) > 4
    ):
        raise floor.fail(
            f"its headers {shape(reply.headers)} are not mockstore's {shape(reference.headers)}"
        )


# -- start-up and memory --------------------------------------------------------


@dataclass
class Launch:
    health_ms: float
    first_api_ms: float | None
    rss_mib: float | None


def launch_once(scenario: str, workdir: Path, key: str | None, measure_rss: bool) -> Launch:
    """Launch ``mockstore serve``; time the first health 200 and the first API 200."""
    server = mockstore_server("cold-start", scenario, workdir)
    server.start()
    try:
        health_at = None
        deadline = server.launched_at + 60
        while health_at is None:
            if time.perf_counter() > deadline:
                raise server.fail("no 200 on /__mockstore/health within 60 s")
            if not server.alive():
                raise server.fail("the server exited before it served")
            if raw_status(server.port, HEALTH) == 200:
                health_at = time.perf_counter()
            else:
                # Short enough not to blur the figure, long enough that the
                # poller (on the other CPU) is not a busy loop.
                time.sleep(0.002)
        first_api_ms = None
        if key is not None:
            status = raw_status(server.port, LIST_20, key)
            if status != 200:
                raise server.fail(f"the first GET {LIST_20} answered {status}, not 200")
            first_api_ms = (time.perf_counter() - server.launched_at) * 1000
        rss = None
        if measure_rss:
            # "Idle" after a few ordinary requests: what a test run's mock holds
            # while it waits between tests.
            for target in (LIST_20, "/v1/pets/1", "/v1/pets?limit=100&status=sold", HEALTH):
                reply = get(server.port, target, key)
                if reply.status != 200:
                    raise server.fail(f"GET {target} answered {reply.status}")
            time.sleep(0.5)
            rss = server.memory()["VmRSS"]
        return Launch((health_at - server.launched_at) * 1000, first_api_ms, rss)
    finally:
        server.stop()


def measure_startup(launches: int, workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    bundled_large = (ROOT / "scenarios" / "large-inventory.yaml").is_file()
    large = "large-inventory" if bundled_large else str(SCENARIOS / "large-inventory.yaml")
    # One launch first, not counted, so the figures do not include a cold disk cache.
    launch_once("default", workdir, DEFAULT_KEY, measure_rss=False)
    default_runs = []
    for index in range(launches):
        default_runs.append(launch_once("default", workdir, DEFAULT_KEY, measure_rss=True))
        log(f"  cold start {index + 1}/{launches}: {default_runs[-1].health_ms:.0f} ms")
    large_runs = []
    for index in range(max(3, launches // 2)):
        large_runs.append(launch_once(large, workdir, DEFAULT_KEY, measure_rss=index == 0))
        log(f"  large-inventory load {index + 1}: {large_runs[-1].health_ms:.0f} ms")
    return {
        "large_inventory_scenario": large if bundled_large else str(Path(large).relative_to(ROOT)),
        "default": [asdict(r) for r in default_runs],
        "large_inventory": [asdict(r) for r in large_runs],
        "cold_start_health_ms": statistics.median(r.health_ms for r in default_runs),
        "cold_start_first_api_ms": statistics.median(
            r.first_api_ms for r in default_runs if r.first_api_ms is not None
        ),
        "idle_rss_mib": statistics.median(r.rss_mib for r in default_runs if r.rss_mib),
        "large_inventory_load_ms": statistics.median(r.health_ms for r in large_runs),
        "large_inventory_rss_mib": large_runs[0].rss_mib,
    }


# -- the run --------------------------------------------------------------------


def preflight() -> None:
    problems = []
    if shutil.which("taskset") is None:
        problems.append("taskset is missing (util-linux)")
    if not (Path(WRK).exists() or shutil.which(WRK)):
        problems.append("wrk is missing (apt-get install wrk)")
    if {SERVER_CPU, LOAD_CPU} - os.sched_getaffinity(0):
        problems.append(f"CPUs {SERVER_CPU} and {LOAD_CPU} must both be available")
    for module in ("mockstore", "starlette", "uvicorn", "uvloop", "httptools"):
        try:
            __import__(module)
        except ImportError:
            problems.append(f"{module} is not importable by {PYTHON} (use .venv/bin/python)")
    if problems:
        raise BenchError("cannot run the bench:\n  " + "\n  ".join(problems))


def environment() -> dict[str, Any]:
    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    wrk_help = subprocess.run([WRK, "-v"], capture_output=True, text=True)
    wrk_version = wrk_help.stdout or wrk_help.stderr
    # --no-optional-locks: a read that never writes the index or takes its lock,
    # so the bench cannot disturb anyone committing in the same checkout.
    status = git("--no-optional-locks", "status", "--porcelain", "--untracked-files=no")
    return {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "packages": {
            n: version(n) for n in ("mockstore", "starlette", "uvicorn", "uvloop", "httptools")
        },
        "wrk": wrk_version.splitlines()[0] if wrk_version else None,
        "commit": git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(status) if status is not None else None,
        "loadavg_before": os.getloadavg(),
    }


@contextlib.contextmanager
def servers_running(servers: Sequence[Server]) -> Iterator[None]:
    try:
        for server in servers:
            server.start()
        yield
    finally:
        for server in servers:
            server.stop()


def measure_throughput(
    seconds: int, rounds: int, warmup: int, workdir: Path, log: Callable[[str], None]
) -> list[Side]:
    def scenario(name: str) -> str:
        return str(SCENARIOS / f"{name}.yaml")

    baseline = mockstore_server("mockstore", scenario("baseline"), workdir)
    mockstore_servers = {
        "mockstore": baseline,
        "journal-off": mockstore_server("journal-off", scenario("journal-off"), workdir),
        "faults-50": mockstore_server("faults-50", scenario("faults-50"), workdir),
        "faults-50-other-ops": mockstore_server(
            "faults-50-other-ops", scenario("faults-50-other-ops"), workdir
        ),
        "large-inventory": mockstore_server(
            "large-inventory", scenario("large-inventory"), workdir
        ),
    }
    with servers_running(list(mockstore_servers.values())):
        for server in mockstore_servers.values():
            wait_until_serving(server, HEALTH)
        reference = get(baseline.port, LIST_20, BENCH_KEY)
        if reference.status != 200:
            raise baseline.fail(f"GET {LIST_20} with the bench key answered {reference.status}")
        ceiling = ceiling_server(len(reference.body), workdir)
        floor = bench_app_server("floor", len(reference.body), workdir)
        with servers_running([ceiling, floor]):
            wait_until_serving(ceiling, "/v1/pets")
            wait_until_serving(floor, "/v1/pets")
            check_floor(floor, reference)
            sides = [
                Side("floor", f"floor: raw ASGI, mockstore's headers, {len(reference.body)}-byte "
                     "body", LIST_20, floor),
                Side("ceiling", f"ceiling: bare Starlette, {len(reference.body)}-byte body",
                     LIST_20, ceiling),
                Side("mockstore", "mockstore, bench/scenarios/baseline.yaml", LIST_20, baseline,
                     _is_list(None, 20)),
                Side("journal-off", "mockstore, journal off", LIST_20,
                     mockstore_servers["journal-off"], _is_list(None, 20)),
                Side("faults-50", "mockstore, 50 non-matching rules on listPets", LIST_20,
                     mockstore_servers["faults-50"], _is_list(None, 20)),
                Side("faults-50-other-ops", "mockstore, 50 rules on other operations", LIST_20,
                     mockstore_servers["faults-50-other-ops"], _is_list(None, 20)),
                Side("default-sold", "mockstore, default pets (20)", LIST_SOLD, baseline,
                     _is_list("sold", 100)),
                Side("large-sold", "mockstore, large-inventory (100,000 pets)", LIST_SOLD,
                     mockstore_servers["large-inventory"], _is_list("sold", 100)),
            ]  # fmt: skip
            for side in sides:
                same_as_baseline = side.target == LIST_20 and side.id not in BENCH_APPS
                check_side(side, reference.body if same_as_baseline else None)
                if side.id in BENCH_APPS and side.body_bytes != len(reference.body):
                    raise side.server.fail(
                        f"serves {side.body_bytes} bytes, not {len(reference.body)}"
                    )
            log(f"warming up each side ({warmup} s)")
            for side in sides:
                warm = run_wrk(side.server, side.target, warmup, side.id)
                if not warm.valid:
                    raise side.server.fail(f"warm-up run invalid: {'; '.join(warm.problems)}")
            for round_ in range(rounds):
                # Rotate the order each round, so no side always follows the same one.
                shift = round_ % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    run = run_wrk(side.server, side.target, seconds, side.id, round_ + 1)
                    side.runs.append(run)
                    flag = "" if run.valid else "  INVALID: " + "; ".join(run.problems)
                    rps = run.requests_per_second
                    log(
                        f"  round {round_ + 1} {side.id:<20} {rps:>9.0f} req/s  "
                        f"p50 {run.p50_ms:.2f} ms  p99 {run.p99_ms:.2f} ms  "
                        f"{run.cpu_us_per_request:.0f} us CPU/req  "
                        f"server CPU {run.server_cpu_share:.0%}{flag}"
                    )
            for side in sides:
                if not side.server.alive():
                    raise side.server.fail("died during the run")
                side.memory_after = side.server.memory()
            return sides


def measure_inprocess(
    sides: Sequence[Side], rounds: int, requests: int, log: Callable[[str], None]
) -> None:
    """bench/inprocess.py for each mockstore side, interleaved like the wrk rounds."""
    measured = [side for side in sides if side.server.scenario is not None]
    for round_ in range(rounds):
        shift = round_ % len(measured)
        for side in measured[shift:] + measured[:shift]:
            command = [
                "taskset", "-c", str(SERVER_CPU), PYTHON, str(BENCH / "inprocess.py"),
                str(side.server.scenario), side.target,
                "--requests", str(requests), "--repeats", "1",
            ]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
            if done.returncode != 0:
                raise BenchError(f"bench/inprocess.py failed on {side.id}:\n{done.stderr}")
            figure = json.loads(done.stdout)["cpu_us_per_request"][0]
            side.inprocess_us.append(figure)
            log(f"  round {round_ + 1} {side.id:<20} {figure:6.1f} us CPU/req in process")


def compare(sides: dict[str, Side], comparison: Comparison) -> dict[str, Any]:
    top, bottom = sides[comparison.numerator], sides[comparison.denominator]
    ratio = top.median("requests_per_second") / bottom.median("requests_per_second")
    # The same comparison from CPU cost per request: how many of the numerator's
    # requests fit in the CPU time of one of the denominator's. It barely moves
    # when another process takes part of the core, so when it disagrees with the
    # req/s ratio the machine was busy and the run should be repeated.
    cpu_ratio = bottom.median("cpu_us_per_request") / top.median("cpu_us_per_request")
    by_round = {run.round: run.requests_per_second for run in bottom.runs}
    per_round = [
        run.requests_per_second / by_round[run.round] for run in top.runs if run.round in by_round
    ]
    valid = top.valid and bottom.valid
    contended = [
        f"{run.side} round {run.round}"
        for run in top.runs + bottom.runs
        if run.server_cpu_share < CONTENDED_SHARE
    ]
    met = ratio > comparison.target if comparison.strict else ratio >= comparison.target
    verdict = ("met" if met else "MISSED") if valid else "INVALID (non-2xx or socket errors)"
    if valid and contended:
        verdict += " (noisy)"
    # What the feature adds in mockstore's own code, in CPU µs per request, and
    # the full-server ratio that this extra cost alone would predict.
    added_us = predicted = None
    if top.inprocess_us and bottom.inprocess_us:
        added_us = statistics.median(top.inprocess_us) - statistics.median(bottom.inprocess_us)
        server_us = bottom.median("cpu_us_per_request")
        predicted = server_us / (server_us + added_us) if server_us + added_us > 0 else None
    return {
        "id": comparison.id,
        "issue": comparison.issue,
        "label": comparison.label,
        "numerator": comparison.numerator,
        "denominator": comparison.denominator,
        "ratio": ratio,
        "per_round_ratios": per_round,
        "cpu_cost_ratio": cpu_ratio,
        "inprocess_added_us": added_us,
        "inprocess_predicted_ratio": predicted,
        "target": comparison.target,
        "target_text": comparison.target_text,
        "valid": valid,
        "contended_runs": contended,
        "verdict": verdict,
    }


def startup_checks(startup: dict[str, Any], full_journal_rss: float) -> list[dict[str, Any]]:
    """Each start-up and memory figure against its issue's target (MB read as MiB)."""
    rows = [
        ("#2", "cold start, launch → first 200 on /__mockstore/health (median of N)",
         startup["cold_start_health_ms"], "ms", 500, "< 500 ms"),
        ("#4", "cold start, launch → first 200 on /__mockstore/health (median of N)",
         startup["cold_start_health_ms"], "ms", 1000, "< 1 s"),
        ("#2", "launch → first 200 on `GET /v1/pets?limit=20`",
         startup["cold_start_first_api_ms"], "ms", 500, "< 500 ms"),
        ("#3", "large-inventory load, launch → first 200 on health",
         startup["large_inventory_load_ms"], "ms", 2000, "< 2 s"),
        ("#2", "idle RSS, default, after a few requests",
         startup["idle_rss_mib"], "MiB", 60, "< 60 MB"),
        ("#4", "idle RSS, default, after a few requests",
         startup["idle_rss_mib"], "MiB", 80, "< 80 MB"),
        # The journal keeps 10,000 exchanges by default, so a server that has
        # served a test run holds more than a fresh one: the same target, shown
        # for the state a CI job's mock is really in at the end of its run.
        ("#2", "RSS, default pets, journal full (10,000 entries), after the wrk runs",
         full_journal_rss, "MiB", 60, "< 60 MB"),
    ]  # fmt: skip
    return [
        {
            "issue": issue,
            "label": label,
            "value": value,
            "unit": unit,
            "limit": limit,
            "target_text": text,
            "verdict": "met" if value < limit else "MISSED",
        }
        for issue, label, value, unit, limit, text in rows
    ]


def _maybe(value: float | None, template: str) -> str:
    return "—" if value is None else template.format(value)


def _inprocess_cell(comparison: dict[str, Any]) -> str:
    added, predicted = comparison["inprocess_added_us"], comparison["inprocess_predicted_ratio"]
    if added is None:
        return "—"
    return f"{added:+.1f} µs → {_maybe(predicted, '{:.0%}')}"


def markdown(result: dict[str, Any]) -> str:
    env, cfg = result["environment"], result["config"]
    lines = []
    if cfg["quick"]:
        lines += [
            "> **Smoke run (`--quick`)**: short runs, one round. Not figures for the README.",
            "",
        ]
    lines += [
        f"Measured {env['time']} on {env['cpus']} x {env['cpu']}, Python {env['python']}, "
        f"uvicorn {env['packages']['uvicorn']}, starlette {env['packages']['starlette']}, "
        f"commit {env['commit']}{' + uncommitted changes' if env['uncommitted_changes'] else ''}; "
        f"load average before/after: {env['loadavg_before'][0]:.2f} / "
        f"{env['loadavg_after'][0]:.2f}.",
        "",
        f"Throughput: `taskset -c {LOAD_CPU} wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} "
        f"-d{cfg['seconds']}s --latency`, servers on CPU {SERVER_CPU}; "
        f"median of {cfg['rounds']} interleaved round(s) after a {cfg['warmup']} s warm-up; "
        "valid key on a plan that is never limited.",
        "",
        "| Side | Request | Body | req/s (median) | p50 | p99 | req/s per run "
        "| server CPU µs/req | server CPU share | in-process µs/req |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for side in result["sides"]:
        runs = ", ".join(f"{r['requests_per_second']:,.0f}" for r in side["runs"])
        bad = "" if side["valid"] else " ⚠ INVALID"
        lines.append(
            f"| {side['label']}{bad} | `{side['target']}` | {side['body_bytes']} B | "
            f"{side['rps']:,.0f} | {side['p50_ms']:.2f} ms | {side['p99_ms']:.2f} ms | {runs} | "
            f"{side['cpu_us_per_request']:.0f} | {side['server_cpu_share']:.0%} | "
            f"{_maybe(side['inprocess_us_median'], '{:.1f}')} |"
        )
    lines += [
        "",
        "| Ratio (of median req/s) | Issue | Value | Per round | By server CPU cost "
        "| In-process: added µs/req → predicted | Target | Verdict |",
        "|---|---|---:|---|---:|---|---|---|",
    ]
    for c in result["comparisons"]:
        per_round = ", ".join(f"{r:.0%}" for r in c["per_round_ratios"])
        lines.append(
            f"| {c['label']} | {c['issue']} | {c['ratio']:.0%} | {per_round} | "
            f"{c['cpu_cost_ratio']:.0%} | "
            f"{_inprocess_cell(c)} | "
            f"{c['target_text']} | {c['verdict']} |"
        )
    startup = result["startup"]
    lines += [
        "",
        f"Start-up: median of {cfg['launches']} launches of `python -m mockstore serve` "
        f"(default; {len(startup['large_inventory'])} for large-inventory, "
        f"`{startup['large_inventory_scenario']}`).",
        "",
        "| Measurement | Issue | Value | Target | Verdict |",
        "|---|---|---:|---|---|",
    ]
    for check in result["startup_checks"]:
        value = (
            f"{check['value']:.0f} {check['unit']}"
            if check["unit"] == "ms"
            else (f"{check['value']:.1f} {check['unit']}")
        )
        lines.append(
            f"| {check['label']} | {check['issue']} | {value} | {check['target_text']} | "
            f"{check['verdict']} |"
        )
    memory = ", ".join(
        f"{s['id']} {s['memory_after'].get('VmRSS', 0):.0f}" for s in result["sides"]
    )
    lines += ["", f"RSS after the throughput runs (MiB; journals full): {memory}."]
    if startup.get("large_inventory_rss_mib"):
        lines.append(
            f"RSS of large-inventory after a few requests: "
            f"{startup['large_inventory_rss_mib']:.0f} MiB."
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Benchmark mockstore against references in the same run.",
        epilog="Full run: about 6 minutes. Run it on a quiet machine; see bench/README.md.",
    )
    parser.add_argument("--quick", action="store_true", help="smoke check: -d3s, one round")
    parser.add_argument("--seconds", type=int, help="wrk duration per run (default 10; quick 3)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3; quick 1)")
    parser.add_argument("--launches", type=int, help="cold-start launches (default 10; quick 5)")
    parser.add_argument(
        "--output", type=Path, default=RESULTS / "latest.json", help="where the JSON goes"
    )
    args = parser.parse_args(argv)
    seconds = args.seconds or (3 if args.quick else 10)
    rounds = args.rounds or (1 if args.quick else 3)
    launches = args.launches or (5 if args.quick else 10)
    warmup = 1 if args.quick else 3
    inprocess_rounds = 1 if args.quick else 5
    inprocess_requests = 10_000 if args.quick else 20_000

    signal.signal(signal.SIGTERM, _exit_on_signal)
    signal.signal(signal.SIGHUP, _exit_on_signal)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        preflight()
        # The runner (and the cold-start poller) stays off the servers' CPU.
        os.sched_setaffinity(0, {LOAD_CPU})
        env = environment()
        with tempfile.TemporaryDirectory(prefix="mockstore-bench-") as tmp:
            workdir = Path(tmp)
            log(f"start-up and memory ({launches} launches)")
            startup = measure_startup(launches, workdir, log)
            log(f"throughput ({rounds} round(s) of {seconds} s per side)")
            sides = measure_throughput(seconds, rounds, warmup, workdir, log)
            log(f"mockstore's own cost in process ({inprocess_rounds} round(s))")
            measure_inprocess(sides, inprocess_rounds, inprocess_requests, log)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    finally:
        _stop_all()
    env["loadavg_after"] = os.getloadavg()
    by_id = {side.id: side for side in sides}
    result: dict[str, Any] = {
        "environment": env,
        "config": {
            "quick": args.quick,
            "seconds": seconds,
            "rounds": rounds,
            "warmup": warmup,
            "launches": launches,
            "inprocess_rounds": inprocess_rounds,
            "inprocess_requests": inprocess_requests,
            "wrk": f"-t{WRK_THREADS} -c{WRK_CONNECTIONS} -d{seconds}s --latency",
            "server_cpu": SERVER_CPU,
            "load_cpu": LOAD_CPU,
        },
        "sides": [
            {
                "id": side.id,
                "label": side.label,
                "target": side.target,
                "body_bytes": side.body_bytes,
                "rps": side.median("requests_per_second"),
                "p50_ms": side.median("p50_ms"),
                "p99_ms": side.median("p99_ms"),
                "cpu_us_per_request": side.median("cpu_us_per_request"),
                "server_cpu_share": side.median("server_cpu_share"),
                "inprocess_us": side.inprocess_us,
                "inprocess_us_median": statistics.median(side.inprocess_us)
                if side.inprocess_us
                else None,
                "valid": side.valid,
                "memory_after": side.memory_after,
                "runs": [{**asdict(run), "valid": run.valid} for run in side.runs],
            }
            for side in sides
        ],
        "comparisons": [compare(by_id, c) for c in COMPARISONS],
        "startup": startup,
        "startup_checks": startup_checks(startup, by_id["mockstore"].memory_after["VmRSS"]),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    log(f"raw figures: {args.output}")
    invalid = [s["id"] for s in result["sides"] if not s["valid"]]
    if invalid:
        log(f"INVALID runs (non-2xx or socket errors) on: {', '.join(invalid)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
