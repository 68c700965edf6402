"""The prober: calibrate's requests to a live service, within a budget and an allowance.

``Prober.send`` sends one probe and keeps what came back (``Probe``), unless
the budget (``--budget``) is spent or the probe would spend the last request
of an allowance (what the service reported in ``X-RateLimit-Remaining``): the
probes never exhaust a key or the anonymous allowance unless told to
(``spend=True``, for ``--allow-rate-limit``). Every probe can cite itself as
evidence in the scenario written (``Probe.evidence``), keys as their aliases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from mockstore.keys import key_alias
from mockstore.validation import loads_bounded


@dataclass
class Probe:
    """One request and what it got."""

    number: int
    what: str
    method: str
    target: str
    who: str  # a key's alias, "no key", or the credentials sent
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None

    def json(self) -> Any:
        try:
            return loads_bounded(self.body)
        except ValueError:
            return None

    def code(self) -> str | None:
        body = self.json()
        code = body.get("code") if isinstance(body, dict) else None
        return code if isinstance(code, str) else None

    def evidence(self, *headers: str, code: bool = False, note: str = "") -> str:
        """``probe 5: GET /v1/pets?limit=0 (key-3f9a1c2b) -> 422 {"code": "..."}``."""
        if self.error is not None:
            answer = f"failed: {self.error}"
        else:
            answer = str(self.status)
            shown = [
                f"{h}: {self.headers[h.lower()]}" for h in headers if h.lower() in self.headers
            ]
            if shown:
                answer += ", " + ", ".join(shown)
            if code and self.code() is not None:
                answer += f', code "{self.code()}"'
        text = f"probe {self.number}: {self.method} {self.target} ({self.who}) -> {answer}"
        return one_line(text + (f"; {note}" if note else ""))


def one_line(text: str) -> str:
    """``text`` on one line of at most 200 characters, for a comment in the scenario file."""
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


class Prober:
    """Sends probes within the budget, never spending an allowance to its last request."""

    def __init__(self, target: str, budget: int, timeout: float) -> None:
        self.target = target.rstrip("/")
        self.base = "/" + self.target.rsplit("/", 1)[1]
        self.budget = budget
        self.probes: list[Probe] = []
        self.refused: list[str] = []  # probes not sent, and why
        self.remaining: dict[str, int] = {}  # per key alias / "no key": as last reported
        self._client = httpx.Client(timeout=timeout, trust_env=False, follow_redirects=False)

    def close(self) -> None:
        self._client.close()

    @property
    def left(self) -> int:
        return self.budget - len(self.probes)

    def send(
        self,
        what: str,
        method: str,
        path: str,
        *,
        key: str | None = None,
        authorization: str | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        spend: bool = False,
    ) -> Probe | None:
        """One probe; None when the budget or the allowance does not allow it."""
        who = key_alias(key) if key else ("no key" if authorization is None else "bad key")
        if self.left <= 0:
            self.refused.append(f"{what}: not sent, the budget of {self.budget} is spent")
            return None
        bucket = key_alias(key) if key else "no key"
        if not spend and self.remaining.get(bucket, 2) <= 1:
            self.refused.append(f"{what}: not sent, it would spend the last request of {bucket}")
            return None
        headers = {}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        elif authorization is not None:
            headers["Authorization"] = authorization
        if content_type is not None:
            headers["Content-Type"] = content_type
        probe = Probe(len(self.probes) + 1, what, method, self.base + path, who)
        if body is not None and len(body) > 200:
            probe.target += f" [{len(body)}-byte body]"
        self.probes.append(probe)
        try:
            response = self._client.request(
                method, self.target + path, headers=headers, content=body
            )
        except httpx.HTTPError as exc:
            probe.error = f"{type(exc).__name__}: {exc}"
            return probe
        probe.status = response.status_code
        probe.headers = {k.lower(): v for k, v in response.headers.items()}
        probe.body = response.content
        remaining = probe.headers.get("x-ratelimit-remaining", "")
        if remaining.isdigit():
            self.remaining[bucket] = int(remaining)
        return probe
