"""The formats of the headers a client reads, as a real deployment may write them.

``drift`` compares a recorded header with the mock's by format, and
``calibrate`` reads the same formats off a live service to choose a scenario
setting: both classify a value with the functions here (``X-RateLimit-Reset``,
``Retry-After``, ``Deprecation``, ``Sunset``, RFC 8941 structured fields,
``WWW-Authenticate``). Pure functions of strings.
"""

from __future__ import annotations

import re
from email.utils import parsedate_to_datetime
from functools import lru_cache


@lru_cache(maxsize=4096)
def http_date(text: str) -> float | None:
    """An HTTP-date (RFC 9110 section 5.6.7) as Unix seconds, or None (cached: dates repeat)."""
    if not re.search(r"[A-Za-z]", text) or "GMT" not in text:
        return None
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def reset_kind(value: str) -> str:
    """``X-RateLimit-Reset`` by unit: ``epoch`` (Unix seconds), ``epoch-ms`` (Unix
    milliseconds), ``delta`` (seconds from now) or ``invalid``. Seconds may have a
    fraction (``decimals`` tells how many digits), milliseconds none.

    A window is at most a day, so a count of seconds is below 10^9, a Unix time
    in seconds of this century is above it (and below 10^11, the year 5138), and
    one in milliseconds above 10^12 (September 2001).
    """
    text = value.strip()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", text):
        return "invalid"
    number = float(text)
    if number >= 1_000_000_000_000:
        return "epoch-ms" if "." not in text else "invalid"
    return "epoch" if number >= 1_000_000_000 else "delta"


def decimals(value: str) -> int:
    """How many digits after the point a figure is written with (``60.0``: 1; ``60``: 0)."""
    _, point, digits = value.strip().partition(".")
    return len(digits) if point else 0


_UUID = re.compile(
    r"(.*?)([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
)
_HEX = re.compile(r"(.*?)([0-9a-fA-F]{32})")
# A W3C trace context (version, trace id, parent id, flags): no prefix.
_TRACEPARENT = re.compile(r"()([0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2})")
_COUNTER = re.compile(r"(|.*[^0-9])([0-9]{6,})")
# Random letters and digits behind a word and a separator (Stripe's req_ ids): small
# letters mixed with capitals or digits, so that a word or a number is no id.
_ALPHANUMERIC = re.compile(r"(|[A-Za-z]{1,12}[-_.:])((?=[A-Za-z0-9]*[a-z])"
                           r"(?=[A-Za-z0-9]*[A-Z0-9])[A-Za-z0-9]{12,64})")  # fmt: skip


def id_form(value: str) -> tuple[str, str | None]:
    """A request id's prefix and kind: ``traceparent`` (a W3C trace context), ``uuid``, ``hex``
    (32 digits), ``counter`` (6+ digits)
    or ``alphanumeric`` (12 to 64 letters of both cases and digits: ``id_length`` says how many).

    ``req-000042`` is ``("req-", "counter")``; a kind none of those is None.
    """
    text = value.strip()
    kinds = (
        ("traceparent", _TRACEPARENT),
        ("uuid", _UUID),
        ("hex", _HEX),
        ("counter", _COUNTER),
        ("alphanumeric", _ALPHANUMERIC),
    )
    for kind, pattern in kinds:
        match = pattern.fullmatch(text)
        if match is not None:
            return match.group(1), kind
    return "", None


def trace_of(value: str) -> str | None:
    """The trace id of a ``traceparent`` value (lower case), or None for any other value."""
    match = _TRACEPARENT.fullmatch(value.strip().lower())
    return match.group(2)[3:35] if match is not None else None


def id_length(value: str) -> int:
    """How many characters a request id has after its prefix."""
    prefix, _ = id_form(value)
    return len(value.strip()) - len(prefix)


_ID_PREFIX = re.compile(r"[A-Za-z]{0,12}[-_.:]?")


def is_id(value: str) -> bool:
    """A value that looks like a per-answer id: an ``id_form`` behind a short word prefix.

    ``req-000042`` and a UUID are ids; ``max-age=63072000`` is not.
    """
    prefix, kind = id_form(value)
    return kind is not None and _ID_PREFIX.fullmatch(prefix) is not None


def retry_after_kind(value: str) -> str:
    """``Retry-After`` (RFC 9110 section 10.2.3): ``seconds``, ``http-date`` or ``invalid``;
    ``decimal`` for seconds with a fraction (``60.0``, Shopify's), which the RFC does not
    name but clients read."""
    text = value.strip()
    if re.fullmatch(r"[0-9]+", text):
        return "seconds"
    if re.fullmatch(r"[0-9]+\.[0-9]+", text):
        return "decimal"
    return "http-date" if http_date(value) is not None else "invalid"


def deprecation_kind(value: str) -> str:
    """``Deprecation``: ``sf-date`` (RFC 9745, ``@1767225600``), ``http-date`` or ``true``."""
    text = value.strip()
    if re.fullmatch(r"@-?[0-9]+", text):
        return "sf-date"
    if text.lower() in ("true", "?1"):
        return "true"
    return "http-date" if http_date(text) is not None else "invalid"


def deprecation_instant(value: str) -> float | None:
    text = value.strip()
    if re.fullmatch(r"@-?[0-9]+", text):
        return float(text[1:])
    return http_date(text)


_SF_KEY = r"[a-z*][a-z0-9_.*-]*"
_SF_BARE = (
    r'(?:-?[0-9]+(?:\.[0-9]+)?|"(?:[^"\\]|\\.)*"|[A-Za-z*][A-Za-z0-9:/!#$%&\'*+.^_`|~-]*|\?[01])'
)
_SF_MEMBER = re.compile(rf"({_SF_BARE})((?:;{_SF_KEY}(?:={_SF_BARE})?)*)")
_SF_PARAM = re.compile(rf";({_SF_KEY})(?:=({_SF_BARE}))?")


def sf_list(value: str) -> list[tuple[str, dict[str, str]]] | None:
    """An RFC 8941 list of items with parameters (no inner lists), or None if malformed."""
    members = []
    for raw in _split_members(value):
        match = _SF_MEMBER.fullmatch(raw.strip())
        if match is None:
            return None
        item = match.group(1).strip('"')
        params = {k: (v or "?1").strip('"') for k, v in _SF_PARAM.findall(match.group(2))}
        members.append((item, params))
    return members


def _split_members(value: str) -> list[str]:
    parts, current, quoted = [], "", False
    for char in value:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def allowed_methods(value: str) -> frozenset[str]:
    return frozenset(m.strip().upper() for m in value.split(",") if m.strip())


def auth_challenge(value: str) -> tuple[str, str | None]:
    """``WWW-Authenticate``'s scheme and ``error`` parameter (RFC 6750), lower-cased scheme."""
    scheme = value.strip().split(" ", 1)[0].lower()
    error = re.search(r'error="?([^",\s]+)"?', value)
    return scheme, error.group(1) if error else None
