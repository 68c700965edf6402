"""The mockstore pytest plugin, loaded through the ``pytest11`` entry point.

``pip install mockstore`` is all a test suite needs::

    def test_lists_pets(mockstore):
        key = mockstore.key("free")
        response = httpx.get(mockstore.url + "/pets", headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200

    @pytest.mark.mockstore_scenario("flaky-create")
    def test_retries_a_failed_create(mockstore): ...

Fixtures:

- ``mockstore_server`` (session): the server the session's tests use. By default a
  ``mockstore.MockServer`` on a free port, started on first use (each xdist worker
  starts its own). With ``--mockstore-url`` (the container), that server; and under
  pytest-xdist with several workers, a *tenant* of it per worker: an isolated mock
  of its own (pets, counters, keys, clock, journal) inside the one server, deleted
  at the end of the session.
- ``mockstore`` (function): the server, reset before the test, with ``url``,
  ``base_url``, ``control``, ``key()``, ``load()``, ``advance()``, ``requests()``,
  ``verify()``.

Nothing here starts or imports anything heavy until a test asks for a fixture, so a
run that does not use mockstore pays only for importing this module.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from datetime import datetime

    from mockstore.clients.control import Control
    from mockstore.clients.types import (
        ClockState,
        JournalEntry,
        ResetResult,
        ScenarioInfo,
        Verification,
    )
    from mockstore.server import MockServer

MARKER = "mockstore_scenario"


# -- hooks ---------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockstore", "mockstore mock server")
    group.addoption(
        "--mockstore-url",
        default=os.environ.get("MOCKSTORE_URL") or None,
        metavar="URL",
        help="use the mockstore server already running at URL (e.g. the container, "
        "http://localhost:8080, or its API base .../v1) instead of starting one; with "
        "pytest-xdist each worker gets a tenant of its own on it (env MOCKSTORE_URL)",
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
        "name, a YAML file or YAML text (default: the server's own, 'default' for a started one)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(scenario): run the test on this mockstore scenario (a bundled name, "
        "a YAML file path, or YAML text) instead of the session's",
    )


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """Say which server a ``--mockstore-url`` run uses, and what was made of its URL."""
    url = config.getoption("--mockstore-url")
    if not url:
        return None
    from mockstore.clients.control import Control
    from mockstore.clients.types import ControlError

    with Control(url, config.getoption("--mockstore-token"), timeout=2) as control:
        try:
            health = control.health()
        except ControlError as exc:
            return [f"mockstore: {url} (not answering yet: {exc.message})"]
    lines = [f"mockstore: {control.url} (mockstore {health.version}, scenario {health.scenario!r})"]
    if control.note:
        lines.append(f"mockstore: {control.note}")
    return lines


def _xdist_worker(config: pytest.Config) -> tuple[str | None, int, str]:
    """(worker id, worker count, run id) of this process, read from xdist's own config.

    Never from ``PYTEST_XDIST_*`` variables: a pytest run started inside a worker
    (pytester, a subprocess) inherits them without being a worker.
    """
    workerinput = getattr(config, "workerinput", None)
    if not workerinput:
        return None, 1, ""
    return (
        str(workerinput.get("workerid")),
        int(workerinput.get("workercount", 1)),
        str(workerinput.get("testrunuid", "")),
    )


# -- what the fixtures give ------------------------------------------------------


class MockstoreServer:
    """The server of a session (per xdist worker): a started one, a given one, or a tenant.

    ``base_url`` is its root (a tenant's root for a tenant); ``url`` adds the
    scenario's API base path (``/v1``). ``server`` is the ``MockServer`` the plugin
    started (``None`` for a server given by ``--mockstore-url``); ``tenant`` is the
    tenant id on a shared server.
    """

    def __init__(
        self,
        control: Control,
        *,
        server: MockServer | None = None,
        tenant: str | None = None,
        owner: Control | None = None,
    ) -> None:
        self.control = control
        self.server = server
        self.tenant = tenant
        self._owner = owner  # the shared server's own Control, which made the tenant
        self.base_path = "/v1"
        # The scenario every test returns to: its YAML source and display name.
        self.baseline_source = ""
        self.baseline_file = ""
        self.baseline_name = ""
        # True when the running scenario is not the baseline (a test loaded one).
        self.swapped = False

    @property
    def base_url(self) -> str:
        """The server's root (a tenant's root), e.g. ``http://127.0.0.1:41234``."""
        return self.control.url

    @property
    def url(self) -> str:
        """The API's base URL, e.g. ``http://127.0.0.1:41234/v1``."""
        return self.base_url + self.base_path

    def remember_baseline(self) -> None:
        summary = self.control.scenario()
        self.baseline_source = summary.source
        self.baseline_file = summary.file
        self.baseline_name = summary.name
        self.base_path = summary.base_path

    def reset(self) -> ResetResult:
        """Reset the server: in process on a server the plugin started, else over HTTP."""
        if self.server is not None:
            return self.server.reset()  # type: ignore[no-any-return]
        return self.control.reset()

    def load(self, scenario: Any, label: str | None = None) -> ScenarioInfo:
        """Load ``scenario`` (a bundled name, a path, YAML text or a mapping)."""
        return self.control.load_scenario(scenario, file=label)

    @property
    def shared(self) -> bool:
        """True for a server given by ``--mockstore-url`` used as it is (not a tenant of it)."""
        return self.server is None and self.tenant is None

    def restore_baseline(self) -> None:
        self.control.load_scenario(self.baseline_source, file=self.baseline_file)
        self.swapped = False

    def loaded(self, summary: ScenarioInfo) -> None:
        self.swapped = True
        self.base_path = summary.base_path

    def stop(self) -> None:
        close = getattr(self.control, "close_for_real", self.control.close)
        close()
        if self._owner is not None:
            from mockstore.clients.types import ControlError

            try:
                if self.tenant is not None:
                    self._owner.delete_tenant(self.tenant)
            except ControlError:
                pass  # the shared server went first; nothing is left to clean
            self._owner.close()
        if self.server is not None:
            self.server.stop()


class Mockstore:
    """The ``mockstore`` fixture: the session's server, reset for this test."""

    def __init__(self, server: MockstoreServer, since: int) -> None:
        self.server = server
        self.since = since
        self.control = server.control

    @property
    def url(self) -> str:
        """The API's base URL including the base path, e.g. ``http://127.0.0.1:41234/v1``."""
        return self.server.url

    @property
    def base_url(self) -> str:
        """The server's root (a tenant's root on a shared server); the control API is under it."""
        return self.server.base_url

    def key(self, plan: str | dict[str, int] = "free", *, tenant: str | None = None) -> str:
        """A new API key on ``plan`` (a name, or ``{"per_minute": N, "per_day": M}``).

        Each call issues a fresh key, so its rate-limit counters are its own.
        """
        return self.control.issue_key(plan, tenant=tenant).key

    def load(self, scenario: Any) -> ScenarioInfo:
        """Switch this test to ``scenario``: a bundled name, a path, YAML text or a dict.

        The next test starts on the session's scenario again.
        """
        return self.server.load(scenario)

    def advance(self, seconds: float) -> ClockState:
        """Move the scenario clock forward by ``seconds``."""
        return self.control.advance(seconds)

    def set_time(self, when: str | datetime) -> ClockState:
        """Set the scenario clock (ISO 8601 text or a datetime)."""
        return self.control.set_time(when)

    def requests(
        self,
        *,
        operation: str | None = None,
        key: str | None = None,
        status: int | None = None,
    ) -> list[JournalEntry]:
        """The journal entries recorded since this test's reset, oldest first."""
        return self.control.requests(operation=operation, key=key, status=status, since=self.since)

    def verify(self, operation: str | None = None, **criteria: Any) -> Verification:
        """``Control.verify`` over this test's requests (``since`` defaults to the reset)."""
        criteria.setdefault("since", self.since)
        return self.control.verify(operation, **criteria)

    def __repr__(self) -> str:
        return f"<mockstore {self.url}>"


@functools.cache
def _session_control_class() -> type:
    from mockstore.clients.control import Control

    class SessionControl(Control):
        """The session's Control: it tells the session when a test swaps the scenario,
        and a test closing it does not break the next test."""

        session: MockstoreServer | None = None

        def load_scenario(self, scenario: Any, *, file: str | None = None) -> Any:
            summary = super().load_scenario(scenario, file=file)
            if self.session is not None:
                self.session.loaded(summary)
            return summary

        def close(self) -> None:
            """The session owns the connection."""

        def close_for_real(self) -> None:
            super().close()

    return SessionControl


def _session_control(url: str, token: str | None) -> Control:
    control: Control = _session_control_class()(url, token)
    return control


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
        session = _external_server(config, mockstore_url, token)
    else:
        session = _started_server(scenario)
    try:
        if mockstore_url and scenario:
            session.load(scenario)
            session.swapped = False
            session.remember_baseline()
    except BaseException:
        session.stop()
        raise
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def mockstore(
    mockstore_server: MockstoreServer, request: pytest.FixtureRequest
) -> Iterator[Mockstore]:
    """The session's mockstore server, reset to a fresh state for this test.

    ``@pytest.mark.mockstore_scenario(...)`` runs the test on another scenario.
    On a shared server (``--mockstore-url``), a scenario the test loaded is
    replaced by the session's again when the test ends: the server is never
    left on a test's scenario for whoever uses it next.
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
    answer = server.reset()
    if expected is not None and answer.scenario != expected:
        # Someone swapped the scenario without the fixtures (raw HTTP, another
        # client): put the session's back so this test starts where it expects.
        server.restore_baseline()
        answer = server.reset()
    yield Mockstore(server, answer.journal_seq)
    if server.swapped and server.shared:
        server.restore_baseline()


# -- starting and reaching servers -------------------------------------------------


def _started_server(scenario: str | None) -> MockstoreServer:
    from mockstore.scenario import ScenarioError, ScenarioNotFound
    from mockstore.server import MockServer

    # Configured by the plugin's options only: MOCKSTORE_* variables meant for a
    # container (port, token, inline scenario) are never read by MockServer.
    try:
        server = MockServer(scenario or "default")
    except ScenarioNotFound as exc:
        raise pytest.UsageError(f"--mockstore-scenario: mockstore did not start: {exc}") from None
    except ScenarioError as exc:
        raise pytest.UsageError(
            "--mockstore-scenario: mockstore did not start: the scenario is not valid:\n"
            + "\n".join(f"  {p}" for p in exc.problems)
        ) from None
    server.start()
    control = _session_control(server.base_url, None)
    session = MockstoreServer(control, server=server)
    control.session = session  # type: ignore[attr-defined]
    try:
        session.remember_baseline()
    except BaseException:
        session.stop()
        raise
    return session


def _external_server(config: pytest.Config, url: str, token: str | None) -> MockstoreServer:
    from mockstore.clients.types import ControlError
    from mockstore.server import START_TIMEOUT

    worker, workers, run_id = _xdist_worker(config)
    control = _session_control(url, token)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            control.health()
            break
        except ControlError as exc:
            # A service container may still be starting: wait for it, within reason.
            if exc.status is not None or time.monotonic() > deadline:
                control.close_for_real()  # type: ignore[attr-defined]
                raise pytest.UsageError(
                    f"--mockstore-url {url}: no mockstore health check answered "
                    f"at {control.url}/__mockstore/health ({exc})"
                ) from exc
            time.sleep(0.2)
    owner = None
    tenant = None
    if workers > 1:
        # Several workers, one server: each works in a tenant of its own.
        owner = control
        tenant = f"pytest-{(run_id or uuid.uuid4().hex)[:8]}-{worker}"
        try:
            info = owner.create_tenant(tenant)
        except ControlError as exc:
            owner.close_for_real()  # type: ignore[attr-defined]
            hint = " (pass --mockstore-token)" if exc.status == 401 else ""
            raise pytest.UsageError(
                f"--mockstore-url {url}: cannot make a tenant for xdist worker {worker}: "
                f"{exc}{hint}"
            ) from exc
        control = _session_control(info.url, token)
    session = MockstoreServer(control, tenant=tenant, owner=owner)
    control.session = session  # type: ignore[attr-defined]
    try:
        session.remember_baseline()
    except ControlError as exc:
        session.stop()
        hint = " (pass --mockstore-token)" if exc.status == 401 else ""
        raise pytest.UsageError(f"--mockstore-url {url}: {exc}{hint}") from exc
    return session
