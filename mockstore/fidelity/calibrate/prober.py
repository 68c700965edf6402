"""The prober: calibrate's requests to a live service, within a budget and an allowance.

``Prober.send`` sends one probe and keeps what came back, as an exchange of a
recording (``Recorded``) that the learner reads like any other, unless the
budget (``--budget``) is spent or the probe would spend the last request of an
allowance: the least of every ``Remaining`` figure the service reported for
that caller (``X-RateLimit-Remaining``, a second window's ``...-Remaining``,
the draft ``RateLimit``'s ``r``). The probes never exhaust a key or the
anonymous allowance unless told to (``spend=True``, for ``--allow-rate-limit``),
and never write (no POST, PUT, PATCH or DELETE) unless the calibration allows it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx

from mockstore.fidelity.formats import sf_list
from mockstore.keys import key_alias
from mockstore.reports.har import Recorded

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class Probe:
    """One request and what it got."""

    number: int
    what: str
    method: str
    path: str  # under the base path, with its query
    bucket: str  # a key's alias, or "no key"
    exchange: Recorded | None = None
    error: str | None = None

    @property
    def status(self) -> int:
        return self.exchange.status if self.exchange is not None else 0

    def header(self, name: str) -> str | None:
        if self.exchange is None:
            return None
        for header, value in self.exchange.response_headers:
            if header.lower() == name:
                return value
        return None


@dataclass
class Prober:
    """Sends probes within the budget, never spending an allowance to its last request."""

    target: str
    budget: int
    timeout: float
    allow_writes: bool = False
    probes: list[Probe] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # probes not sent, and why
    remaining: dict[str, int] = field(default_factory=dict)  # per bucket, as last reported

    def __post_init__(self) -> None:
        self.target = self.target.rstrip("/")
        self.base = "/" + self.target.rsplit("/", 1)[1]
        self._client = httpx.Client(timeout=self.timeout, trust_env=False, follow_redirects=False)

    def close(self) -> None:
        self._client.close()

    @property
    def left(self) -> int:
        return self.budget - len(self.probes)

    def exchanges(self) -> list[Recorded]:
        return [p.exchange for p in self.probes if p.exchange is not None]

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
        extra: dict[str, str] | None = None,
    ) -> Probe | None:
        """One probe; None when the budget, the allowance or the opt-ins do not allow it."""
        bucket = key_alias(key) if key else "no key"
        if method in WRITES and not self.allow_writes:
            # A bug of calibrate's, never the target's: say so loudly.
            raise AssertionError(f"{what}: a {method} without --allow-writes")
        if self.left <= 0:
            self.refused.append(f"{what}: not sent, the budget of {self.budget} is spent")
            return None
        if not spend and self.remaining.get(bucket, 2) <= 1:
            self.refused.append(f"{what}: not sent, it would spend the last request of {bucket}")
            return None
        headers: list[tuple[str, str]] = []
        if key is not None:
            headers.append(("authorization", f"Bearer {key}"))
        elif authorization is not None:
            headers.append(("authorization", authorization))
        if content_type is not None:
            headers.append(("content-type", content_type))
        headers.extend((name.lower(), value) for name, value in (extra or {}).items())
        probe = Probe(len(self.probes) + 1, what, method, path, bucket)
        self.probes.append(probe)
        sent_at = time.time()
        try:
            response = self._client.request(
                method, self.target + path, headers=headers, content=body
            )
        except httpx.HTTPError as exc:
            probe.error = f"{type(exc).__name__}: {exc}"
            return probe
        raw_path, _, query = (self.base + path).partition("?")
        if body:
            headers.append(("content-length", str(len(body))))
        probe.exchange = Recorded(
            index=probe.number - 1,
            seq=probe.number,
            request_id=None,
            method=method,
            path=raw_path,
            query=query,
            headers=headers,
            body=body or b"",
            time=sent_at,
            elapsed=None,
            client="calibrate",
            status=response.status_code,
            response_headers=list(response.headers.multi_items()),
            response_body=response.content,
            response_size=len(response.content),
            outcome="response",
            extra={"wall": sent_at},
        )
        left = self._remaining(probe)
        if left is not None:
            self.remaining[bucket] = left
        return probe

    @staticmethod
    def _remaining(probe: Probe) -> int | None:
        """The least of the caller's remaining figures the answer states (None: none)."""
        assert probe.exchange is not None
        figures = []
        for name, value in probe.exchange.response_headers:
            lowered = name.lower()
            if lowered.startswith("x-ratelimit") and lowered.endswith("remaining"):
                if value.strip().isdigit():
                    figures.append(int(value))
            elif lowered == "ratelimit":
                for _, params in sf_list(value) or []:
                    if params.get("r", "").isdigit():
                        figures.append(int(params["r"]))
        return min(figures) if figures else None
