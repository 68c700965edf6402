"""A scenario's HTTP semantics, compiled once: what its ``http``, ``maintenance`` and ``latency``
sections and its request-id echo ask of each exchange.

``HttpSemantics.of(scenario)`` is None for a scenario that uses none of them,
so the pipeline pays one ``is None`` for the default scenario. Otherwise it
answers two questions, for ``mockstore.shaping`` (the web floor) to act on:

**Is the request answered before it reaches the API?** (``staged``) At each of
three stages of the pipeline, in this order: a trailing slash redirected, a CORS
preflight, a maintenance window, a plain ``OPTIONS``. ``gateway`` is before the
rate limiter and the key (nothing is counted, no ``X-RateLimit-*``), ``counted``
after the limiter counted the caller (a spent allowance is refused first), and
``authenticated`` after the key was found valid, as any operation.

**What does the answer carry beyond the API's own?** (``finish``) A 304 for a
read whose validators the request's preconditions name; ``Last-Modified``; the
advisory header of a create that had unknown fields; the CORS headers of a
cross-origin request; ``OPTIONS`` and the scenario's own methods in ``Allow``;
the body's content coding; and the delay the latency rules draw for it.

Pure: request headers come in as the values of the names in ``reads``, and
what is decided goes out as plain values; no ASGI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl
from weakref import WeakKeyDictionary

from mockstore import conditional, encoding
from mockstore.conditional import CreationSeconds
from mockstore.cors import CorsPolicy, is_preflight
from mockstore.errors import ApiError
from mockstore.latency import Latency
from mockstore.maintenance import Maintenance
from mockstore.routing import compile_path
from mockstore.scenario.model import Scenario
from mockstore.schemas import object_fields, operations
from mockstore.templates import fill
from mockstore.validation import above_maximum

Header = tuple[bytes, bytes]
# The request headers the section's rules read (lower case, as ASGI spells them).
ORIGIN = b"origin"
REQUEST_METHOD = b"access-control-request-method"
REQUEST_HEADERS = b"access-control-request-headers"
IF_NONE_MATCH = b"if-none-match"
IF_MODIFIED_SINCE = b"if-modified-since"
ACCEPT_ENCODING = b"accept-encoding"
HOST = b"host"
# The longest request id a client may have answered back.
ECHO_LIMIT = 200
_NEW_PET_FIELDS = frozenset(object_fields("NewPet"))
# A W3C trace context header (version, trace id, parent id, flags): what a trace continues.
TRACEPARENT = re.compile(r"[0-9a-fA-F]{2}-[0-9a-fA-F]{32}-[0-9a-fA-F]{16}-[0-9a-fA-F]{2}")
_LIMIT = next(p for p in operations()["listPets"].parameters if p.name == "limit")
_MAXIMUM = _LIMIT.schema["maximum"]
_NO_BODY = frozenset({204, 304})


@dataclass(slots=True)
class Made:
    """An answer a stage makes instead of the API: status, headers, body, and why.

    ``error`` is set for a refusal (its Error body is the answer's); ``rule`` is
    what the journal names as having answered.
    """

    status: int
    headers: list[Header] = field(default_factory=list)
    error: ApiError | None = None
    rule: str = ""
    # A maintenance refusal's Retry-After form (its value is written on the headers' clock).
    retry_after: str | None = None


@dataclass(slots=True)
class Request:
    """What the stages and the finish read of one request (beyond method and path)."""

    method: str
    path: str  # as sent, under the base path
    relative: str  # relative to the base path
    query: bytes
    headers: dict[bytes, bytes]
    scheme: str = "http"


class HttpSemantics:
    """One scenario's HTTP semantics (see the module docstring)."""

    def __init__(self, scenario: Scenario) -> None:
        http = scenario.http
        self.base = scenario.base_path
        self.cors = CorsPolicy(http.cors) if http.cors is not None else None
        self.conditional = http.conditional
        self.conditional_on = http.conditional.operations
        self.dated = http.conditional.last_modified
        self.compression = http.compression if http.compression.encodings else None
        self.options = http.options if http.options.serve else None
        self.allow = [
            (compile_path(template), value.replace(" ", "").replace(",", ", "))
            for template, value in http.allow
        ]
        self.trailing = http.trailing_slash
        self.advisory = http.unknown_fields
        self.clamp_advisory = http.clamped_limit
        self.maintenance = Maintenance(scenario.maintenance) if scenario.maintenance else None
        self.latency = Latency(scenario.latency, scenario.seed) if scenario.latency else None
        form = scenario.behaviour.request_id
        self.echo = (
            re.compile(form.echo) if form.echo is not None and form.header is not None else None
        )
        self.echo_header = form.header.lower().encode("latin-1") if form.header else b""
        self.trace = form.format == "traceparent"
        self.stages = self._stages()
        reads = {HOST}
        if self.cors is not None:
            reads |= {ORIGIN, REQUEST_METHOD, REQUEST_HEADERS}
        if self.conditional_on:
            reads |= {IF_NONE_MATCH, IF_MODIFIED_SINCE}
        if self.compression is not None:
            reads.add(ACCEPT_ENCODING)
        if self.echo is not None:
            reads.add(self.echo_header)
        self.reads = frozenset(reads)
        # Each state's stores' creation seconds (the state is the key: a reset is a
        # new state, and forgets them with it).
        self._created: WeakKeyDictionary[object, dict[str | None, CreationSeconds]] = (
            WeakKeyDictionary()
        )

    @classmethod
    def of(cls, scenario: Scenario) -> HttpSemantics | None:
        """The scenario's semantics, or None when it asks nothing of them."""
        form = scenario.behaviour.request_id
        if (
            scenario.http.active
            or scenario.maintenance
            or scenario.latency
            or (form.echo is not None and form.header is not None)
        ):
            return cls(scenario)
        return None

    def _stages(self) -> frozenset[str]:
        stages = set()
        if self.trailing.answer == "redirect":
            stages.add(self.trailing.stage)
        if self.cors is not None:
            stages.add(self.cors.settings.stage)
        if self.options is not None:
            stages.add(self.options.stage)
        if self.maintenance is not None:
            stages |= self.maintenance.stages
        return frozenset(stages)

    # -- before the API ------------------------------------------------------------

    def unslashed(self, relative: str, served: Callable[[str], str]) -> str | None:
        """The path a trailing slash is taken off when the scenario serves it without one."""
        if (
            self.trailing.answer != "serve"
            or len(relative) < 2
            or not relative.endswith("/")
            or not served(relative.rstrip("/"))
        ):
            return None
        return relative.rstrip("/")

    def staged(
        self,
        stage: str,
        request: Request,
        now: float,
        elapsed: float,
        served: Callable[[str], str],
    ) -> Made | None:
        """The answer made at ``stage`` in place of the API's, if any.

        ``served(relative)`` is the ``Allow`` value of a path ("" for a path
        nothing serves): the methods the scenario serves there.
        """
        if stage not in self.stages:
            return None
        relative = request.relative
        trailing = self.trailing
        if (
            trailing.answer == "redirect"
            and trailing.stage == stage
            and len(relative) > 1
            and relative.endswith("/")
            and served(relative.rstrip("/"))
        ):
            return self._redirect(request)
        cors = self.cors
        headers = request.headers
        if (
            cors is not None
            and cors.settings.stage == stage
            and is_preflight(request.method, headers.get(ORIGIN), headers.get(REQUEST_METHOD))
            and cors.applies(relative)
        ):
            return self._preflight(cors, request)
        if (
            cors is not None
            and cors.settings.refuse_origins
            and cors.settings.stage == stage
            and (origin := headers.get(ORIGIN)) is not None
            and not cors.allows_origin(origin)
            and cors.applies(relative)
        ):
            return self._refused_origin(cors, origin)
        if self.maintenance is not None and stage in self.maintenance.stages:
            found = self.maintenance.refusal(
                stage, request.method, relative, request.path, now, elapsed
            )
            if found is not None:
                window, error = found
                return Made(
                    error.status, error=error, rule=window.name, retry_after=window.retry_after
                )
        options = self.options
        if (
            options is not None
            and options.stage == stage
            and request.method == "OPTIONS"
            and not self._a_cors_preflight(request)  # a plain OPTIONS only
        ):
            allow = served(relative)
            if allow:
                return Made(
                    options.status, [(b"allow", allow.encode("latin-1"))], rule="http.options"
                )
        return None

    def _a_cors_preflight(self, request: Request) -> bool:
        """Whether a request is a preflight the scenario's CORS answers (at whatever stage)."""
        cors = self.cors
        headers = request.headers
        return (
            cors is not None
            and is_preflight(request.method, headers.get(ORIGIN), headers.get(REQUEST_METHOD))
            and cors.applies(request.relative)
        )

    def _redirect(self, request: Request) -> Made:
        target = self.base + request.relative.rstrip("/")
        if request.query:
            target += "?" + request.query.decode("latin-1")
        host = request.headers.get(HOST)
        if self.trailing.location == "url" and host is not None:
            target = f"{request.scheme}://{host.decode('latin-1')}{target}"
        return Made(
            self.trailing.status,
            [(b"location", target.encode("latin-1"))],
            rule="http.trailing_slash",
        )

    def _preflight(self, cors: CorsPolicy, request: Request) -> Made:
        headers = request.headers
        allowed, answer = cors.preflight(
            headers[ORIGIN], headers[REQUEST_METHOD], headers.get(REQUEST_HEADERS)
        )
        rejected = cors.settings.rejected_status
        if not allowed and rejected is not None:
            origin = headers[ORIGIN].decode("latin-1")
            error = ApiError(
                "cors_rejected",
                f"the CORS preflight from {origin} for "
                f"{headers[REQUEST_METHOD].decode('latin-1')} is not allowed",
                status=rejected,
                value=origin,
                parameter="Origin",
            )
            error.code = cors.settings.code  # the provider's own (condition cors_rejected)
            return Made(rejected, answer, error=error, rule="http.cors")
        return Made(cors.settings.preflight_status, answer, rule="http.cors")

    def _refused_origin(self, cors: CorsPolicy, origin: bytes) -> Made:
        """A request (not a preflight) from an origin the provider does not allow, refused."""
        status = cors.settings.rejected_status or 403
        shown = origin.decode("latin-1")
        error = ApiError(
            "cors_rejected",
            f"requests from the origin {shown} are not allowed",
            status=status,
            value=shown,
            parameter="Origin",
        )
        error.code = cors.settings.code
        return Made(status, [(b"vary", b"Origin")], error=error, rule="http.cors")

    def served(self, service: Any, routes: Any, relative: str) -> str:
        """``Allow`` of a path under this scenario ("" for a path nothing serves): the
        document's methods (``service``'s router) and the scripted routes' (``routes``)."""
        documented = service.router.resolve("", relative).allow
        _, methods = routes.for_path("", relative, service.serve_head)
        allow = routes.allow(methods, documented, service.serve_head)
        return self.allow_of(relative, allow) if allow else ""

    def answers_after_the_limiter(
        self, request: Request, now: float, elapsed: float, served: Callable[[str], str]
    ) -> bool:
        """Whether a stage after the limiter (counted, authenticated) answers the request,
        should its caller be admitted: a shared state then neither runs the operation
        nor counts the fault rules in its one script, as in memory neither happens."""
        return any(
            self.staged(stage, request, now, elapsed, served) is not None
            for stage in ("counted", "authenticated")
            if stage in self.stages
        )

    def serves_options(self, method: str, unrouted: ApiError) -> bool:
        """Whether a 405 for ``method`` is in fact an OPTIONS the scenario serves."""
        return (
            self.options is not None
            and method == "OPTIONS"
            and unrouted.condition == "method_not_allowed"
        )

    def allow_of(self, relative: str, allow: str) -> str:
        """``Allow`` of a path: the scenario's own value for it, or the document's (plus
        OPTIONS where the scenario serves it)."""
        for pattern, value in self.allow:
            if pattern.match(relative):
                return value
        if self.options is not None and allow and "OPTIONS" not in allow:
            return ", ".join(sorted([*allow.split(", "), "OPTIONS"]))
        return allow

    # -- the answer --------------------------------------------------------------

    def request_id(self, headers: dict[bytes, bytes], generated: bytes) -> bytes:
        """The answer's request id: the client's own, when it matches the echo pattern."""
        if self.echo is None:
            return generated
        sent = headers.get(self.echo_header)
        if sent is None or len(sent) > ECHO_LIMIT:
            return generated
        try:
            text = sent.decode("ascii")
        except UnicodeDecodeError:
            return generated
        if not self.echo.fullmatch(text):
            return generated
        if self.trace:
            # A trace the client started goes on: its trace id, this answer's span id.
            if not TRACEPARENT.fullmatch(text):
                return generated
            return b"00-" + text[3:35].lower().encode() + generated[35:]
        return sent

    def creation_seconds(self, state: object, group: str | None) -> CreationSeconds:
        """The creation seconds of one store of ``state`` (in memory)."""
        stores = self._created.get(state)
        if stores is None:
            stores = self._created[state] = {}
        found = stores.get(group)
        if found is None:
            found = stores[group] = CreationSeconds(self.conditional.pets_modified)
        return found

    def wants_dates(self, operation: str | None, status: int, method: str) -> bool:
        """Whether an answer needs its pets' creation seconds (Last-Modified)."""
        return status == 200 and method in ("GET", "HEAD") and operation in self.dated

    def last_modified(self, seconds: list[int], now: float) -> int:
        return conditional.last_modified(seconds, self.conditional.pets_modified, now)

    def not_modified(
        self,
        operation: str | None,
        status: int,
        request: Request,
        etag: bytes | None,
        modified: int | None,
    ) -> bool:
        """Whether a read's 200 is answered 304 instead."""
        if status != 200 or operation not in self.conditional_on:
            return False
        if request.method not in ("GET", "HEAD"):
            return False
        headers = request.headers
        return conditional.not_modified(
            headers.get(IF_NONE_MATCH),
            headers.get(IF_MODIFIED_SINCE),
            etag,
            modified,
            self.conditional.comparison == "strong",
        )

    def advisory_header(self, operation: str | None, status: int, sent: bytes) -> Header | None:
        """The advisory header of a create whose body had fields NewPet does not name."""
        advisory = self.advisory
        if advisory is None or operation != "createPet" or not 200 <= status < 300:
            return None
        try:
            value = json.loads(sent)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        unknown = [name for name in value if name not in _NEW_PET_FIELDS]
        if not unknown:
            return None
        text = fill(advisory.value, {"fields": ", ".join(unknown)})
        return (advisory.header.lower().encode("latin-1"), _latin1(text))

    def clamp_header(self, operation: str | None, status: int, query: bytes) -> Header | None:
        """The advisory header of a listing whose limit was above the maximum (and taken as
        it: ``behaviour.limit_above_maximum: clamp``)."""
        advisory = self.clamp_advisory
        if advisory is None or operation != "listPets" or status != 200:
            return None
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if name == "limit" and above_maximum(_LIMIT, value.strip()):
                text = fill(advisory.value, {"limit": value, "maximum": str(_MAXIMUM)})
                return (advisory.header.lower().encode("latin-1"), _latin1(text))
        return None

    def cors_headers(self, request: Request) -> list[Header]:
        """The CORS headers of an answer (not a preflight) to a cross-origin request."""
        cors = self.cors
        headers = request.headers
        origin = headers.get(ORIGIN)
        if cors is None or origin is None or not cors.applies(request.relative):
            return []
        if is_preflight(request.method, origin, headers.get(REQUEST_METHOD)):
            return []  # a preflight's own answer (``staged``) has its headers
        return cors.actual(origin)

    def coding(self, request: Request, status: int, body: bytes) -> str | None:
        """The content coding ``body`` is sent in, if any."""
        compression = self.compression
        if compression is None or status in _NO_BODY or len(body) < compression.min_bytes:
            return None
        return encoding.choose(request.headers.get(ACCEPT_ENCODING), compression.encodings)

    def varies(self, status: int, body: bytes) -> bool:
        """Whether the answer carries ``Vary: Accept-Encoding``."""
        compression = self.compression
        return (
            compression is not None and compression.vary and status not in _NO_BODY and bool(body)
        )

    def delay_ms(self, operation: str | None, status: int, generated: bytes) -> float:
        latency = self.latency
        return 0.0 if latency is None else latency.delay_ms(operation, status, generated)


def _latin1(text: str) -> bytes:
    return text.encode("latin-1", "replace")


def pet_ids(operation: str | None, body: bytes, params: dict[str, str]) -> list[int]:
    """The ids of the pets a read's 200 body shows."""
    if operation == "getPet":
        raw = params.get("petId", "")
        try:
            return [int(raw)]
        except ValueError:
            return []
    try:
        value = json.loads(body)
    except ValueError:
        return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    return [pet["id"] for pet in value if isinstance(pet, dict) and isinstance(pet.get("id"), int)]


__all__ = ["HttpSemantics", "Made", "Request", "pet_ids"]
