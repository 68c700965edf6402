"""What the provider stand-in tests share: clients on fresh loopback addresses, Error checks.

Callers without a valid key are counted per client address by every provider, so a
test that sends anonymous requests takes a fresh source address of its own
(``127.x.y.z``: all of 127/8 is loopback on Linux) and never spends another
test's allowance. Every client checks the spec's rule that every answer carries
``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` and ``X-RateLimit-Reset``.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx

RATE_LIMIT_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
_addresses = itertools.count(1)
T = TypeVar("T")


def fresh_address() -> str:
    """A loopback address no other client of this process has used."""
    n = next(_addresses)
    return f"127.{(n >> 16) & 255}.{(n >> 8) & 255}.{(n & 255) or 1}"


def _has_rate_limit_headers(response: httpx.Response) -> None:
    for name in RATE_LIMIT_HEADERS:
        value = response.headers.get(name)
        assert value is not None, f"{response.request.method} {response.request.url}: no {name}"
        # A Unix timestamp may carry milliseconds (Tollgate's 1772366431.250).
        number = r"\d+(\.\d+)?" if name == "X-RateLimit-Reset" else r"\d+"
        assert re.fullmatch(number, value), f"{name}: {value!r} is not a number"


def client(base: str, key: str | None = None, *, source: str | None = None) -> httpx.Client:
    """A client of ``base`` (``…/v1``) sending ``key`` as a bearer token, from ``source``."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(
        base_url=base,
        headers=headers,
        timeout=10,
        # Plain HTTP on loopback: no TLS context, whose CA bundle takes ~50 ms to load.
        transport=httpx.HTTPTransport(local_address=source or fresh_address(), verify=False),
        event_hooks={"response": [_has_rate_limit_headers]},
    )


def error_of(response: httpx.Response, status: int | set[int]) -> dict[str, Any]:
    """The Error body of ``response``, checked: code, message, and status equal to the HTTP one."""
    statuses = {status} if isinstance(status, int) else status
    assert response.status_code in statuses, (response.status_code, response.text)
    body = response.json()
    assert isinstance(body, dict), body
    assert isinstance(body.get("code"), str) and body["code"], body
    assert isinstance(body.get("message"), str) and body["message"], body
    assert body.get("status") == response.status_code, body
    return body


def is_pet(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and type(item.get("id")) is int
        and isinstance(item.get("name"), str)
        and type(item.get("categoryId")) is int
        and item.get("status", "available") in ("available", "pending", "sold")
    )


def http_date(value: str) -> float:
    """An HTTP-date (RFC 9110 IMF-fixdate) as a Unix time; anything else fails."""
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


def within_one_window(seconds: float, attempt: Callable[[int], T], attempts: int = 3) -> T:
    """Run ``attempt(n)`` until one run falls within one clock-aligned window of ``seconds``.

    For providers whose windows are aligned to the clock: a run that spends a
    window and checks what follows is void when the wall clock crossed a multiple
    of ``seconds`` meanwhile (the allowance came back); it is run again, with
    ``n`` telling it to use fresh keys. Nothing here waits.
    """
    for number in range(attempts):
        start = time.time()
        result = attempt(number)
        if math.floor(start / seconds) == math.floor(time.time() / seconds):
            return result
    raise AssertionError(f"every one of {attempts} runs crossed a {seconds} s window boundary")
