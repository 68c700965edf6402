"""The HTTP semantics of ``profiled.py``'s provider: what its gateway and web server add.

A provider behind a gateway answers some requests before its service sees them
(a CORS preflight, a redirect of a trailing slash, a maintenance page, an
``OPTIONS``), and shapes the answers of the rest (a 304 for a conditional read,
gzip, ``Access-Control-Allow-Origin``, a ``Warning`` about dropped fields, the
client's own request id, a delay). ``HttpChoices`` states each choice; the
default, ``HttpChoices()``, makes none of them (every read answered in full, no
coding, no CORS, ``OPTIONS`` a method no path serves, a trailing slash unknown).

Like ``profiled.py`` it imports nothing of mockstore: these are a provider's
choices, written from RFC 9110 and the Fetch standard.

The stages: ``gateway`` (before the rate limiter and the key: nothing counted,
no ``X-RateLimit-*``), ``counted`` (after the limiter, whatever the key),
``authenticated`` (after the key, as any operation). A maintenance window opens
``opens_after_seconds`` after the service starts and lasts ``lasts_seconds``.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import math
import random
import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime
from itertools import pairwise
from typing import Any, Literal

Stage = Literal["gateway", "counted", "authenticated"]
ReadOperation = Literal["listPets", "getPet"]
# The request-id patterns a provider picks among (the ones calibrate knows).
ECHO_PATTERNS = (
    "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "[0-9a-fA-F]{16,64}",
    "[A-Za-z0-9-]{8,64}",
    "[A-Za-z0-9._-]{8,64}",
    "[A-Za-z0-9._:-]{1,128}",
    "[\\x21-\\x7e]{1,200}",
)
DOCUMENT_PATHS = ("/pets", "/pets/{petId}", "/store/orders")


@dataclass(frozen=True)
class CorsChoice:
    """A provider's CORS: who may call from a page, and what the preflight says."""

    origins: tuple[str, ...] = ("*",)
    methods: tuple[str, ...] = ("GET", "HEAD", "POST")
    headers: tuple[str, ...] = ("Authorization", "Content-Type")
    expose_headers: tuple[str, ...] = ()
    max_age: int | None = None
    credentials: bool = False
    preflight_status: int = 204
    rejected_status: int | None = None  # None: the preflight status without Allow-*
    stage: Stage = "gateway"
    paths: tuple[str, ...] = ("/",)  # the path prefixes (under /v1) CORS applies to


@dataclass(frozen=True)
class MaintenanceChoice:
    """A window of maintenance: the paths it covers (under /v1), how it refuses, when."""

    paths: tuple[str, ...] = ("/store",)
    status: int = 503
    code: str = "maintenance"
    message: str = "{path} is under maintenance until {until}"
    retry_after: Literal["seconds", "decimal", "http-date", "none"] = "http-date"
    stage: Stage = "gateway"
    opens_after_seconds: int = 0
    lasts_seconds: int = 7200


@dataclass(frozen=True)
class LatencyChoice:
    """How long answers of an operation (any, if None) take: milliseconds at quantiles."""

    operation: str | None = None
    quantiles_ms: tuple[tuple[str, int], ...] = (("p0", 1), ("p100", 3))


@dataclass(frozen=True)
class HttpChoices:
    """Every HTTP choice of the provider's front (see the module docstring)."""

    conditional: tuple[ReadOperation, ...] = ()
    # How If-None-Match compares: weak (RFC 9110) or strong (a W/ tag never matches).
    comparison: Literal["weak", "strong"] = "weak"
    last_modified: tuple[ReadOperation, ...] = ()
    pets_modified: int = 1767225600  # 2026-01-01T00:00:00Z
    encodings: tuple[Literal["gzip", "deflate"], ...] = ()
    min_bytes: int = 1024
    vary: bool = True
    cors: CorsChoice | None = None
    options: Literal["none", "gateway", "counted", "authenticated"] = "none"
    options_status: int = 204
    trailing_slash: Literal["not_found", "redirect", "serve"] = "not_found"
    trailing_status: int = 308
    trailing_location: Literal["path", "url"] = "path"
    trailing_stage: Stage = "gateway"
    advisory_header: str | None = None  # on a create with unknown fields
    advisory_value: str = '299 - "unknown fields dropped: {fields}"'
    echo: str | None = None  # a pattern of ECHO_PATTERNS
    maintenance: MaintenanceChoice | None = None
    latency: tuple[LatencyChoice, ...] = ()
    # The message of some conditions, as templates ({value}, {parameter}, {method}, {path},
    # {key}, {retry_after_s}).
    messages: tuple[tuple[str, str], ...] = ()


def problems(choices: HttpChoices, etag: dict[str, str]) -> list[str]:
    """Why the stand-in could not serve ``choices`` (``etag``: the reads that carry one)."""
    found = []
    for operation in choices.conditional:
        if operation not in etag and operation not in choices.last_modified:
            found.append(f"$.http.conditional: {operation} has no ETag and no Last-Modified")
    if choices.echo is not None and choices.echo not in ECHO_PATTERNS:
        found.append("$.http.echo: not one of the patterns a provider picks among")
    if choices.cors is not None and choices.cors.preflight_status not in (200, 204):
        found.append("$.http.cors.preflight_status: 200 or 204")
    window = choices.maintenance
    if window is not None and not 500 <= window.status <= 599:
        found.append("$.http.maintenance.status: a 5xx")
    return found


# -- before the service -----------------------------------------------------------------------


@dataclass
class Made:
    """An answer the front makes: status, headers, body (None: no body), condition."""

    status: int
    headers: list[tuple[str, str]]
    body: Any = None
    condition: str | None = None


def _under(path: str, prefix: str) -> bool:
    if prefix == "/":
        return True
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def served(relative: str, head: bool) -> str | None:
    """``Allow`` of a document path (``relative`` under /v1), or None for no such path."""
    if relative == "/pets":
        return "GET, HEAD, POST" if head else "GET, POST"
    if re.fullmatch(r"/pets/[^/]+", relative):
        return "GET, HEAD" if head else "GET"
    if relative == "/store/orders":
        return "GET, HEAD" if head else "GET"
    return None


class Front:
    """The provider's front: a gateway and web server before and after its service."""

    def __init__(self, choices: HttpChoices, started: float, seed: int = 0) -> None:
        self.choices = choices
        # Maintenance is scheduled on whole seconds.
        self.started = math.floor(started)
        self._random = random.Random(seed)
        # The second each created pet was created in.
        self.created: dict[int, int] = {}

    # -- the stages

    def staged(
        self,
        stage: str,
        method: str,
        path: str,
        query: str,
        headers: dict[str, str],
        now: float,
        base_url: str,
        allow_of: Any,
    ) -> Made | None:
        """The answer the front makes at ``stage`` instead of the service, if any."""
        choices = self.choices
        relative = path[len("/v1") :] if path.startswith("/v1/") else path
        if (
            choices.trailing_slash == "redirect"
            and choices.trailing_stage == stage
            and len(relative) > 1
            and relative.endswith("/")
            and allow_of(relative.rstrip("/"))
        ):
            target = "/v1" + relative.rstrip("/") + (f"?{query}" if query else "")
            if choices.trailing_location == "url":
                target = base_url.rstrip("/") + target
            return Made(choices.trailing_status, [("Location", target)])
        cors = choices.cors
        if (
            cors is not None
            and cors.stage == stage
            and any(_under(relative, prefix) for prefix in cors.paths)
            and method == "OPTIONS"
            and "origin" in headers
            and "access-control-request-method" in headers
        ):
            return self._preflight(cors, headers)
        window = choices.maintenance
        if window is not None and window.stage == stage:
            opens = self.started + window.opens_after_seconds
            closes = opens + window.lasts_seconds
            if opens <= now < closes and any(_under(relative, p) for p in window.paths):
                until = datetime.fromtimestamp(closes, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                message = window.message.replace("{path}", path).replace("{method}", method)
                message = message.replace("{until}", until)
                wait = closes - now
                if window.retry_after == "seconds":
                    retry = str(math.ceil(round(wait, 6)))
                elif window.retry_after == "decimal":
                    retry = f"{math.ceil(round(wait * 10, 6)) / 10:.1f}"
                else:
                    retry = formatdate(math.ceil(closes), usegmt=True)
                body = {"code": window.code, "message": message, "status": window.status}
                told = [("Retry-After", retry)] if window.retry_after != "none" else []
                return Made(window.status, told, body, "maintenance")
        preflight = (
            cors is not None
            and any(_under(relative, prefix) for prefix in cors.paths)
            and "origin" in headers
            and "access-control-request-method" in headers
        )
        if choices.options == stage and method == "OPTIONS" and not preflight:
            allow = allow_of(relative)
            if allow:
                return Made(choices.options_status, [("Allow", allow)])
        return None

    def _preflight(self, cors: CorsChoice, headers: dict[str, str]) -> Made:
        origin = headers["origin"]
        method = headers["access-control-request-method"]
        asked = [
            h.strip().lower()
            for h in headers.get("access-control-request-headers", "").split(",")
            if h.strip()
        ]
        any_origin = "*" in cors.origins
        any_header = "*" in cors.headers
        allowed = (
            (any_origin or origin.lower() in {o.lower() for o in cors.origins})
            and method in cors.methods
            and (any_header or all(h in {x.lower() for x in cors.headers} for h in asked))
        )
        if not allowed:
            if cors.rejected_status is not None:
                body = {
                    "code": "cors_rejected",
                    "message": f"origin {origin} may not {method} here",
                    "status": cors.rejected_status,
                }
                return Made(cors.rejected_status, [("Vary", "Origin")], body, "cors_rejected")
            return Made(cors.preflight_status, [("Vary", "Origin")])
        named = cors.credentials or not any_origin
        out = [("Access-Control-Allow-Origin", origin if named else "*")]
        if cors.credentials:
            out.append(("Access-Control-Allow-Credentials", "true"))
        if named:
            out.append(("Vary", "Origin"))
        out.append(("Access-Control-Allow-Methods", ", ".join(cors.methods)))
        if any_header and asked:
            raw = headers.get("access-control-request-headers", "").strip()
            out.append(("Access-Control-Allow-Headers", raw if cors.credentials else "*"))
        elif cors.headers and not any_header:
            out.append(("Access-Control-Allow-Headers", ", ".join(cors.headers)))
        if cors.max_age is not None:
            out.append(("Access-Control-Max-Age", str(cors.max_age)))
        return Made(cors.preflight_status, out)

    def unslashed(self, path: str, allow_of: Any) -> str:
        """The path a trailing slash is taken off, where the front serves it as absent."""
        relative = path[len("/v1") :] if path.startswith("/v1/") else path
        if (
            self.choices.trailing_slash == "serve"
            and len(relative) > 1
            and relative.endswith("/")
            and allow_of(relative.rstrip("/"))
        ):
            return path.rstrip("/")
        return path

    # -- after the service

    def note_created(self, pet_id: int, now: float) -> None:
        self.created[pet_id] = math.floor(now)

    def last_modified(self, pets: list[dict[str, Any]], now: float) -> int:
        seconds = [
            self.created.get(pet["id"], self.choices.pets_modified)
            for pet in pets
            if isinstance(pet, dict) and isinstance(pet.get("id"), int)
        ]
        return min(max(seconds, default=self.choices.pets_modified), math.floor(now))

    def request_id(self, headers: dict[str, str], name: str, generated: str) -> str:
        sent = headers.get(name.lower())
        pattern = self.choices.echo
        if pattern is None or sent is None or len(sent) > 200:
            return generated
        return sent if re.fullmatch(pattern, sent) else generated

    def shaped(
        self,
        operation: str | None,
        method: str,
        path: str,
        status: int,
        body: bytes,
        out: list[tuple[str, str]],
        headers: dict[str, str],
        pets: Any,
        now: float,
        sent: dict[str, Any] | None,
    ) -> tuple[int, bytes]:
        """The answer's status and body as the front sends them; ``out`` gets its headers."""
        choices = self.choices
        if status == 200 and method in ("GET", "HEAD") and operation in choices.last_modified:
            shown = pets if isinstance(pets, list) else [pets]
            modified = self.last_modified(shown, now)
            out.append(("Last-Modified", formatdate(modified, usegmt=True)))
            if operation in choices.conditional and _not_modified(
                headers, out, modified, choices.comparison
            ):
                status, body = 304, b""
        elif (
            status == 200
            and method in ("GET", "HEAD")
            and operation in choices.conditional
            and _not_modified(headers, out, None, choices.comparison)
        ):
            status, body = 304, b""
        if (
            choices.advisory_header is not None
            and operation == "createPet"
            and 200 <= status < 300
            and isinstance(sent, dict)
        ):
            unknown = [name for name in sent if name not in ("name", "categoryId", "status")]
            if unknown:
                value = choices.advisory_value.replace("{fields}", ", ".join(unknown))
                out.append((choices.advisory_header, value))
        cors = choices.cors
        origin = headers.get("origin")
        preflight = method == "OPTIONS" and "access-control-request-method" in headers
        relative = path[len("/v1") :] if path.startswith("/v1/") else path
        if (
            cors is not None
            and origin is not None
            and not preflight
            and any(_under(relative, prefix) for prefix in cors.paths)
            and ("*" in cors.origins or origin.lower() in {o.lower() for o in cors.origins})
        ):
            named = cors.credentials or "*" not in cors.origins
            out.append(("Access-Control-Allow-Origin", origin if named else "*"))
            if cors.credentials:
                out.append(("Access-Control-Allow-Credentials", "true"))
            if named:
                out.append(("Vary", "Origin"))
            if cors.expose_headers:
                out.append(("Access-Control-Expose-Headers", ", ".join(cors.expose_headers)))
        if choices.encodings and status not in (204, 304) and body:
            if choices.vary:
                out.append(("Vary", "Accept-Encoding"))
            coding = _choose(headers.get("accept-encoding"), choices.encodings)
            if coding is not None and len(body) >= choices.min_bytes:
                body = gzip.compress(body, mtime=0) if coding == "gzip" else zlib.compress(body)
                out.append(("Content-Encoding", coding))
        return status, body

    async def delay(self, operation: str | None) -> None:
        for choice in self.choices.latency:
            if choice.operation in (None, operation):
                points = sorted((float(n[1:]) / 100, v) for n, v in choice.quantiles_ms)
                u = self._random.random()
                for (q0, v0), (q1, v1) in pairwise(points):
                    if q0 <= u <= q1:
                        wait = v0 + (v1 - v0) * ((u - q0) / (q1 - q0) if q1 > q0 else 1)
                        await asyncio.sleep(wait / 1000)
                        return
                return


def _not_modified(
    headers: dict[str, str], out: list[tuple[str, str]], modified: int | None, comparison: str
) -> bool:
    tag = next((value for name, value in out if name.lower() == "etag"), None)
    match = headers.get("if-none-match")
    if match is not None:
        if match.strip() == "*":
            return True
        if tag is None:
            return False
        if comparison == "strong":
            # Both tags strong and the same: a weak one never matches.
            return not tag.startswith("W/") and any(t.strip() == tag for t in match.split(","))
        wanted = tag.removeprefix("W/")
        return any(t.strip().removeprefix("W/") == wanted for t in match.split(","))
    since = headers.get("if-modified-since")
    if since is not None and modified is not None:
        try:
            when = parsedate_to_datetime(since)
        except (TypeError, ValueError, IndexError):
            return False
        return when.tzinfo is not None and modified <= when.timestamp()
    return False


def _choose(accept: str | None, offered: tuple[str, ...]) -> str | None:
    if accept is None:
        return None
    weights: dict[str, float] = {}
    for part in accept.split(","):
        coding, _, params = part.partition(";")
        coding = coding.strip().lower()
        if not coding:
            continue
        weight = 1.0
        match = re.search(r"q=([0-9.]+)", params)
        if match:
            try:
                weight = float(match.group(1))
            except ValueError:
                weight = 0.0
        weights.setdefault(coding, weight)
    best, best_weight = None, 0.0
    for coding in offered:
        weight = weights.get(coding, weights.get("*", 0.0))
        if weight > best_weight:
            best, best_weight = coding, weight
    return best


def etag_of(body: bytes, weak: bool) -> str:
    digest = hashlib.sha256(body).hexdigest()[:32]
    return f'W/"{digest}"' if weak else f'"{digest}"'


__all__ = [
    "ECHO_PATTERNS",
    "CorsChoice",
    "Front",
    "HttpChoices",
    "LatencyChoice",
    "Made",
    "MaintenanceChoice",
    "etag_of",
    "problems",
    "served",
]
