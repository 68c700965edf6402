"""Driving the dashboard in a real browser: Playwright and Debian's Chromium.

Browsers cannot be downloaded here, so Playwright launches the system
Chromium (``apt-get install chromium``; ``.ci/run`` installs it). Without it
the browser tests are skipped locally, and fail in CI, where
``MOCKSTORE_REQUIRE_BROWSER=1`` is set.

Every page is watched: a console error, an uncaught exception, or a request
to anywhere but the server's own origin fails the test that opened it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / ".ci" / "artifacts"
# Generous: a loaded 2-core CI machine must not fail a test by being slow.
WAIT_MS = 15_000


def require_chromium() -> None:
    if os.path.exists(CHROMIUM):
        return
    reason = f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)"
    if os.environ.get("MOCKSTORE_REQUIRE_BROWSER"):
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Any]:
    """One headless Chromium for a module's tests."""
    require_chromium()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watch:
    """What a page did that it should not: console errors, exceptions, foreign requests,
    and state-changing calls without ``Content-Type`` and ``X-Mockstore-Client``."""

    origin: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    unmarked_changes: list[str] = field(default_factory=list)

    def on_console(self, message: Any) -> None:
        if message.type == "error":
            self.console_errors.append(f"{message.text} ({message.location.get('url')})")

    def on_request(self, request: Any) -> None:
        url = request.url
        self.requested.append(url)
        if not (url.startswith(self.origin + "/") or url.startswith(("data:", "blob:"))):
            self.foreign_requests.append(url)
        if request.method not in ("GET", "HEAD"):
            self.changes.append(f"{request.method} {url}")
            # What cross-site protection on the server will require of every change.
            headers = request.headers
            kind = headers.get("content-type", "")
            if headers.get("x-mockstore-client") != "dashboard" or kind not in (
                "application/json",
                "application/yaml",
            ):
                self.unmarked_changes.append(f"{request.method} {url} {headers}")

    def check(self, allowed_http_errors: tuple[tuple[int, str], ...] = ()) -> None:
        """Fail on anything unexpected; ``allowed_http_errors`` are answers the test provoked.

        Chromium logs every non-2xx answer to a fetch as a console error
        ("Failed to load resource: ... status of 400 ... (URL)"); a test that
        provokes one on purpose names its status and control API path.
        """
        unexpected = [
            text
            for text in self.console_errors
            if not any(
                f"status of {status} " in text and text.endswith(f"/__mockstore{path})")
                for status, path in allowed_http_errors
            )
        ]
        assert not self.page_errors, f"uncaught errors in the page: {self.page_errors}"
        assert not unexpected, f"console errors: {unexpected}"
        assert not self.foreign_requests, f"requests left {self.origin}: {self.foreign_requests}"
        assert not self.unmarked_changes, (
            f"changes without the page's headers: {self.unmarked_changes}"
        )


@contextmanager
def dashboard_page(
    browser: Any,
    url: str,
    *,
    allowed_http_errors: tuple[tuple[int, str], ...] = (),
    **context: Any,
) -> Iterator[tuple[Any, Watch]]:
    """A fresh browser context (its own sessionStorage) with the dashboard open."""
    options = {"viewport": {"width": 1280, "height": 800}, **context}
    browser_context = browser.new_context(**options)
    page = browser_context.new_page()
    watch = Watch(url)
    page.on("console", watch.on_console)
    page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
    page.on("request", watch.on_request)
    try:
        page.goto(url + "/__mockstore/ui")
        yield page, watch
        watch.check(allowed_http_errors)
    finally:
        browser_context.close()


def wait_live(page: Any) -> None:
    """Wait until the page is unlocked and its event stream connected."""
    from playwright.sync_api import expect

    expect(page.locator("#connection")).to_have_attribute("data-state", "live")


def screenshot(page: Any, name: str, *, full_page: bool = False) -> Path:
    """Keep a screenshot as a CI artefact (.ci/artifacts/dashboard-NAME.png)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"dashboard-{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
