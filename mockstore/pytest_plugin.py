"""The mockstore pytest plugin, loaded through the ``pytest11`` entry point.

``pip install mockstore`` is all a test suite needs::

    def test_lists_pets(mockstore):
        key = mockstore.key("free")
        response = httpx.get(mockstore.url + "/pets", headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200

    @pytest.mark.mockstore_scenario("flaky-create")
    def test_retries_a_failed_create(mockstore): ...

Fixtures:

- ``mockstore_server`` (session): one real server on a free port, started on first use
  (``python -m mockstore serve --port 0``) or, with ``--mockstore-url``, an already
  running one (the container). Under pytest-xdist each worker starts its own.
- ``mockstore`` (function): the server, reset before the test, with ``url``,
  ``base_url``, ``control``, ``key()``, ``load()``, ``advance()``, ``requests()``,
  ``verify()``.

Nothing here starts or imports anything heavy until a test asks for a fixture, so a
run that does not use mockstore pays only for importing this module.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from datetime import datetime

    from mockstore.control_client import Control

MARKER = "mockstore_scenario"
START_TIMEOUT = 30.0
_ADDRESS = re.compile(r"serving (http://[^\s/]+)")


# -- hooks ---------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockstore", "mockstore mock server")
    group.addoption(
        "--mockstore-url",
        default=os.environ.get("MOCKSTORE_URL") or None,
        metavar="URL",
        help="use the mockstore server already running at URL (e.g. the container, "
        "http://localhost:8080) instead of starting one (env MOCKSTORE_URL)",
    )
    group.addoption(
        "--mockstore-token",
        default=os.environ.get("MOCKSTORE_CONTROL_TOKEN") or None,
        metavar="TOKEN",
        help="the server's control token, if it was started with one (env MOCKSTORE_CONTROL_TOKEN)",
    )
    group.addoption(
        "--mockstore-scenario",
        default=None,
        metavar="NAME_OR_PATH",
        help="the scenario every test starts from unless marked otherwise: a bundled "
        "name or a YAML file (default: the server's own, 'default' for a started one)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(scenario): run the test on this mockstore scenario (a bundled name, "
        "a YAML file path, or YAML text) instead of the session's",
    )


# -- what the fixtures give ------------------------------------------------------


class MockstoreServer:
    """One mockstore server for the whole session (per xdist worker).

    ``base_url`` is ``http://host:port``; ``url`` adds the scenario's API base
    path (``/v1``). ``process`` is ``None`` for a server given by ``--mockstore-url``.
    """

    def __init__(
        self,
        base_url: str,
        control: Control,
        *,
        process: subprocess.Popen[str] | None = None,
        output: deque[str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.control = control
        self.process = process
        self._output = output if output is not None else deque()
        self.base_path = "/v1"
        # The scenario every test returns to: its YAML source and display name.
        self.baseline_source = ""
        self.baseline_file = ""
        self.baseline_name = ""
        # True when the running scenario is not the baseline (a test loaded one).
        self.swapped = False

    @property
    def url(self) -> str:
        """The API's base URL, e.g. ``http://127.0.0.1:41234/v1``."""
        return self.base_url + self.base_path

    def log(self) -> str:
        """What the server printed (started servers only; the last 500 lines)."""
        return "\n".join(self._output)

    def remember_baseline(self) -> None:
        summary = self.control.scenario()
        self.baseline_source = summary["source"]
        self.baseline_file = summary["file"]
        self.baseline_name = summary["name"]
        self.base_path = summary["base_path"]

    def load(
        self, scenario: str | os.PathLike[str] | dict[str, Any], label: str | None = None
    ) -> dict[str, Any]:
        """PUT ``scenario``; ``label`` names inline text in the server's error messages."""
        text, file = _scenario_text(scenario)
        summary = self.control.load_scenario(text, file=file or label)
        self.swapped = True
        self.base_path = summary["base_path"]
        return summary

    def restore_baseline(self) -> None:
        summary = self.control.load_scenario(self.baseline_source, file=self.baseline_file)
        self.base_path = summary["base_path"]
        self.swapped = False

    def stop(self) -> None:
        self.control.close()
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


class Mockstore:
    """The ``mockstore`` fixture: the session's server, reset for this test."""

    def __init__(self, server: MockstoreServer, since: int) -> None:
        self.server = server
        self.since = since
        self.control = _tracked_control(server)

    @property
    def url(self) -> str:
        """The API's base URL including the base path, e.g. ``http://127.0.0.1:41234/v1``."""
        return self.server.url

    @property
    def base_url(self) -> str:
        """The server's address, e.g. ``http://127.0.0.1:41234``; the control API is under it."""
        return self.server.base_url

    def key(self, plan: str | dict[str, int] = "free", *, tenant: str | None = None) -> str:
        """A new API key on ``plan`` (a name, or ``{"per_minute": N, "per_day": M}``).

        Each call issues a fresh key, so its rate-limit counters are its own.
        """
        return self.control.issue_key(plan, tenant=tenant)["key"]

    def load(self, scenario: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
        """Switch this test to ``scenario``: a bundled name, a path, YAML text or a dict.

        The next test starts on the session's scenario again.
        """
        return self.server.load(scenario)

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move the scenario clock forward by ``seconds``."""
        return self.control.advance(seconds)

    def set_time(self, when: str | datetime) -> dict[str, Any]:
        """Set the scenario clock (ISO 8601 text or a datetime)."""
        return self.control.set_time(when)

    def requests(
        self,
        *,
        operation: str | None = None,
        key: str | None = None,
        status: int | None = None,
    ) -> list[dict[str, Any]]:
        """The journal entries recorded since this test's reset, oldest first."""
        return self.control.requests(operation=operation, key=key, status=status, since=self.since)

    def verify(self, operation: str | None = None, **criteria: Any) -> int:
        """``Control.verify`` over this test's requests (``since`` defaults to the reset)."""
        criteria.setdefault("since", self.since)
        return self.control.verify(operation, **criteria)

    def __repr__(self) -> str:
        return f"<mockstore {self.url}>"


@functools.cache
def _tracked_control_class() -> type:
    from mockstore.control_client import Control

    class TrackedControl(Control):
        """A Control that tells the session when a test swaps the scenario."""

        def __init__(self, server: MockstoreServer) -> None:
            base = server.control
            self._server = server
            self.url = base.url
            self._http = base._http

        def load_scenario(self, scenario: Any, *, file: str | None = None) -> dict[str, Any]:
            summary = super().load_scenario(scenario, file=file)
            self._server.swapped = True
            self._server.base_path = summary["base_path"]
            return summary

        def close(self) -> None:
            """The session owns the connection; a test closing it would break the next."""

    return TrackedControl


def _tracked_control(server: MockstoreServer) -> Control:
    return _tracked_control_class()(server)


# -- fixtures --------------------------------------------------------------------


@pytest.fixture(scope="session")
def mockstore_url(request: pytest.FixtureRequest) -> str | None:
    """The address of an already running server to use, or ``None`` to start one.

    ``--mockstore-url`` (or ``MOCKSTORE_URL``) by default. Override this fixture in a
    ``conftest.py`` to hand the plugin a server you start yourself, for example a
    Testcontainers container whose port is known only once it runs.
    """
    return request.config.getoption("--mockstore-url")


@pytest.fixture(scope="session")
def mockstore_server(
    request: pytest.FixtureRequest, mockstore_url: str | None
) -> Iterator[MockstoreServer]:
    """A mockstore server for the session: started on a free port, or ``mockstore_url``."""
    config = request.config
    token = config.getoption("--mockstore-token")
    scenario = config.getoption("--mockstore-scenario")
    if mockstore_url:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
        if workers > 1:
            raise pytest.UsageError(
                f"--mockstore-url with {workers} xdist workers: every worker would reset the "
                "one server under the others' tests. Drop --mockstore-url so each worker "
                "starts its own server, or run one worker (-n 0)."
            )
        server = _external_server(mockstore_url, token)
        try:
            if scenario:
                server.load(scenario)
                server.swapped = False
                server.remember_baseline()
        except BaseException:
            server.stop()
            raise
    else:
        server = _start_server(scenario)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mockstore(mockstore_server: MockstoreServer, request: pytest.FixtureRequest) -> Mockstore:
    """The session's mockstore server, reset to a fresh state for this test.

    ``@pytest.mark.mockstore_scenario(...)`` runs the test on another scenario.
    """
    server = mockstore_server
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if len(marker.args) != 1 or marker.kwargs:
            raise pytest.UsageError(
                f"@pytest.mark.{MARKER} takes one scenario (a bundled name, a path or "
                f"YAML text), got args={marker.args!r} kwargs={marker.kwargs!r}"
            )
        server.load(marker.args[0], label=f"{request.node.nodeid} ({MARKER})")
        expected = None
    else:
        if server.swapped:
            server.restore_baseline()
        expected = server.baseline_name
    answer = server.control.reset()
    if expected is not None and answer.get("scenario") != expected:
        # Someone swapped the scenario without the fixtures (raw HTTP, another
        # client): put the session's back so this test starts where it expects.
        server.restore_baseline()
        answer = server.control.reset()
    return Mockstore(server, int(answer.get("journal_seq", 0)))


# -- starting and reaching servers -------------------------------------------------


def _external_server(url: str, token: str | None) -> MockstoreServer:
    from mockstore.control_client import Control, ControlError

    base_url = url.rstrip("/")
    control = Control(base_url, token)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            control.health()
            break
        except ControlError as exc:
            # A service container may still be starting: wait for it, within reason.
            if exc.status is not None or time.monotonic() > deadline:
                control.close()
                raise pytest.UsageError(
                    f"--mockstore-url {url}: no mockstore health check answered "
                    f"at {base_url}/__mockstore/health ({exc})"
                ) from exc
            time.sleep(0.2)
    server = MockstoreServer(base_url, control)
    try:
        server.remember_baseline()
    except ControlError as exc:
        control.close()
        hint = " (pass --mockstore-token)" if exc.status == 401 else ""
        raise pytest.UsageError(f"--mockstore-url {url}: {exc}{hint}") from exc
    return server


def _start_server(scenario: str | None) -> MockstoreServer:
    from mockstore.control_client import Control, ControlError

    command = [sys.executable, "-m", "mockstore", "serve", "--host", "127.0.0.1", "--port", "0"]
    command += ["--log-level", "warning"]
    if scenario:
        command += [
            "--scenario",
            str(Path(scenario).resolve()) if Path(scenario).is_file() else scenario,
        ]
    # The server's settings come from the command line only: MOCKSTORE_* variables
    # meant for a container (port, token, inline scenario) must not leak into it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    env.setdefault("PYTHONUNBUFFERED", "1")
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    output: deque[str] = deque(maxlen=500)
    address: list[str] = []
    found = threading.Event()

    def drain() -> None:
        # Read everything the server prints for the whole session, so a chatty
        # server can never block on a full pipe.
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip("\n"))
            if not address:
                match = _ADDRESS.search(line.strip())
                if match:
                    address.append(match.group(1))
                    found.set()
        found.set()

    threading.Thread(target=drain, name="mockstore-output", daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT
    while not found.wait(0.05):
        if time.monotonic() > deadline:
            break
    if not address:
        _kill(process)
        raise RuntimeError(
            "mockstore did not start:\n  $ " + " ".join(command) + "\n" + "\n".join(output)
        )
    control = Control(address[0])
    server = MockstoreServer(address[0], control, process=process, output=output)
    while True:
        try:
            server.remember_baseline()
            return server
        except ControlError as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(
                    f"mockstore at {address[0]} never became healthy ({exc}):\n" + server.log()
                ) from exc
            time.sleep(0.02)


def _kill(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait(5)


def _scenario_text(
    scenario: str | os.PathLike[str] | dict[str, Any],
) -> tuple[str | dict[str, Any], str | None]:
    """The scenario to PUT and its display name.

    A string is a file path when such a file exists, YAML text when it spans
    lines or holds a colon, and otherwise a bundled scenario's name (its file is
    read from the installed package, so a typo lists the bundled names).
    """
    if isinstance(scenario, dict):
        return scenario, None
    if isinstance(scenario, os.PathLike):
        path = os.fspath(scenario)
        return Path(path).read_text(encoding="utf-8"), path
    if "\n" not in scenario and Path(scenario).is_file():
        return Path(scenario).read_text(encoding="utf-8"), scenario
    if "\n" in scenario or ":" in scenario:
        return scenario, None
    from mockstore.scenario import ScenarioError, read_scenario_source

    try:
        return read_scenario_source(scenario)
    except ScenarioError as exc:
        raise pytest.UsageError(str(exc.problems[0].message)) from None
