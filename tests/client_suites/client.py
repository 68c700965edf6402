"""What every client suite reads from the harness: the base URL, the keys, client addresses.

``SUITE_BASE_URL`` is the API's base (``http://127.0.0.1:8080/v1``); ``SUITE_KEYS`` a JSON
object mapping each role the suite names (``main``, ``tight-1``, ...) to a key; the harness
gives the provider's own keys, or the ones a mock of it accepts. ``SUITE_ADDRESSES`` (a
number) picks the block of loopback addresses this run's anonymous callers come from, so
that two runs against one server never share an address.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

BASE = os.environ.get("SUITE_BASE_URL", "http://127.0.0.1:8080/v1")
KEYS: dict[str, str] = json.loads(os.environ.get("SUITE_KEYS", "{}"))
_block = int(os.environ.get("SUITE_ADDRESSES", "1"))
_addresses = itertools.count(1)


def key(role: str) -> str:
    """The key of ``role``; a role the harness did not give fails the test that needs it."""
    if role not in KEYS:
        raise LookupError(f"the harness gave no key for the role {role!r} (SUITE_KEYS)")
    return KEYS[role]


def fresh_address() -> str:
    """A loopback address no other caller of this run has used (all of 127/8 is loopback)."""
    n = next(_addresses)
    return f"127.{_block % 250 + 1}.{(n >> 8) & 255}.{(n & 255) or 1}"


def api(role: str | None = None, *, source: str | None = None, **headers: str) -> httpx.Client:
    """A client of the API sending ``role``'s key as a bearer token, from ``source``."""
    sent = {name.replace("_", "-"): value for name, value in headers.items()}
    if role is not None:
        sent["Authorization"] = f"Bearer {key(role)}"
    return httpx.Client(
        base_url=BASE,
        headers=sent,
        timeout=15,
        follow_redirects=False,
        transport=httpx.HTTPTransport(local_address=source or fresh_address()),
    )


def error(response: httpx.Response) -> dict[str, Any]:
    """The Error body of a refusal: an object with code, message and status (the HTTP one)."""
    body = response.json()
    assert isinstance(body, dict), body
    assert isinstance(body.get("code"), str) and isinstance(body.get("message"), str), body
    assert body.get("status") == response.status_code, body
    return body


def http_date(value: str) -> float:
    """An IMF-fixdate as a Unix time (anything else fails)."""
    assert value.endswith(" GMT"), value
    return parsedate_to_datetime(value).timestamp()


def until(
    send: Callable[[], httpx.Response], done: Callable[[httpx.Response], bool], bound: int
) -> list[httpx.Response]:
    """Send until ``done`` holds for an answer (at most ``bound`` requests); every answer."""
    answers = []
    for _ in range(bound):
        answers.append(send())
        if done(answers[-1]):
            return answers
    raise AssertionError(f"not done after {bound} requests; last: {answers[-1].status_code}")


def wait(seconds: float, at_most: float) -> None:
    """Wait as a client that honours a server's wait does: the time it was told, no less.

    A client gives up on a wait longer than ``at_most`` (what the provider documents):
    it fails at once rather than sleep on a wait it was never promised.
    """
    assert 0 <= seconds <= at_most, (
        f"told to wait {seconds} s; the docs promise {at_most} s at most"
    )
    time.sleep(seconds)
