"""Issue 19's findings, one attack each, with the server's peak memory.

    .venv/bin/python bench/findings.py [--only 1,2,5] [--budget 256MiB]
    PYTHONPATH=/work/main .venv/bin/python bench/findings.py   # another tree (main's)

Each finding runs against its own ``mockstore serve`` (a subprocess, its
defaults unless said) and prints one line: the peak resident memory (VmHWM,
which the kernel keeps, so no sample is missed), what the attack saw, and for
the memory findings the budget the server ran with. ``--budget`` passes
``--memory-budget`` to servers that know it (a tree without the option runs
without it). The attacks are ``tests/attacks.py``; the tests assert what this
prints, with generous margins.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests import attacks  # noqa: E402
from tests.attacks import PUBLIC, big_journal, mib, peak_rss, rss  # noqa: E402
from tests.support import live_server  # noqa: E402


def _serve_args(budget: str | None, *extra: str) -> list[str]:
    help_text = subprocess.run(
        [sys.executable, "-m", "mockstore", "serve", "--help"], capture_output=True, text=True
    ).stdout
    args = list(extra)
    if budget and "--memory-budget" in help_text:
        args += ["--memory-budget", budget]
    return args


def finding_1(budget: str | None) -> str:
    with live_server(*_serve_args(budget)) as server:
        assert server.process is not None
        seen = attacks.pipeline_flood(server.url, seconds=16)
        journal = httpx.get(server.url + "/__mockstore/requests?since=999999999", timeout=60)
        reported = journal.json().get("bytes", 0)
        return (
            f"pipelined 100 KiB heads, 16 s, no key: peak {mib(peak_rss(server.process.pid))}, "
            f"journal reports {mib(reported)}; second answers {dict(seen)}"
        )


def finding_2(budget: str | None) -> str:
    env = {"MOCKSTORE_SCENARIO_YAML": big_journal()}
    lines = []
    with live_server(*_serve_args(budget), env=env) as server:
        assert server.process is not None
        created = Counter(attacks.create_big_pets(server.api, 16))
        with attacks.slow_readers(server.url, 30) as sockets:
            end = time.monotonic() + 42
            held = 0
            while time.monotonic() < end:
                held = max(held, rss(server.process.pid))
                time.sleep(1)
            closed = sum(attacks.closed_by_server(sock) for sock in sockets)
        lines.append(
            f"30 readers of 16.6 MB that never read, 42 s: peak {mib(peak_rss(server.process.pid))}"
            f" (RSS {mib(held)} at most while held; creates {dict(created)}; "
            f"{closed} of 30 closed by the server)"
        )
    with live_server(*_serve_args(budget, "--max-connections", "10"), env=env) as server:
        attacks.create_big_pets(server.api, 16)
        with attacks.slow_readers(server.url, 10):
            time.sleep(2)
            statuses = Counter()
            for _ in range(5):
                try:
                    answer = httpx.get(server.api + "/pets/1", headers=PUBLIC, timeout=30)
                    statuses[answer.status_code] += 1
                except httpx.HTTPError as exc:
                    statuses[type(exc).__name__] += 1
        lines.append(
            f"--max-connections 10 with 10 slow readers: another client gets {dict(statuses)}"
        )
    return "\n  ".join(lines)


def finding_3(budget: str | None) -> str:
    lines = []
    with live_server(
        *_serve_args(budget), env={"MOCKSTORE_SCENARIO_YAML": big_journal()}
    ) as server:
        assert server.process is not None
        seen: Counter[int] = Counter()
        for index in range(32):
            seen.update(attacks.fill_tenant(server.url, f"t{index}", 32))
        lines.append(
            f"32 tenants, each store and journal filled: peak {mib(peak_rss(server.process.pid))}; "
            f"answers {dict(seen)}"
        )
    env = {"MOCKSTORE_SCENARIO_YAML": big_journal("per_key")}
    with live_server(*_serve_args(budget), env=env) as server:
        assert server.process is not None
        seen = Counter()
        for key in attacks.issue_keys(server.url, 12):
            seen.update(attacks.create_big_pets(server.api, 32, {"Authorization": f"Bearer {key}"}))
        lines.append(
            f"per_key, 12 keys each filling its store: peak {mib(peak_rss(server.process.pid))}; "
            f"answers {dict(seen)}"
        )
    return "\n  ".join(lines)


def finding_4(budget: str | None) -> str:
    with live_server(
        *_serve_args(budget), env={"MOCKSTORE_SCENARIO_YAML": big_journal()}
    ) as server:
        assert server.process is not None
        pid = server.process.pid
        for index in range(8):
            attacks.fill_tenant(server.url, f"a{index}", 32)
        filled = rss(pid)
        for index in range(8):
            httpx.delete(f"{server.url}/__mockstore/tenants/a{index}", timeout=30)
        time.sleep(1)
        deleted = rss(pid)
        for index in range(8):
            attacks.fill_tenant(server.url, f"b{index}", 32)
        refilled = rss(pid)
        return (
            f"8 tenants filled {mib(filled)}, deleted {mib(deleted)}, 8 more filled "
            f"{mib(refilled)}; peak {mib(peak_rss(pid))}"
        )


def _child_peak(command: list[str], timeout: float = 600) -> tuple[int, float, str]:
    """Run ``command`` in a fresh interpreter; its peak RSS, seconds and last output line."""
    script = (
        "import resource, subprocess, sys, time\n"
        "t = time.monotonic()\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "took = time.monotonic() - t\n"
        "out = (done.stdout + done.stderr).strip().splitlines()\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, took, done.returncode,"
        " (out[-1] if out else '')[:160])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *command], capture_output=True, text=True, timeout=timeout
    )
    kib, took, code, *last = done.stdout.split(" ", 3)
    return int(kib) * 1024, float(took), f"exit {code}: {last[0].strip() if last else ''}"


def finding_5(budget: str | None) -> str:
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        bomb = Path(tmp, "bomb.yaml")
        bomb.write_text(attacks.alias_bomb())
        peak, took, said = _child_peak([sys.executable, "-m", "mockstore", "validate", str(bomb)])
        lines.append(
            f"validate, {bomb.stat().st_size}-byte alias bomb: peak {mib(peak)} "
            f"in {took:.1f} s ({said})"
        )
        huge = Path(tmp, "huge.yaml")
        with huge.open("w") as out:
            out.write("version: 1\ndescription: |\n")
            line = "  " + "z" * 1000 + "\n"
            for _ in range(200_000):
                out.write(line)
        peak, took, said = _child_peak([sys.executable, "-m", "mockstore", "validate", str(huge)])
        lines.append(
            f"validate, {huge.stat().st_size // 10**6} MB file: peak {mib(peak)} "
            f"in {took:.1f} s ({said})"
        )
        with live_server(*_serve_args(budget)) as server:
            assert server.process is not None
            before = rss(server.process.pid)
            answer = httpx.put(
                server.url + "/__mockstore/scenario", content=bomb.read_bytes(), timeout=600
            )
            lines.append(
                f"PUT of the bomb: {answer.status_code}; peak {mib(peak_rss(server.process.pid))}, "
                f"RSS {mib(before)} before, {mib(rss(server.process.pid))} after"
            )
        with live_server(*_serve_args(budget)) as server:
            assert server.process is not None
            control = server.url + "/__mockstore"
            for index in range(6):
                httpx.post(control + "/tenants", json={"id": f"s{index}"}, timeout=30)
            latencies: list[float] = []
            stop = threading.Event()

            def poll() -> None:
                with httpx.Client(timeout=600) as client:
                    while not stop.is_set():
                        sent = time.monotonic()
                        client.get(control + "/health")
                        latencies.append(time.monotonic() - sent)

            statuses: Counter[int] = Counter()

            def put(index: int) -> None:
                answer = httpx.put(
                    f"{control}/tenants/s{index}/__mockstore/scenario",
                    content=bomb.read_bytes(),
                    timeout=600,
                )
                statuses[answer.status_code] += 1

            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            puts = [threading.Thread(target=put, args=(i,)) for i in range(6)]
            for thread in puts:
                thread.start()
            for thread in puts:
                thread.join(600)
            stop.set()
            poller.join(600)
            lines.append(
                f"6 concurrent PUTs of the bomb to 6 tenants: {dict(statuses)}; peak "
                f"{mib(peak_rss(server.process.pid))}; /health worst {max(latencies) * 1000:.0f} ms"
            )
        watched = Path(tmp, "watched.yaml")
        watched.write_text("version: 1\nname: watched\n")
        with live_server(
            *_serve_args(budget), "--scenario", str(watched), "--watch", "--log-level", "info"
        ) as server:
            assert server.process is not None
            time.sleep(1)
            before = peak_rss(server.process.pid)
            with watched.open("w") as out:
                out.write("version: 1\ndescription: |\n")
                line = "  " + "w" * 1000 + "\n"
                for _ in range(100_000):
                    out.write(line)
            end = time.monotonic() + 60
            while time.monotonic() < end and "100" not in server.log()[-2000:]:
                time.sleep(0.5)
            time.sleep(3)
            lines.append(
                f"--watch, the file replaced by 100 MB: peak {mib(peak_rss(server.process.pid))} "
                f"(was {mib(before)}); log: {server.output[-1][:140] if server.output else ''}"
            )
    return "\n  ".join(lines)


def finding_6(budget: str | None) -> str:
    with live_server(*_serve_args(budget)) as server:
        control = server.url + "/__mockstore"
        moved = httpx.post(control + "/clock", json={"set": "9999-12-31T23:59:59Z"}, timeout=30)
        time.sleep(1.5)
        statuses = {
            "health": httpx.get(control + "/health", timeout=30).status_code,
            "clock": httpx.get(control + "/clock", timeout=30).status_code,
            "api": httpx.get(
                server.api + "/pets", headers={"Authorization": "Bearer pro-key"}, timeout=30
            ).status_code,
        }
        httpx.post(control + "/reset", headers={"X-Mockstore-Client": "bench"}, timeout=30)
        statuses["har after reset"] = httpx.get(control + "/requests.har", timeout=30).status_code
    with tempfile.TemporaryDirectory() as tmp:
        late = Path(tmp, "late.yaml")
        late.write_text("version: 1\nclock: {start: '9999-12-31T23:59:58Z'}\n")
        done = subprocess.run(
            [sys.executable, "-m", "mockstore", "validate", str(late)],
            capture_output=True,
            text=True,
        )
    return (
        f"clock set to 9999-12-31T23:59:59Z: {moved.status_code}; a second later {statuses}; "
        f"validate of a scenario starting 9999-12-31T23:59:58Z: exit {done.returncode}"
    )


def finding_7(budget: str | None) -> str:
    """drift and replay on HARs claiming a 1 GiB and a 10**13-byte body, and a deep one."""
    from starlette.testclient import TestClient

    from mockstore.app import create_app

    scenario = "version: 1\nkeys: [{key: pro-key, plan: pro}]\nbehaviour: {max_body_bytes: 64}\n"
    with TestClient(create_app(scenario), base_url="http://127.0.0.1") as client:
        client.post(
            "/v1/pets",
            content=b'{"name": "' + b"n" * 100 + b'", "categoryId": 1}',
            headers={"Authorization": "Bearer pro-key", "Content-Type": "application/json"},
        )
        har = client.get("/__mockstore/requests.har", params={"mask": "false"}).json()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (2**30, 10**13):
            claimed = json.loads(json.dumps(har))
            entry = claimed["log"]["entries"][0]
            headers = [h for h in entry["request"]["headers"] if h["name"] != "content-length"]
            entry["request"]["headers"] = [*headers, {"name": "Content-Length", "value": str(size)}]
            entry["_mockstore"]["request_truncated"] = True
            path = Path(tmp, f"claims-{size}.har")
            path.write_text(json.dumps(claimed))
            peak, _, said = _child_peak(
                [sys.executable, "-m", "mockstore", "drift", str(path), "--scenario", "default"]
            )
            lines.append(f"drift, a body claiming {size:,} bytes: peak {mib(peak)} ({said[:90]})")
        deep = Path(tmp, "deep.har")
        deep.write_text('{"log": {"entries": ' + "[" * 100_000 + "]" * 100_000 + "}}")
        peak, _, said = _child_peak([sys.executable, "-m", "mockstore", "replay", str(deep)])
        lines.append(f"replay, 100,000 levels deep: peak {mib(peak)} ({said[:90]})")
    return "\n  ".join(lines)


def finding_10(budget: str | None) -> str:
    with live_server(*_serve_args(budget, "--control-token", "s3cret")) as server:
        unknown = httpx.get(
            server.url + "/__mockstore/tenants/nobody/__mockstore/health", timeout=30
        )
        evil_host = httpx.get(
            server.url + "/__mockstore/tenants/nobody/__mockstore/requests",
            headers={"Host": "evil.example"},
            timeout=30,
        )
    return (
        f"unknown tenant without the token: {unknown.status_code} {unknown.json().get('code')}; "
        f"with Host evil.example: {evil_host.status_code} {evil_host.json().get('code')}"
    )


FINDINGS: dict[int, Callable[[str | None], str]] = {
    1: finding_1,
    2: finding_2,
    3: finding_3,
    4: finding_4,
    5: finding_5,
    6: finding_6,
    7: finding_7,
    10: finding_10,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated finding numbers")
    parser.add_argument("--budget", default=None, help="--memory-budget for the servers")
    args = parser.parse_args()
    chosen = [int(n) for n in args.only.split(",") if n] or list(FINDINGS)
    import mockstore

    print(
        f"mockstore from {Path(mockstore.__file__).parent}; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    for number in chosen:
        started = time.monotonic()
        print(
            f"{number}. {FINDINGS[number](args.budget)}  [{time.monotonic() - started:.0f} s]",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
