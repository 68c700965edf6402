"""Real retry libraries, configured as their documentation says, are never accused.

urllib3, requests, httpx-retries, tenacity, stamina and backoff each read the
``Retry-After`` of a 429 (in seconds or as an HTTP-date, which they measure
against their own clock), sleep it for real, and retry. Against a running
clock the retry is answered; against a manual clock, which no sleeping moves,
it is refused again, and the client gives up. Either way it did as it was
told: the etiquette report must say nothing of it, and the key must not be
banned (the scenario bans after two rejections).

Each library runs in a tenant of its own on one real server, all at once
(the waits are one to three real seconds, slept in parallel).

The same libraries then wait the way the docs tell a test to: their
``time.sleep`` replaced by ``POST /__mockstore/clock {"advance_seconds": s}``.
A wait read from an HTTP-date is measured from the client's own clock, which
moved on between the answer and the advance; the retry is answered (or, on a
manual clock, refused by the few milliseconds that passed), and the verdict
must count the wall time that passed with the scenario time advanced.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from itertools import pairwise
from typing import Any

import httpx
import pytest
import requests
import urllib3
from requests.adapters import HTTPAdapter

from mockstore import Control, MockServer
from mockstore.reports.model import parse_http_date
from tests.support import TOOL

KEY = "lib-key"
ATTEMPTS = 3  # the first request and two retries
# The minute ends 3.5 s (manual: forever) after the clock's start: Retry-After 4 s, time
# enough for the first two requests on a loaded machine (1.5 s once was not, three times).
SCENARIO = """
version: 1
name: {name}
clock: {{start: "2026-03-01T12:00:56.5Z", mode: {mode}}}
behaviour: {{retry_after: {form}}}
ban: {{after_rejections: 2, within_seconds: 60, duration_seconds: 600}}
keys: [{{key: lib-key, plan: {{per_minute: 1, per_day: 100}}}}]
"""
AUTH = {"Authorization": f"Bearer {KEY}"}


def seconds_to_wait(response: Any) -> float:
    """What a user's code does with a Retry-After: seconds, or the date minus now."""
    value = response.headers["Retry-After"].strip()
    if value.isdigit():
        return float(value)
    return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())


def with_urllib3(url: str) -> int:
    retry = urllib3.Retry(
        total=ATTEMPTS - 1, status_forcelist=[429], backoff_factor=0, raise_on_status=False
    )
    with urllib3.PoolManager(retries=retry) as http:
        return http.request("GET", url, headers=AUTH).status


def with_requests(url: str) -> int:
    retry = urllib3.Retry(
        total=ATTEMPTS - 1, status_forcelist=[429], backoff_factor=0, raise_on_status=False
    )
    with requests.Session() as session:
        session.mount("http://", HTTPAdapter(max_retries=retry))
        return session.get(url, headers=AUTH, timeout=30).status_code


def with_httpx_retries(url: str) -> int:
    from httpx_retries import Retry, RetryTransport

    retry = Retry(total=ATTEMPTS - 1, backoff_factor=0, status_forcelist=[429])
    with httpx.Client(transport=RetryTransport(retry=retry), timeout=30) as client:
        return client.get(url, headers=AUTH).status_code


def with_tenacity(url: str) -> int:
    from tenacity import Retrying, retry_if_result, stop_after_attempt

    def wait(state: Any) -> float:
        return seconds_to_wait(state.outcome.result())

    retrying = Retrying(
        retry=retry_if_result(lambda response: response.status_code == 429),
        wait=wait,
        stop=stop_after_attempt(ATTEMPTS),
        retry_error_callback=lambda state: state.outcome.result(),
    )
    return retrying(httpx.get, url, headers=AUTH, timeout=30).status_code


class RateLimited(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def with_stamina(url: str) -> int:
    import stamina

    # stamina's hook may name the wait itself (a float): Retry-After's.
    def backoff(error: Exception) -> bool | float:
        return seconds_to_wait(error.response) if isinstance(error, RateLimited) else False

    @stamina.retry(on=backoff, attempts=ATTEMPTS)
    def get() -> int:
        response = httpx.get(url, headers=AUTH, timeout=30)
        if response.status_code == 429:
            raise RateLimited(response)
        return response.status_code

    try:
        return get()
    except RateLimited as gave_up:
        return gave_up.response.status_code


def with_backoff(url: str) -> int:
    import backoff

    @backoff.on_predicate(
        backoff.runtime,
        predicate=lambda response: response.status_code == 429,
        value=seconds_to_wait,
        jitter=None,
        max_tries=ATTEMPTS,
    )
    def get() -> httpx.Response:
        return httpx.get(url, headers=AUTH, timeout=30)

    return get().status_code


LIBRARIES: dict[str, Callable[[str], int]] = {
    "urllib3": with_urllib3,
    "requests": with_requests,
    "httpx-retries": with_httpx_retries,
    "tenacity": with_tenacity,
    "stamina": with_stamina,
    "backoff": with_backoff,
}
CASES = [
    (library, mode, form)
    for library in LIBRARIES
    for mode in ("running", "manual")
    for form in ("seconds", "http-date")
]


@pytest.fixture(scope="module")
def server() -> Iterator[MockServer]:
    with MockServer("version: 1\nname: libraries\n") as running:
        yield running


def run_case(server: MockServer, library: str, mode: str, form: str) -> dict[str, Any]:
    """One library against a tenant of its own; what it got, what the journal shows."""
    tenant = f"{library}-{mode}-{form}"
    with Control(server.base_url) as root:
        base = root.create_tenant(tenant).url
    for _ in range(6):  # a machine so loaded the minute ended before the 429: again
        loaded = httpx.put(
            base + "/__mockstore/scenario",
            content=SCENARIO.format(name=tenant, mode=mode, form=form),
            headers=TOOL,
        )
        assert loaded.status_code == 200, loaded.text
        spent = httpx.get(base + "/v1/pets", headers=AUTH)
        assert spent.status_code == 200
        status = LIBRARIES[library](base + "/v1/pets")
        entries = httpx.get(base + "/__mockstore/requests", params={"run": "current"}).json()
        report = httpx.get(base + "/__mockstore/report", params={"run": "current"}).json()
        statuses = [e["response"]["status"] for e in entries["entries"]]
        if statuses[:2] == [200, 429]:
            break
    with Control(server.base_url) as root:
        root.delete_tenant(tenant)  # each holds a share of the memory budget
    return {"status": status, "statuses": statuses, "report": report}


def test_retry_libraries_that_sleep_as_told_are_never_flagged(server: MockServer) -> None:
    with ThreadPoolExecutor(max_workers=len(CASES)) as pool:
        futures = {case: pool.submit(run_case, server, *case) for case in CASES}
        outcomes = {case: future.result() for case, future in futures.items()}
    for (library, mode, form), outcome in outcomes.items():
        where = f"{library} on a {mode} clock, Retry-After as {form}"
        statuses = outcome["statuses"]
        assert statuses[:2] == [200, 429], f"{where}: never met the 429: {statuses}"
        assert len(statuses) >= 3, f"{where}: did not retry: {statuses}"
        if mode == "running":
            assert outcome["status"] == 200 and statuses[-1] == 200, f"{where}: {statuses}"
        else:
            # Nothing moved the manual clock: refused again, never banned.
            assert set(statuses[1:]) == {429}, f"{where}: {statuses}"
        assert outcome["report"]["findings"] == [], f"{where}: {outcome['report']['findings']}"


# -- waiting by advancing the mock's clock ------------------------------------------------

_REAL_SLEEP = time.sleep
_ADVANCING = threading.local()  # the tenant whose clock this thread's sleeps advance


def _sleep_or_advance(seconds: float) -> None:
    """``time.sleep`` for every library: in a thread of an advancing case, move the mock's
    clock by the seconds instead (what the docs tell a test to do); elsewhere, sleep."""
    base = getattr(_ADVANCING, "base", None)
    if base is None:
        _REAL_SLEEP(seconds)
        return
    _ADVANCING.slept.append(seconds)
    moved = httpx.post(base + "/__mockstore/clock", json={"advance_seconds": seconds})
    assert moved.status_code == 200, moved.text


# Attempts enough for a retry refused by the milliseconds that passed on a manual clock
# (see the test) to be followed by others; a ban after two refusals that did not wait.
ADVANCING_ATTEMPTS = 5
# The minute ends 58.5 s after the clock's start: a running clock does not get there
# between the first request and the second, however loaded the machine (advancing
# the clock costs no time).
ADVANCING_SCENARIO = """
version: 1
name: {name}
clock: {{start: "2026-03-01T12:00:01.5Z", mode: {mode}}}
behaviour: {{retry_after: {form}}}
ban: {{after_rejections: 2, within_seconds: 60, duration_seconds: 600}}
keys: [{{key: lib-key, plan: {{per_minute: 1, per_day: 100}}}}]
"""


def run_advancing_case(server: MockServer, library: str, mode: str, form: str) -> dict[str, Any]:
    """One library whose sleeps advance its tenant's clock; what the mock and the report say."""
    tenant = f"advance-{library}-{mode}-{form}"
    with Control(server.base_url) as root:
        base = root.create_tenant(tenant).url
    loaded = httpx.put(
        base + "/__mockstore/scenario",
        content=ADVANCING_SCENARIO.format(name=tenant, mode=mode, form=form),
        headers=TOOL,
    )
    assert loaded.status_code == 200, loaded.text
    # A manual clock stands still and a running one is far from its minute's end: the
    # allowance is spent, the next request is refused.
    assert httpx.get(base + "/v1/pets", headers=AUTH).status_code == 200
    _ADVANCING.base, _ADVANCING.slept = base, []
    try:
        status = LIBRARIES[library](base + "/v1/pets")
    finally:
        slept = _ADVANCING.slept
        del _ADVANCING.base, _ADVANCING.slept
    entries = httpx.get(base + "/__mockstore/requests", params={"run": "current"}).json()
    report = httpx.get(base + "/__mockstore/report", params={"run": "current"}).json()
    with Control(server.base_url) as root:
        root.delete_tenant(tenant)  # each holds a share of the memory budget
    return {"status": status, "entries": entries["entries"], "report": report, "slept": slept}


@pytest.mark.parametrize("mode", ["manual", "running"])
@pytest.mark.parametrize("form", ["http-date", "seconds"])
def test_retry_libraries_that_advance_the_clock_are_never_flagged(
    server: MockServer, mode: str, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "sleep", _sleep_or_advance)
    monkeypatch.setattr("tests.test_retry_libraries.ATTEMPTS", ADVANCING_ATTEMPTS)
    with ThreadPoolExecutor(max_workers=len(LIBRARIES)) as pool:
        futures = {
            library: pool.submit(run_advancing_case, server, library, mode, form)
            for library in LIBRARIES
        }
        outcomes = {library: future.result() for library, future in futures.items()}
    for library, outcome in outcomes.items():
        where = f"{library} advancing a {mode} clock, Retry-After as {form}"
        entries = outcome["entries"]
        statuses = [e["response"]["status"] for e in entries]
        assert statuses[:2] == [200, 429], f"{where}: never met the 429: {statuses}"
        assert outcome["slept"], f"{where}: never waited"
        assert outcome["report"]["findings"] == [], f"{where}: {outcome['report']['findings']}"
        codes = [e["response"]["body"] for e in entries]
        assert not any('"key_banned"' in body for body in codes), f"{where}: banned: {statuses}"
        assert outcome["status"] == 200 and statuses[-1] == 200, f"{where}: {statuses}"
        # Each refusal after the first came short of the wait only by the wall time that
        # passed between the answer and the advance (the client's clock read in between).
        for told, retry in pairwise(entries[1:]):
            if retry["response"]["status"] == 200:
                break
            headers = dict((k.lower(), v) for k, v in told["response"]["headers"])
            value = headers["retry-after"]
            wait = float(value) if value.isdigit() else parse_http_date(value) - told["wall"]
            scenario = retry["time"] - told["time"]
            wall = retry["wall"] - told["wall"]
            assert mode == "manual" and form == "http-date", f"{where}: refused: {statuses}"
            assert scenario + wall >= wait, f"{where}: {scenario} + {wall} < {wait}"
