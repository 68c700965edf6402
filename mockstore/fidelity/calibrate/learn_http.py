"""Calibrate's ``http`` section: the HTTP semantics a recording shows, and the request-id echo.

Each part is learned only from the exchanges that show it, and cites them:

- conditional reads: a 304 to a read whose request had ``If-None-Match`` or
  ``If-Modified-Since`` makes it conditional; a 200 in full to one that named its
  own current ETag says it is not; ``Last-Modified`` on a read's 200, and the
  instant of the pets that existed before the recording;
- content coding: the codings of ``Content-Encoding``, their order where a request
  accepted several alike, the smallest body coded against the largest sent as it
  is (``min_bytes``, the roundest size between them), ``Vary``;
- CORS: preflights (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``)
  and the ``Access-Control-*`` of their answers and of cross-origin answers; a
  plain ``OPTIONS``; ``Allow`` where it is not the document's; a path with a
  trailing slash; each stage from whether a caller without a key was answered and
  whether the answer states rate-limit figures;
- the advisory header of a create with unknown fields, its value as a template;
- ``behaviour.request_id.echo``: the pattern, among the usual ones, that accepts
  every id a client got back and refuses every one it did not.

What the recording does not show stays mockstore's default and is listed open.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from mockstore.clock import format_time
from mockstore.fidelity.calibrate.learn_advisory import AdvisoryLearner
from mockstore.fidelity.calibrate.learn_cors import learn_cors
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import http_date, trace_of
from mockstore.routing import Router, compile_path
from mockstore.schemas import operations

_ROUTER = Router(operations().values())
_READS = ("listPets", "getPet")
_RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "ratelimit")
# The request-id patterns calibrate chooses among, most particular first.
ECHO_PATTERNS = (
    "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "[0-9a-fA-F]{16,64}",
    "[A-Za-z0-9-]{8,64}",
    "[A-Za-z0-9._-]{8,64}",
    "[A-Za-z0-9._:-]{1,128}",
    "[\\x21-\\x7e]{1,200}",
)

# The trace contexts a provider continues: any well-formed one but a zero trace or parent id
# (the W3C's invalid ones), or any well-formed one at all.
TRACE_PATTERNS = (
    "00-(?!0{32})[0-9a-fA-F]{32}-(?!0{16})[0-9a-fA-F]{16}-[0-9a-fA-F]{2}",
    "[0-9a-fA-F]{2}-(?!0{32})[0-9a-fA-F]{32}-[0-9a-fA-F]{16}-[0-9a-fA-F]{2}",
    "[0-9a-fA-F]{2}-[0-9a-fA-F]{32}-[0-9a-fA-F]{16}-[0-9a-fA-F]{2}",
)

# Ids of every kind a client sends (calibrate's probes, the tests' client session), so which
# ones a provider answers back tells which of ECHO_PATTERNS is its rule: each answers a
# different set of them back.
CLIENT_IDS = (
    "0f8fad5b-d9cb-469f-a165-70867728950e",
    "9f86d081884c7d659a2feaa0c55ad015",
    "client-test-0001",
    "test.case_1.attempt",
    "a:b",
    "id@{weird}/x",
)

Cite = Callable[..., str]


def _request_header(s: Seen, name: str) -> str | None:
    for header, value in s.item.headers:
        if header.lower() == name:
            return value
    return None


def _rated(s: Seen) -> bool:
    return any(name in s.headers for name in _RATE_HEADERS)


def _stage(answered: list[Seen], refused_without_key: list[Seen]) -> tuple[str, Seen] | None:
    """Where a provider makes an answer: from a keyless caller's answer, and its figures."""
    anonymous = [s for s in answered if not s.keyed]
    if anonymous:
        shown = anonymous[0]
        return ("counted" if _rated(shown) else "gateway"), shown
    if refused_without_key:
        return "authenticated", refused_without_key[0]
    if answered:
        shown = answered[0]
        return ("authenticated" if _rated(shown) else "gateway"), shown
    return None


class HttpLearner:
    """Settles the ``http`` section (and the request-id echo) from a recording's exchanges."""

    def __init__(
        self, seen: list[Seen], result: Calibration, base: str, cite: Cite, notes: bool = True
    ) -> None:
        self.seen = seen
        self.result = result
        self.base = base
        self.cite = cite
        self.notes = notes  # list what stays open (not for calibrate's own probes)
        self.explained: set[int] = set()  # exchanges it explains that calibrate said it did not
        self.advisories = AdvisoryLearner(seen, result, cite)

    def handled_headers(self) -> frozenset[str]:
        """The response headers this learner settles (no constant header stands for them):
        ``Last-Modified``, the ``Access-Control-*`` ones, and the advisory header."""
        names = {"last-modified"}
        if any(
            self._preflight(s)
            and 200 <= s.status < 300
            and "access-control-allow-origin" in s.headers
            and "access-control-allow-methods" in s.headers
            for s in self.seen
        ):
            # A provider that allows preflights (a 2xx naming the methods): its
            # Access-Control-* are CORS's, not constant headers. One without CORS may send
            # them as constants, on a preflight's 405 or 401 too.
            for s in self.seen:
                names.update(name for name in s.headers if name.startswith("access-control-"))
        return frozenset(names | self.advisories.handled_headers())

    @staticmethod
    def _preflight(s: Seen) -> bool:
        return (
            s.item.method == "OPTIONS"
            and _request_header(s, "origin") is not None
            and _request_header(s, "access-control-request-method") is not None
        )

    def _open(self, text: str) -> None:
        if self.notes:
            self.result.open(text)

    def run(self) -> None:
        self.conditional()
        self.compression()
        self.cors()
        self.options_and_allow()
        self.trailing_slash()
        self.advisory()
        self.echo()

    # -- conditional reads ---------------------------------------------------------

    def conditional(self) -> None:
        result, cite = self.result, self.cite
        conditional, plain = [], []
        strong_cases: list[tuple[Seen, Seen]] = []
        for operation in _READS:
            reads = [
                s
                for s in self.seen
                if s.facts.operation == operation and s.item.method in ("GET", "HEAD")
            ]
            asked = [
                s
                for s in reads
                if _request_header(s, "if-none-match") or _request_header(s, "if-modified-since")
            ]
            answered = [s for s in asked if s.status == 304]
            ignored = [
                s
                for s in asked
                if s.status == 200
                and (tag := s.headers.get("etag")) is not None
                and _names(_request_header(s, "if-none-match") or "", tag)
            ]
            exact = [
                s
                for s in answered
                if "etag" in s.headers
                and (_request_header(s, "if-none-match") or "*").strip() != "*"
            ]
            if (
                exact
                and ignored
                and all(
                    _names(_request_header(s, "if-none-match") or "", s.headers["etag"], True)
                    for s in exact
                )
                and not any(
                    _names(_request_header(s, "if-none-match") or "", s.headers["etag"], True)
                    for s in ignored
                )
            ):
                # Every 304 named the tag exactly, every full answer only its other form
                # (W/ of a strong tag): If-None-Match compared strongly.
                strong_cases.append((exact[0], ignored[0]))
            elif answered and ignored:
                result.cannot(
                    f"{operation} answers a request that names its current ETag both 304 and in "
                    f"full: {cite(answered[0], 'ETag', code=False)}; "
                    + cite(ignored[0], "ETag", code=False)
                )
            if answered:
                conditional.append((operation, answered[0]))
                self.explained.update(s.index for s in answered)
            elif ignored:
                plain.append((operation, ignored[0]))
        if strong_cases:
            matched, full = strong_cases[0]
            result.set(
                "http.conditional.comparison",
                "strong",
                cite(matched, "ETag", code=False, note="304 for the same tag"),
                cite(full, "ETag", code=False, note="200 for its weak form"),
            )
        if conditional:
            result.set(
                "http.conditional.operations",
                [operation for operation, _ in conditional],
                *(cite(s, "ETag", code=False, note="304 Not Modified") for _, s in conditional),
            )
        elif plain:
            result.confirm("http.conditional.operations")
        elif any(s.facts.operation in _READS for s in self.seen):
            self._open(
                "http.conditional: no read of the recording sends If-None-Match or "
                "If-Modified-Since (every read answered in full is kept)"
            )
        dated = []
        for operation in _READS:
            shown = next(
                (
                    s
                    for s in self.seen
                    if s.facts.operation == operation
                    and s.status == 200
                    and s.item.method == "GET"
                    and "last-modified" in s.headers
                ),
                None,
            )
            if shown is not None:
                dated.append((operation, shown))
        if dated:
            result.set(
                "http.conditional.last_modified",
                [operation for operation, _ in dated],
                *(cite(s, "Last-Modified", code=False) for _, s in dated),
            )
            self._pets_modified()

    def _pets_modified(self) -> None:
        """The instant the pets that existed before the recording date from."""
        created = {
            s.body["id"]
            for s in self.seen
            if s.facts.operation == "createPet"
            and s.status == 201
            and isinstance(s.body, dict)
            and isinstance(s.body.get("id"), int)
        }
        instants: dict[float, Seen] = {}
        for s in self.seen:
            if s.status != 200 or "last-modified" not in s.headers:
                continue
            shown = s.body if isinstance(s.body, list) else [s.body]
            ids = [pet.get("id") for pet in shown if isinstance(pet, dict)]
            if not ids or any(pet_id in created for pet_id in ids):
                continue
            instant = http_date(s.headers["last-modified"])
            if instant is None:
                continue
            # Never after the answer's own Date: an instant capped there is no pet's.
            date = http_date(s.headers.get("date", ""))
            if date is not None and instant >= date:
                continue
            instants.setdefault(instant - round(s.header_offset), s)
        if not instants:
            return
        latest = max(instants)
        if len(instants) > 1:
            self.result.cannot(
                "the pets that existed before the recording date from "
                f"{len(instants)} instants: one instant for them all is what a scenario states; "
                f"written as the latest: {self.cite(instants[latest], 'Last-Modified', code=False)}"
            )
        self.result.set(
            "http.conditional.pets_modified",
            format_time(latest),
            self.cite(instants[latest], "Last-Modified", code=False),
        )

    # -- content coding ------------------------------------------------------------

    def compression(self) -> None:
        result, cite = self.result, self.cite
        coded = [
            s
            for s in self.seen
            if s.headers.get("content-encoding")
            and s.item.method != "HEAD"
            and s.item.response_body
        ]
        codings: Counter[str] = Counter()
        for s in coded:
            coding = s.headers["content-encoding"].strip().lower()
            if coding in ("gzip", "deflate"):
                codings[coding] += 1
            else:
                result.cannot(
                    f"answers are sent in the content coding {coding!r}, which mockstore does not "
                    "write (gzip and deflate): " + cite(s, "Content-Encoding", code=False)
                )
        accepting = [
            s for s in self.seen if _request_header(s, "accept-encoding") and s.item.response_body
        ]
        if not codings:
            if accepting:
                result.confirm("http.compression.encodings")
            return
        # The provider's order: as first seen, unless a request that accepted both alike
        # shows which it prefers.
        order = list(dict.fromkeys(s.headers["content-encoding"].strip().lower() for s in coded))
        order = [coding for coding in order if coding in codings]
        for s in coded:
            sent = (_request_header(s, "accept-encoding") or "").lower()
            chosen = s.headers["content-encoding"].strip().lower()
            if all(c in sent for c in ("gzip", "deflate")) and ";q=" not in sent.replace(" ", ""):
                order.sort(key=lambda c: c != chosen)  # an equal choice: the provider's first
                break
        first = next(s for s in coded if s.headers["content-encoding"].lower() == order[0])
        result.set("http.compression.encodings", order, cite(first, "Content-Encoding", code=False))
        smallest = min(coded, key=lambda s: len(s.item.response_body))
        as_is = [
            s
            for s in accepting
            if not s.headers.get("content-encoding")
            and s.status not in (204, 304)
            and any(c in (_request_header(s, "accept-encoding") or "").lower() for c in order)
        ]
        largest = max(as_is, key=lambda s: len(s.item.response_body), default=None)
        low = len(largest.item.response_body) + 1 if largest is not None else 0
        high = len(smallest.item.response_body)
        if low > high:
            result.cannot(
                f"a body of {high} bytes was coded and one of {low - 1} was not, though its "
                "request accepted the coding: " + cite(smallest, "Content-Encoding", code=False)
            )
        else:
            value = _roundest(low, high)
            result.set(
                "http.compression.min_bytes",
                value,
                cite(smallest, "Content-Encoding", code=False,
                     note=f"{high} bytes coded, {low - 1} sent as they are"),
            )  # fmt: skip
            if low != high:
                result.estimate(
                    "http.compression.min_bytes",
                    f"http.compression.min_bytes is {low} to {high} bytes: written as {value}",
                )
        varied = [s for s in coded if "accept-encoding" in s.headers.get("vary", "").lower()]
        result.set(
            "http.compression.vary",
            bool(varied),
            cite(varied[0] if varied else coded[0], "Vary", code=False),
        )

    # -- CORS, OPTIONS, Allow, a trailing slash -------------------------------------

    def cors(self) -> None:
        preflights = [s for s in self.seen if self._preflight(s)]
        if not preflights:
            if self.seen:
                self._open("http.cors: the recording has no CORS preflight (no CORS kept)")
            return
        self.explained.update(learn_cors(preflights, self.seen, self.result, self.cite, _stage))

    def options_and_allow(self) -> None:
        result, cite = self.result, self.cite
        # A preflight to a path CORS does not cover is answered as a plain OPTIONS is.
        plain = [
            s
            for s in self.seen
            if s.item.method == "OPTIONS"
            and (
                not _request_header(s, "access-control-request-method")
                or ("allow" in s.headers and "access-control-allow-origin" not in s.headers)
            )
        ]
        served = [s for s in plain if 200 <= s.status < 300 and "allow" in s.headers]
        if served:
            stage = _stage(served, [s for s in plain if s.status == 401 and not s.keyed])
            shown = served[0]
            result.set("http.options.serve", True, cite(shown, "Allow", code=False))
            result.set("http.options.status", shown.status, cite(shown, "Allow", code=False))
            if stage is not None:
                result.set("http.options.stage", stage[0], cite(stage[1], code=False))
        elif any(s.status == 405 for s in plain if s.keyed):
            result.confirm("http.options.serve")
        documented = _ROUTER.paths
        head = result.value("behaviour.serve_head", True)
        overrides: dict[str, str] = {}
        evidence: list[str] = []
        for s in self.seen:
            if s.status != 405 or "allow" not in s.headers:
                continue
            template = _template(s.path)
            if template is None or template in overrides:
                continue
            given = _methods(s.headers["allow"])
            expected = _methods(documented[template])
            if head is False or (isinstance(head, list) and _operation(template) not in head):
                expected.discard("HEAD")
            if served:
                expected.add("OPTIONS")
            if given != expected:
                overrides[template] = ", ".join(
                    m.strip() for m in s.headers["allow"].split(",") if m.strip()
                )
                evidence.append(cite(s, "Allow", code=False))
        if overrides:
            result.set("http.allow", overrides, *evidence)

    def trailing_slash(self) -> None:
        result, cite = self.result, self.cite
        slashed = [
            s
            for s in self.seen
            if len(s.path) > 1
            and s.path.endswith("/")
            and _template(s.path.rstrip("/")) is not None
            and s.status not in (401, 429)
        ]
        if not slashed:
            return
        redirected = [s for s in slashed if 300 <= s.status < 400 and "location" in s.headers]
        answered = [s for s in slashed if 200 <= s.status < 300]
        if redirected:
            shown = redirected[0]
            location = shown.headers["location"]
            value: dict[str, Any] = {
                "answer": "redirect",
                "status": shown.status,
                "location": "url" if re.match(r"https?://", location) else "path",
            }
            stage = _stage(redirected, [s for s in self.seen if s in slashed and s.status == 401])
            if stage is not None:
                value["stage"] = stage[0]
            for name, setting in value.items():
                result.set(
                    f"http.trailing_slash.{name}", setting, cite(shown, "Location", code=False)
                )
        elif answered:
            result.set("http.trailing_slash.answer", "serve", cite(answered[0], code=False))
        elif all(s.status == 404 for s in slashed):
            result.confirm("http.trailing_slash.answer")

    # -- advisory headers and the request-id echo ----------------------------------

    def advisory(self) -> None:
        self.advisories.run()

    def echo(self) -> None:
        """``behaviour.request_id.echo``: which ids a client sent came back."""
        result, cite = self.result, self.cite
        name = result.value("behaviour.request_id.header")
        if not isinstance(name, str):
            return
        lowered = name.lower()
        # A trace context goes on with a span of the provider's: the trace id is what comes back.
        trace = result.value("behaviour.request_id.format") == "traceparent"
        patterns = TRACE_PATTERNS if trace else ECHO_PATTERNS
        back, refused = [], []
        for s in self.seen:
            sent = _request_header(s, lowered)
            answered = s.headers.get(lowered)
            if sent is None or answered is None:
                continue
            kept = (
                trace_of(sent) is not None and trace_of(sent) == trace_of(answered)
                if trace
                else answered == sent
            )
            (back if kept else refused).append((sent, s))
        if not back and not refused:
            self._open(f"behaviour.request_id.echo: no request of the recording sends {name}")
            return
        if not back:
            result.set(
                "behaviour.request_id.echo",
                None,
                cite(
                    refused[0][1], name, code=False, note="a request's own id is not answered back"
                ),
            )
            return
        fitting = [
            pattern
            for pattern in patterns
            if all(re.fullmatch(pattern, sent) for sent, _ in back)
            and not any(re.fullmatch(pattern, sent) for sent, _ in refused)
        ]
        if not fitting:
            result.cannot(
                f"the {name} ids a client gets back fit none of the patterns calibrate knows: "
                + cite(back[0][1], name, code=False)
            )
            return
        evidence = [cite(back[0][1], name, code=False, note="its own id answered back")]
        if refused:
            evidence.append(
                cite(refused[0][1], name, code=False, note="its own id not answered back")
            )
        result.set("behaviour.request_id.echo", fitting[0], *evidence)
        if len(fitting) > 1:
            result.estimate(
                "behaviour.request_id.echo",
                f"behaviour.request_id.echo: {len(fitting)} patterns fit the ids the recording "
                f"shows; written as the narrowest, {fitting[0]}",
            )


def _names(header: str, etag: str, strong: bool = False) -> bool:
    """Whether ``If-None-Match: header`` names ``etag``, compared weakly (or ``strong``ly:
    both strong and the same)."""
    if strong:
        return not etag.strip().startswith("W/") and any(
            tag.strip() == etag.strip() for tag in header.split(",")
        )
    wanted = etag.strip().removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == wanted for tag in header.split(","))


def _roundest(low: int, high: int) -> int:
    """The roundest size from ``low`` to ``high``: a power of two or of ten, else ``low``."""
    for size in sorted(
        {2**k for k in range(4, 27)} | {10**k * m for k in range(1, 8) for m in (1, 2, 5)}
    ):
        if low <= size <= high:
            return size
    return low


_TEMPLATES = [(template, compile_path(template)) for template in _ROUTER.paths]


def _template(relative: str) -> str | None:
    """The document's path template a relative path is (None: none)."""
    return next((t for t, pattern in _TEMPLATES if pattern.match(relative)), None)


def _methods(allow: str) -> set[str]:
    return {m.strip().upper() for m in allow.split(",") if m.strip()}


def _operation(template: str) -> str | None:
    for operation in operations().values():
        if operation.path == template and operation.method == "GET":
            return operation.operation_id
    return None


__all__ = ["CLIENT_IDS", "ECHO_PATTERNS", "TRACE_PATTERNS", "HttpLearner"]
