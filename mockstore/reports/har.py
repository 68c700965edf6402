"""The journal as HAR 1.2, and HAR read back for replay.

HAR (http://www.softwareishard.com/blog/har-12-spec/) is what browsers'
developer tools, proxies and many API tools read, so a recorded session can be
inspected anywhere. Times are the mock's *scenario* time: a session recorded
on a virtual clock shows the virtual dates. What HAR has no field for goes in
``_mockstore`` objects (custom fields start with ``_`` in HAR): the journal's
sequence number, the exact scenario time and elapsed seconds, the client
address, the scenario rule that fired and the outcome (a response, or a
connection fault), which is what a replay needs to be exact.

Bearer tokens are masked by default, because HARs end up in bug reports and CI
artefacts (browsers' developer tools export sanitized HARs for the same reason),
and a client pointed at the mock by mistake may have sent a real key. Each token
becomes its stable alias (``keys.key_alias``: ``key-`` and eight hex digits of
its SHA-256, e.g. ``key-3f2a1c9b``), the same alias ``mockstore record``
journals: the same key gets the same alias in every export and every recording,
and the key cannot be read back. ``mask=False`` keeps the tokens as sent.

A HAR carries the scenario's source, so ``mockstore replay FILE.har`` needs
nothing else: the scenario's own keys are matched to their aliases by computing
them again, keys issued during the session are listed (by alias, with their
plans) and issued afresh, and any other token stays unknown.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from mockstore.journal import Entry, decode_headers
from mockstore.keys import key_alias


class HarError(ValueError):
    """The file is not a HAR this module can read."""


@dataclass(frozen=True)
class HarMeta:
    """What the HAR says about the recording as a whole."""

    creator_version: str = "0.0.0"
    scenario: str = ""
    seed: int = 0
    base_path: str = "/v1"
    clock_mode: str = "running"
    issued_keys: tuple[dict[str, Any], ...] = ()
    dropped: int = 0
    mask: bool = True
    scenario_source: str = ""
    scenario_file: str = ""


# A HAR of a full journal names the same few keys thousands of times.
_alias = lru_cache(maxsize=4096)(key_alias)
# How a masked HAR writes its tokens, so that a replay can match them again.
ALIASES = "key_alias:sha256:8"


def _masked_headers(headers: Any) -> list[list[str]]:
    """Headers with each credential replaced by its alias (the scheme kept as sent)."""
    out = decode_headers(headers)
    for pair in out:
        if pair[0].lower() == "authorization":
            scheme, _, token = pair[1].partition(" ")
            token = token.strip()
            pair[1] = f"{scheme} {_alias(token)}" if token else _alias(scheme)
    return out


def _masked_plan(plan: str | None, key: str | None) -> str | None:
    """A key's own inline plan is named after the key (``custom:<key>``): alias it too."""
    if plan is not None and key is not None and plan == f"custom:{key}":
        return f"custom:{_alias(key)}"
    return plan


def _masked_key(key: dict[str, Any]) -> dict[str, Any]:
    shown = dict(key)
    secret = str(key.get("key"))
    shown["key"] = _alias(secret)
    shown["plan"] = _masked_plan(key.get("plan"), secret)
    # An issued key's tenant defaults to the key itself: alias it the same way, so
    # keys that shared a tenant still share one.
    if key.get("tenant"):
        shown["tenant"] = _alias(str(key["tenant"]))
    return shown


def iso_time(when: float) -> str:
    """Unix seconds as HAR's ``startedDateTime`` (ISO 8601, milliseconds, UTC)."""
    text = datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def _status_text(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _text(body: bytes) -> tuple[str, str | None]:
    """(text, encoding): UTF-8 text as is, anything else base64 (HAR's ``encoding``)."""
    try:
        return body.decode("utf-8"), None
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), "base64"


def _first(headers: list[list[str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


_PATH_SAFE = "/:@!$&'()*+,;=-._~"


def _har_entry(entry: Entry, masked: bool) -> dict[str, Any]:
    request_headers = (
        _masked_headers(entry.request_headers) if masked else decode_headers(entry.request_headers)
    )
    response_headers = decode_headers(entry.response_headers)
    query = entry.query.decode("latin-1")
    host = _first(request_headers, "host") or "mockstore"
    # The journal keeps the decoded path; quote it back so the URL is a URL.
    url = f"http://{host}{quote(entry.path, safe=_PATH_SAFE)}" + (f"?{query}" if query else "")

    declared = _first(request_headers, "content-length")
    request_size = int(declared) if declared and declared.isdigit() else len(entry.request_body)
    request: dict[str, Any] = {
        "method": entry.method,
        "url": url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": [{"name": k, "value": v} for k, v in request_headers],
        "queryString": [
            {"name": k, "value": v} for k, v in parse_qsl(query, keep_blank_values=True)
        ],
        "headersSize": -1,
        "bodySize": request_size if entry.request_body or declared else 0,
    }
    if entry.request_body:
        text, encoding = _text(entry.request_body)
        post: dict[str, Any] = {
            "mimeType": _first(request_headers, "content-type") or "",
            "text": text,
        }
        if encoding:
            post["_encoding"] = encoding
        request["postData"] = post

    broken = entry.status == 0
    length = _first(response_headers, "content-length")
    size = int(length) if length and length.isdigit() else len(entry.response_body)
    text, encoding = _text(entry.response_body)
    content: dict[str, Any] = {
        "size": size,
        "mimeType": _first(response_headers, "content-type") or "",
        "text": text,
    }
    if encoding:
        content["encoding"] = encoding
    response = {
        "status": entry.status,
        "statusText": "" if broken else _status_text(entry.status),
        "httpVersion": "" if broken else "HTTP/1.1",
        "cookies": [],
        "headers": [{"name": k, "value": v} for k, v in response_headers],
        "content": content,
        "redirectURL": _first(response_headers, "location") or "",
        "headersSize": -1,
        "bodySize": -1 if broken else size,
    }
    if broken:
        response["_error"] = entry.outcome
    latency = round(entry.latency_ms, 3)
    return {
        "startedDateTime": iso_time(entry.time),
        "time": latency,
        "request": request,
        "response": response,
        "cache": {},
        "timings": {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "send": 0,
            "wait": latency,
            "receive": 0,
            "ssl": -1,
        },
        "_mockstore": {
            "seq": entry.seq,
            "request_id": entry.request_id,
            "time": entry.time,
            "wall": entry.wall,
            "elapsed": entry.elapsed,
            "client": entry.client,
            "operation": entry.operation,
            "plan": _masked_plan(entry.plan, entry.key) if masked else entry.plan,
            "rule": entry.rule,
            "outcome": entry.outcome,
            "request_truncated": len(entry.request_body) < request_size,
            "response_truncated": len(entry.response_body) < size,
        },
    }


def to_har(entries: Sequence[Entry], meta: HarMeta | None = None) -> dict[str, Any]:
    """A HAR 1.2 document of ``entries`` (journal order)."""
    document = har_shell(entries, meta)
    document["log"]["entries"] = [
        har_entry(e, document["log"]["_mockstore"]["masked"]) for e in entries
    ]
    return document


def har_entry(entry: Entry, masked: bool = True) -> dict[str, Any]:
    """One journal entry as a HAR entry (its token masked unless ``masked`` is False)."""
    return _har_entry(entry, masked)


def har_shell(entries: Sequence[Entry], meta: HarMeta | None = None) -> dict[str, Any]:
    """The HAR document of ``entries`` without them: ``log.entries`` is empty.

    For a document written a piece at a time (the control API streams a HAR
    rather than hold a full journal's three times over): the shell, then each
    ``har_entry`` in its place.
    """
    meta = meta or HarMeta()
    keys = [_masked_key(k) if meta.mask else dict(k) for k in meta.issued_keys]
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "mockstore", "version": meta.creator_version},
            "pages": [],
            "entries": [],
            "comment": f"mockstore journal, scenario {meta.scenario!r} (scenario time)",
            "_mockstore": {
                "scenario": meta.scenario,
                "seed": meta.seed,
                "base_path": meta.base_path,
                "clock_mode": meta.clock_mode,
                "issued_keys": keys,
                "dropped": meta.dropped,
                "masked": meta.mask,
                # How masked tokens were written, so a replay can match them again.
                "aliases": ALIASES if meta.mask else None,
                "scenario_file": meta.scenario_file,
                "scenario_source": meta.scenario_source,
                "first_seq": entries[0].seq if entries else None,
                "last_seq": entries[-1].seq if entries else None,
            },
        }
    }


# -- reading ----------------------------------------------------------------


@dataclass
class Recorded:
    """One exchange of a HAR, as replay needs it."""

    index: int
    seq: int | None
    request_id: str | None
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    time: float
    elapsed: float | None
    client: str
    status: int
    response_headers: list[tuple[str, str]]
    response_body: bytes
    response_size: int
    outcome: str
    request_truncated: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    # Seconds from the request to its answer (HAR's ``time``; None: not recorded): the
    # answering service's own instant lies within it.
    latency: float | None = None
    # How long the answer took, in milliseconds (HAR ``time``, else ``timings.wait``): what
    # ``calibrate`` learns a scenario's latency from; None when the HAR does not say.
    duration_ms: float | None = None

    @property
    def wall(self) -> float:
        """The wall-clock time of the exchange (the scenario time when not recorded)."""
        wall = self.extra.get("wall")
        return float(wall) if isinstance(wall, int | float) else self.time

    @property
    def response_truncated(self) -> bool:
        return len(self.response_body) < self.response_size

    def describe(self) -> str:
        target = self.path + (f"?{self.query}" if self.query else "")
        where = f"#{self.seq}" if self.seq is not None else f"entry {self.index + 1}"
        rid = f" ({self.request_id})" if self.request_id else ""
        return f"{where} {self.method} {target}{rid}"


def _decode(text: str, encoding: str | None, limit: int | None = None) -> bytes:
    """A HAR body's bytes; with ``limit``, at most that many (the text cut before it is decoded)."""
    if limit is not None:
        # Every byte is at least one character of text (base64: 4 for 3): cut
        # the text first, so a huge string is never encoded or decoded whole.
        keep = -(-limit // 3) * 4 if encoding == "base64" else limit
        if len(text) > keep:
            text = text[:keep]
    if encoding == "base64":
        try:
            decoded = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise HarError(f"a base64 body does not decode: {exc}") from exc
    else:
        decoded = text.encode("utf-8")
    return decoded if limit is None else decoded[:limit]


def _parse_started(value: Any, where: str) -> float:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise HarError(f"{where}: startedDateTime {value!r} is not ISO 8601") from exc


# The longest URL, method or header a HAR entry is read with: four times the
# most a mock takes in a whole request head (16 KiB); longer is no request a
# server would read, and replaying it would only copy it many times over.
MAX_HAR_FIELD = 64 * 1024


def _field(value: Any, where: str) -> str:
    text = str(value)
    if len(text) > MAX_HAR_FIELD:
        raise HarError(
            f"{where} is {len(text):,} characters long, over the {MAX_HAR_FIELD:,} a request's "
            "line or header may have here"
        )
    return text


def _pairs(items: Any, where: str) -> list[tuple[str, str]]:
    if not isinstance(items, list):
        raise HarError(f"{where} must be a list")
    pairs = []
    for item in items:
        if not isinstance(item, dict) or "name" not in item or "value" not in item:
            raise HarError(f"{where}: each header needs a name and a value")
        pairs.append((_field(item["name"], where), _field(item["value"], where)))
    return pairs


def read_har(document: Any, body_limit: int | None = None) -> list[Recorded]:
    """The exchanges of a HAR document in file order; raises ``HarError``.

    ``body_limit``: a longer body is read cut to it, and marked cut short.
    """
    if not isinstance(document, dict) or not isinstance(document.get("log"), dict):
        raise HarError("not a HAR file: no 'log' object")
    log = document["log"]
    entries = log.get("entries")
    if not isinstance(entries, list):
        raise HarError("not a HAR file: 'log.entries' is not a list")
    recorded = []
    for index, raw in enumerate(entries):
        where = f"log.entries[{index}]"
        try:
            recorded.append(_entry(index, raw, where, body_limit))
        except HarError:
            raise
        except (AttributeError, KeyError, OverflowError, TypeError, ValueError) as exc:
            # A field of the wrong type somewhere in the entry: still a sentence.
            raise HarError(f"{where}: not a HAR entry ({type(exc).__name__}: {exc})") from exc
    return recorded


def _entry(index: int, raw: Any, where: str, limit: int | None = None) -> Recorded:
    """One entry of ``log.entries``; raises ``HarError`` (or a lookup error) if it is not one."""
    try:
        request, response = raw["request"], raw["response"]
        method = _field(request["method"], f"{where}.request.method")
        url = _field(request["url"], f"{where}.request.url")
        status = int(response["status"])
    except (KeyError, TypeError, ValueError) as exc:
        raise HarError(f"{where}: missing or invalid request/response ({exc})") from exc
    extra = raw.get("_mockstore")
    if not isinstance(extra, dict):
        extra = {}
    parts = urlsplit(url)
    post = request.get("postData") or {}
    content = response.get("content") or {}
    sent = str(post.get("text", "")) if post else ""
    body = _decode(sent, post.get("_encoding"), limit) if post else b""
    answered = str(content.get("text", ""))
    response_body = _decode(answered, content.get("encoding"), limit)
    size = content.get("size", len(response_body))
    cut = limit is not None and len(response_body) == limit and len(answered) > limit
    if cut and not (isinstance(size, int) and size > len(response_body)):
        size = len(response_body) + 1  # read as cut short, whatever it claimed
    request_cut = limit is not None and len(body) == limit and len(sent) > limit
    when = extra.get("time")
    if not isinstance(when, int | float):
        when = _parse_started(raw.get("startedDateTime"), where)
    wall = extra.get("wall")
    if not math.isfinite(when) or (isinstance(wall, int | float) and not math.isfinite(wall)):
        raise HarError(f"{where}: its time is not a finite number")
    outcome = extra.get("outcome") or ("response" if status else "connection_error")
    elapsed = extra.get("elapsed")
    return Recorded(
        index=index,
        seq=extra.get("seq"),
        request_id=extra.get("request_id"),
        method=method,
        path=unquote(parts.path) or "/",
        query=parts.query,
        headers=_pairs(request.get("headers", []), f"{where}.request.headers"),
        body=body,
        time=float(when),
        elapsed=float(elapsed) if isinstance(elapsed, int | float) else None,
        client=str(extra.get("client") or "127.0.0.1"),
        status=status,
        response_headers=_pairs(response.get("headers", []), f"{where}.response.headers"),
        response_body=response_body,
        response_size=int(size) if isinstance(size, int) and size >= 0 else 0,
        outcome=str(outcome),
        request_truncated=bool(extra.get("request_truncated", False)) or request_cut,
        extra=extra,
        latency=_seconds(raw.get("time")),
        duration_ms=_duration(raw),
    )


def _duration(raw: dict[str, Any]) -> float | None:
    """An entry's answer time in milliseconds: ``time``, else ``timings.wait`` (-1: unknown)."""
    timings = raw.get("timings")
    for value in (raw.get("time"), timings.get("wait") if isinstance(timings, dict) else None):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and math.isfinite(value) and value >= 0:  # type: ignore[arg-type]
            return float(value)  # type: ignore[arg-type]
    return None


def _seconds(milliseconds: Any) -> float | None:
    """HAR's ``time`` (milliseconds) as seconds, when it is a finite number from 0 to a day."""
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, int | float):
        return None
    if not math.isfinite(milliseconds) or not 0 <= milliseconds <= 86_400_000:
        return None
    return milliseconds / 1000


def har_meta(document: dict[str, Any]) -> dict[str, Any]:
    """The ``log._mockstore`` object of a HAR mockstore wrote (empty for others)."""
    log = document.get("log") if isinstance(document, dict) else None
    meta = log.get("_mockstore") if isinstance(log, dict) else None
    return meta if isinstance(meta, dict) else {}
