"""What `mockstore serve` imports before its first answer; the control API mounted on first use.

A server's start is mostly imports (issue 29): ``serve`` imports only its own
command, and the control API (Starlette, its routes, the journal's reports, HAR,
the dashboard) is imported and built on its first call, off the event loop. The
imports are read from a real ``mockstore serve`` run with ``python -X importtime``,
which writes each import to stderr as it completes. No timing is asserted: speed
is measured in ``bench/cold_start.py``.
"""

from __future__ import annotations

import asyncio
import os
import platform
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import httpx
import pytest
import yaml

from mockstore import MockServer, schemas, verdicts
from mockstore.app import create_app
from mockstore.scenario import resolve_scenario
from mockstore.server import tune_allocator
from tests.support import PATIENT, auth

# Modules that serving an API request does not need: imported on first use only.
NOT_AT_START = (
    "mockstore.control.routes",
    "mockstore.control.dashboard",
    "mockstore.control.journal",
    "mockstore.reports",
    "mockstore.fidelity",
    "mockstore.cli.record",
    "mockstore.cli.calibrate",
    "starlette.applications",
    "starlette.routing",
    # A scenario checked before is not checked by jsonschema again (mockstore.verdicts),
    # and a valid query is checked by plain code (mockstore.parameter_checks).
    "jsonschema",
    "referencing",
    "yaml",  # nor read by PyYAML: what it parsed into is kept too
    # No WebSocket protocol, in the server nor in its probe of uvicorn (fast_answer).
    "websockets",
    # In memory, no Redis backend (mockstore.sharing_errors, shared/deadline.py).
    "mockstore.sharing",
    "mockstore.shared.backend",
    "redis",
)
_IMPORT = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)")
_ADDRESS = re.compile(r"serving (http://\S+?:\d+)")


@dataclass
class Started:
    process: subprocess.Popen[str]
    url: str = ""
    imported: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def wait_for(self, found: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + PATIENT
        while not found():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"{what}; its output:\n" + "\n".join(self.lines[-40:]))
            time.sleep(0.02)


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Started]:
    # A start after the first: the default scenario's verdict is in the cache.
    monkeypatch.setenv(verdicts.CACHE_ENV, str(tmp_path / "verdicts"))
    resolve_scenario("default").load()
    # The OpenAPI document was parsed in this process before the cache moved: kept again.
    source = resources.files("mockstore").joinpath("openapi.yaml").read_bytes()
    verdicts.keep_parsed("openapi", source, schemas.openapi_document())
    command = [sys.executable, "-X", "importtime", "-m", "mockstore", "serve", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--log-level", "warning"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    run = Started(process)

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            run.lines.append(line.rstrip("\n"))
            if (name := _IMPORT.match(line)) is not None:
                run.imported.append(name.group(1))
            elif not run.url and (address := _ADDRESS.search(line)) is not None:
                run.url = address.group(1)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        run.wait_for(lambda: bool(run.url), "mockstore serve printed no address")
        yield run
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
        reader.join(30)


def _loaded(imported: list[str], prefix: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for name in imported)


def test_serve_answers_the_api_before_importing_the_control_api(started: Started) -> None:
    answer = httpx.get(started.url + "/v1/pets?limit=2", headers=auth("free"), timeout=PATIENT)
    assert answer.status_code == 200, answer.text
    # Everything imported before the answer was written before it: the module list
    # is complete once the first import of the control API's first call shows up.
    imported_before = list(started.imported)
    assert "mockstore.api" in imported_before
    early = [prefix for prefix in NOT_AT_START if _loaded(imported_before, prefix)]
    assert early == []

    health = httpx.get(started.url + "/__mockstore/health", timeout=PATIENT)
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    started.wait_for(
        lambda: _loaded(started.imported, "mockstore.control.routes"),
        "the control API's first call did not import its routes",
    )
    keys = httpx.get(started.url + "/__mockstore/keys", timeout=PATIENT)
    assert keys.status_code == 200
    assert {key["key"] for key in keys.json()} >= {"free-key", "pro-key"}


def test_the_first_control_calls_at_once_all_get_their_answer() -> None:
    # Every call races to mount the control API: one builds it, none sees half of it.
    with MockServer("default") as server:
        url = server.base_url + "/__mockstore"
        calls = ["/health", "/keys", "/clock", "/scenario", "/requests", "/openapi.json"] * 4

        def call(path: str) -> int:
            return httpx.get(url + path, timeout=PATIENT).status_code

        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            statuses = list(pool.map(call, calls))
        assert statuses == [200] * len(calls)
        assert server.control.reset().status == "reset"


def test_the_control_api_mounts_in_process_too() -> None:
    async def calls() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=create_app("default"))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get("/__mockstore/no-such-call"), await client.post(
                "/__mockstore/reset"
            )

    missing, reset = asyncio.run(calls())
    assert missing.status_code == 404
    assert missing.json()["code"] == "not_found"
    assert reset.status_code == 200
    assert reset.json()["status"] == "reset"


def test_a_deleted_tenant_whose_control_api_was_never_called_closes() -> None:
    with MockServer("default") as server:
        tenant = server.control.create_tenant()
        pets = httpx.get(f"{tenant.url}/v1/pets?limit=1", headers=auth("free"), timeout=PATIENT)
        assert pets.status_code == 200
        server.control.delete_tenant(tenant.id)
        gone = httpx.get(f"{tenant.url}/v1/pets?limit=1", headers=auth("free"), timeout=PATIENT)
        assert gone.status_code == 404


def test_the_openapi_document_reads_the_same_through_libyaml() -> None:
    text = resources.files("mockstore").joinpath("openapi.yaml").read_text("utf-8")
    assert schemas.openapi_document() == yaml.safe_load(text)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_allocator_is_tuned_without_a_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # ctypes.util.find_library ran `ldconfig -p` in a child process at every start.
    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("tune_allocator started a process")

    monkeypatch.setattr(subprocess, "Popen", no_child)
    assert tune_allocator() is True
