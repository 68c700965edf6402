"""Helpers shared by the tests: real servers, and OpenAPI response checks.

``mock_server`` is the way most tests get a real server: ``mockstore.MockServer``,
uvicorn in a thread of the test process. ``live_server`` starts the CLI as a
subprocess and reads its banner: only for tests about the command line itself
(its options, environment variables, logs and signals).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from mockstore import MockServer, schemas

_ADDRESS = re.compile(r"serving (http://[^\s/]+)")
KEYS = {
    "free": "free-key",
    "pro": "pro-key",
    "business": "business-key",
    "enterprise": "enterprise-key",
}


# What a tool adds to a control API POST that has no JSON body (mockstore.Control
# sends it too): the server refuses body-less POSTs a web page could send cross-site.
TOOL = {"X-Mockstore-Client": "mockstore-tests"}

# The Hypothesis profile (tests/conftest.py registers both): "fast" in the README's
# command, "deep" in .ci/run's property step (MOCKSTORE_HYPOTHESIS_PROFILE=deep).
HYPOTHESIS_PROFILE = os.environ.get("MOCKSTORE_HYPOTHESIS_PROFILE", "fast")
FAST_SHARE = 4  # the fast profile draws a quarter of a property test's examples


def examples(deep: int) -> int:
    """A property test's ``max_examples``: ``deep`` in the deep profile, a quarter (at least
    10, never more than ``deep``) in the fast suite; the same property either way."""
    if HYPOTHESIS_PROFILE == "deep":
        return deep
    return min(deep, max(10, deep // FAST_SHARE))


# How long a test waits for an answer: httpx's default (5 s) is a verdict on how loaded
# the machine is (at load 25 on 2 cores an answer has taken longer), never the mock's.
PATIENT = 120.0


class _Patient:
    """httpx's top-level calls (``patient.get(url, ...)``: a fresh connection each), waiting
    ``PATIENT`` seconds for an answer unless given a ``timeout`` of their own."""

    def __getattr__(self, method: str) -> Callable[..., httpx.Response]:
        return functools.partial(getattr(httpx, method), timeout=PATIENT)


patient = _Patient()


def auth(plan_or_key: str = "pro") -> dict[str, str]:
    """The Authorization header for a default-scenario plan name or a raw key."""
    return {"Authorization": f"Bearer {KEYS.get(plan_or_key, plan_or_key)}"}


@dataclass
class LiveServer:
    """A real server on a free port: a ``MockServer`` (``mock``) or a CLI subprocess (``process``).

    ``url`` is the server root, ``api`` the API base.
    """

    url: str
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)
    mock: MockServer | None = None
    reader: threading.Thread | None = None

    @property
    def api(self) -> str:
        return self.mock.url if self.mock is not None else self.url + "/v1"

    @property
    def control_url(self) -> str:
        return self.url + "/__mockstore"

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **kwargs)

    def log(self) -> str:
        return "\n".join(self.output)

    def drained(self, timeout: float) -> None:
        """Wait until everything the process printed has been read (it has exited)."""
        if self.reader is not None:
            self.reader.join(timeout)


# ``MOCKSTORE_TEST_STATE=redis``: the servers of the behaviour tests keep their state in
# Redis (one redis-server for the test process, a database of its own for each server),
# so the tests that pass in memory prove the shared state answers alike (.ci/run).
SHARED_STATE = os.environ.get("MOCKSTORE_TEST_STATE") == "redis"
_redis: list[Any] = []


def shared_state_url() -> str | None:
    """A fresh Redis database's URL under ``MOCKSTORE_TEST_STATE=redis``, else None."""
    if not SHARED_STATE:
        return None
    if not _redis:
        import atexit

        from tests.redis_server import RedisServer

        server = RedisServer(databases=100_000).start()
        atexit.register(server.close)
        _redis.extend([server, 0])
    _redis[1] += 1
    return f"redis://127.0.0.1:{_redis[0].port}/{_redis[1]}"


@contextmanager
def mock_server(scenario: Any = "default", **options: Any) -> Iterator[LiveServer]:
    """A ``MockServer`` on a free port (``options`` as ``MockServer`` takes them)."""
    if SHARED_STATE and "state" not in options:
        options["state"] = shared_state_url()
    with MockServer(scenario, **options) as server:
        yield LiveServer(server.base_url, mock=server)


# How long a CLI server may take to start before a test gives up on it: generous, since
# on a loaded machine (load 20+ on 2 cores) a start takes tens of seconds; a server that
# cannot start exits, and that fails at once, whatever this says.
START_SECONDS = 300.0


@contextmanager
def live_server(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = START_SECONDS,
    launcher: list[str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> Iterator[LiveServer]:
    """Start ``python -m mockstore serve --port 0 ARGS`` and yield it once it listens.

    It listens once its banner is printed (the socket is bound and listening
    before); it is ready once it answers any HTTP request. It is given up on
    only when it exits, or after ``timeout`` seconds: then it and every process
    it started (its process group: ``--workers``) are killed, and the error
    says what its log said. ``launcher`` replaces ``python -m mockstore`` (a
    script that prepares the process, then runs the CLI); ``preexec_fn`` runs
    in the child before it starts (to lower its limits, say).
    """
    command = [*(launcher or [sys.executable, "-m", "mockstore"]), "serve", "--port", "0", *args]
    if "--log-level" not in args:
        command += ["--log-level", "warning"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=preexec_fn,
        start_new_session=True,  # its own process group: its workers go with it
    )
    output: list[str] = []
    found = threading.Event()
    address: list[str] = []

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip("\n"))
            match = _ADDRESS.search(line)
            if match and not address:
                address.append(match.group(1))
                found.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        while not found.wait(0.05):
            if process.poll() is not None or time.monotonic() > deadline:
                raise _not_started(process, reader, output, timeout, "printed no address")
        server = LiveServer(address[0], process, output, reader=reader)
        if not _answers(server.url, process, deadline):
            raise _not_started(process, reader, output, timeout, "never answered over HTTP")
    except BaseException:
        _stop_group(process)
        reader.join(5)
        raise
    try:
        yield server
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(30)
        _stop_group(process)  # what is left of it (a worker its stop did not reach)
        reader.join(5)


def _answers(url: str, process: subprocess.Popen[str], deadline: float) -> bool:
    """Whether the server answers any HTTP request (with --no-control the health check is
    a 404) before it exits or ``deadline`` passes. It listens already: the request
    waits in its backlog until it serves, so one patient request is enough."""
    while process.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            httpx.get(url + "/__mockstore/health", timeout=left)
            return True
        except httpx.TransportError:
            time.sleep(0.05)  # between workers, say: try again while it runs
    return False


def _not_started(
    process: subprocess.Popen[str],
    reader: threading.Thread,
    output: list[str],
    timeout: float,
    why: str,
) -> RuntimeError:
    """The error for a server that did not start: what happened, then what its log said."""
    code = process.poll()
    if code is None:
        what = f"still running after {timeout:g} s: killed with its process group"
        _stop_group(process)
    else:
        what = f"exited with code {code}"
    reader.join(5)  # everything it printed
    log = "\n".join(output) or "(nothing)"
    return RuntimeError(
        f"mockstore (pid {process.pid}) did not start ({why}; {what}); its log:\n{log}"
    )


def _stop_group(process: subprocess.Popen[str]) -> None:
    """Kill the server's process group (it and its workers), and reap the server."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(30)


def _operation_for(method: str, path: str, base: str = "/v1") -> schemas.Operation | None:
    relative = path[len(base) :] if path.startswith(base) else path
    for operation in schemas.operations().values():
        pattern = re.sub(r"\{[^}]+\}", "[^/]+", operation.path)
        if operation.method == method and re.fullmatch(pattern, relative):
            return operation
    return None


def assert_conforms(response: httpx.Response, base: str = "/v1") -> Any:
    """Check a response body against the OpenAPI document; return the parsed body.

    The schema is the one the document gives the operation for this status; for
    an error status the document does not list, the Error schema. Every API
    response must also carry the three X-RateLimit headers.
    """
    request = response.request
    body = response.json()
    operation = _operation_for(request.method, request.url.path, base)
    status = str(response.status_code)
    pointer = None
    if operation is not None and status in operation.responses:
        spec = schemas.openapi_document()["paths"][operation.path][operation.method.lower()]
        answer = spec["responses"][status]
        if "$ref" in answer:
            name = answer["$ref"].rsplit("/", 1)[-1]
            answer = schemas.openapi_document()["components"]["responses"][name]
        schema = answer["content"]["application/json"]["schema"]
        pointer = schema["$ref"]
    elif response.status_code >= 400:
        pointer = "#/components/schemas/Error"
    if pointer is None:
        raise AssertionError(f"no schema for {request.method} {request.url.path} {status}")
    errors = list(schemas.validator_for(pointer).iter_errors(body))
    assert not errors, f"{request.method} {request.url.path} -> {status}: {errors[0].message}"
    if response.status_code >= 400:
        assert body["status"] == response.status_code
    for header in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"):
        assert header in response.headers, f"{header} missing on {status}"
        assert int(response.headers[header]) >= 0
    return body
