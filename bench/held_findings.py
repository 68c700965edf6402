"""Issue 27's findings 1 and 5, one attack each, with the server's (or command's) peak memory.

    .venv/bin/python bench/held_findings.py [--only pipelining,readers,verify,hars]
    PYTHONPATH=/work/main .venv/bin/python bench/held_findings.py   # another tree (main's)

Each case runs against its own ``mockstore serve`` (a subprocess; the
``--memory-budget`` a case names, else the default 256 MiB) and prints one
line: the peak resident memory (VmHWM, kept by the kernel, so no sample is
missed), the worst wait of a normal client polling meanwhile, and what the
attack saw. The HAR cases run ``mockstore replay`` and read its peak from
``getrusage``. The attacks are ``tests/held_attacks.py`` and
``tests/attacks.py``; the tests assert what this prints with generous margins,
never the waits.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.attacks import (  # noqa: E402
    PUBLIC,
    big_journal,
    create_big_pets,
    mib,
    peak_rss,
    slow_readers,
)
from tests.held_attacks import pipelining_clients  # noqa: E402
from tests.hostile_mix import SCENARIO  # noqa: E402
from tests.support import live_server  # noqa: E402


@contextmanager
def _normal_client(url: str, path: str, headers: dict[str, str]) -> Iterator[dict]:
    """A client polling ``path`` every 100 ms meanwhile: its worst wait and answers."""
    seen: dict = {"worst": 0.0, "statuses": Counter()}
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                sent = time.monotonic()
                try:
                    seen["statuses"][client.get(url + path, headers=headers).status_code] += 1
                except httpx.HTTPError as exc:
                    seen["statuses"][type(exc).__name__] += 1
                seen["worst"] = max(seen["worst"], time.monotonic() - sent)
                stop.wait(0.1)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(120)


def _args(budget: str | None) -> list[str]:
    return ["--memory-budget", budget] if budget else []


def pipelining() -> list[str]:
    lines = []
    for connections in (1, 4, 8, 64):
        with live_server(env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as server:
            assert server.process is not None
            with (
                _normal_client(server.api, "/pets/1", {"Authorization": "Bearer free-key"}) as seen,
                pipelining_clients(server.url, "soak-key", connections, 15.0),
            ):
                pass
            used = httpx.get(server.url + "/__mockstore/memory", timeout=60).json().get("used")
            lines.append(
                f"pipelining, {connections} connection(s) writing small requests for 15 s and "
                f"reading nothing: peak {mib(peak_rss(server.process.pid))}; /memory says "
                f"{mib(used or 0)} used; normal client worst {seen['worst'] * 1000:.0f} ms "
                f"{dict(seen['statuses'])}"
            )
    return lines


def readers() -> list[str]:
    lines = []
    for budget in (None, "128MiB"):
        for target in ("/v1/pets?limit=100", "/__mockstore/requests.har", "/__mockstore/requests"):
            env = {"MOCKSTORE_SCENARIO_YAML": big_journal()}
            with live_server(*_args(budget), env=env) as server:
                assert server.process is not None
                created = Counter(create_big_pets(server.api, 16))
                with (
                    _normal_client(server.api, "/pets/1", PUBLIC) as seen,
                    slow_readers(server.url, 100, target=target),
                ):
                    time.sleep(8)
                    late = httpx.get(server.url + target, headers=PUBLIC, timeout=120)
                lines.append(
                    f"100 readers of {target} that never read (budget {budget or '256MiB'}, "
                    f"creates {dict(created)}): peak {mib(peak_rss(server.process.pid))}; one "
                    f"more asking: {late.status_code}; normal client worst "
                    f"{seen['worst'] * 1000:.0f} ms {dict(seen['statuses'])}"
                )
    return lines


def verify() -> list[str]:
    lines = []
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": big_journal()}) as server:
        assert server.process is not None
        create_big_pets(server.api, 40)
        for calls in (1, 8):
            times: list[float] = []
            statuses: Counter = Counter()

            def one(times: list[float] = times, statuses: Counter = statuses) -> None:
                sent = time.monotonic()
                answer = httpx.post(
                    server.url + "/__mockstore/verify",
                    json={"operation": "createPet", "body_contains": {"name": "zzz"}},
                    timeout=600,
                )
                times.append(time.monotonic() - sent)
                statuses[answer.status_code] += 1

            with _normal_client(server.url, "/__mockstore/health", {}) as seen:
                threads = [threading.Thread(target=one) for _ in range(calls)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(600)
            lines.append(
                f"verify body_contains over 40 bodies of 1 MiB, {calls} at once: "
                f"{dict(statuses)}, each {min(times):.2f}-{max(times):.2f} s; peak "
                f"{mib(peak_rss(server.process.pid))}; /health worst {seen['worst'] * 1000:.0f} ms"
            )
    return lines


_PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=600)\n"
    "print(done.returncode)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    "sys.stdout.write((done.stdout + done.stderr)[-300:])\n"
)


def _replay(path: str) -> str:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "mockstore", "replay", path],
        capture_output=True,
        text=True,
        timeout=900,
    )
    code, peak, output = done.stdout.split("\n", 2)
    last = output.strip().splitlines()[-1][:120] if output.strip() else ""
    return (
        f"exit {code}, peak {mib(int(peak))}, {time.monotonic() - started:.1f} s; "
        f"'{'Traceback' if 'Traceback' in output else last}'"
    )


def hars() -> list[str]:
    from starlette.testclient import TestClient

    from mockstore.app import create_app

    scenario = "version: 1\nkeys: [{key: pro-key, plan: pro}]\n"
    with TestClient(create_app(scenario), base_url="http://127.0.0.1") as client:
        client.get("/v1/pets/1", headers={"Authorization": "Bearer pro-key"})
        har = client.get("/__mockstore/requests.har", params={"mask": "false"}).json()
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for what, text in (
            ("8 MB", "s" * 8_000_000),
            ("2 M emoji (24 MB)", "\U0001f600" * 2_000_000),
        ):
            for where in ("response body", "header"):
                changed = json.loads(json.dumps(har))
                entry = changed["log"]["entries"][0]
                if where == "header":
                    entry["request"]["headers"].append({"name": "X-Long", "value": text})
                else:
                    entry["response"]["content"]["text"] = text
                path = os.path.join(tmp, "long.har")
                Path(path).write_text(json.dumps(changed))
                lines.append(f"replay, a string of {what} in a {where}: {_replay(path)}")
        path = os.path.join(tmp, "many.har")
        with open(path, "w") as out:
            out.write('{"log": {"entries": [')
            chunk = '{"a":[1]},' * 1_000_000
            for _ in range(19):
                out.write(chunk)
            out.write("{}]}}")
        lines.append(f"replay, 190 MB HAR of small objects: {_replay(path)}")
    return lines


CASES: dict[str, Callable[[], list[str]]] = {
    "pipelining": pipelining,
    "readers": readers,
    "verify": verify,
    "hars": hars,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(CASES))
    args = parser.parse_args()
    chosen = [name for name in args.only.split(",") if name] or list(CASES)
    served = subprocess.run(
        [sys.executable, "-c", "import mockstore; print(mockstore.__file__)"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    ).stdout.strip()
    print(f"servers run {served}; load {os.getloadavg()[0]:.1f}", flush=True)
    for name in chosen:
        for line in CASES[name]():
            print(f"{name}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
