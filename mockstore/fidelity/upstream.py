"""The upstream a recording proxies: its address, checked once, and what is kept of it.

``mockstore record --upstream`` and ``mockstore calibrate --target`` take the
same kind of address: an http(s) URL ending in the API's version segment
(``https://staging.example.com/v1``). ``parse_upstream`` checks it and splits
it into what the proxy needs; ``forwarded_path`` says which paths the proxy may
forward to it (only those under its base path). Light on purpose: the command
line reads the defaults below to build its parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# A recording's defaults (``mockstore record``'s options show them).
TIMEOUT = 30.0  # seconds to connect to the upstream, and for each read
BODY_BYTES = 32_768  # of each body: more than a scenario keeps, as a recording is read back


# A dot, slash or backslash hidden in percent-encoding: an upstream may decode it into a
# path segment, after the proxy decided the path stays under the base path.
_HIDDEN_SEPARATOR = re.compile(rb"%(2e|2f|5c)", re.IGNORECASE)


def forwarded_path(raw_path: bytes, base: str) -> bytes | None:
    """``raw_path`` with its dot segments resolved (RFC 3986 5.2.4), if it stays under ``base``.

    None for a path outside ``base`` after resolution, or one with a backslash
    or a percent-encoded dot, slash or backslash (which an upstream may resolve
    differently).
    """
    if b"\\" in raw_path or _HIDDEN_SEPARATOR.search(raw_path):
        return None
    segments: list[bytes] = []
    parts = raw_path.split(b"/")[1:]
    for segment in parts:
        if segment == b"..":
            if segments:
                segments.pop()
        elif segment != b".":
            segments.append(segment)
    resolved = b"/" + b"/".join(segments)
    if parts and parts[-1] in (b".", b"..") and not resolved.endswith(b"/"):
        resolved += b"/"
    prefix = base.encode()
    if resolved != prefix and not resolved.startswith(prefix + b"/"):
        return None
    return resolved


class UpstreamError(ValueError):
    """The ``--upstream`` URL cannot be proxied; the message says why."""


@dataclass(frozen=True)
class Upstream:
    """Where requests go: ``https://staging.example.com/petstore/v1``.

    ``base_path`` is the version segment the proxy serves (``/v1``); a
    request for ``/v1/pets`` goes to ``origin + prefix + /v1/pets``.
    """

    url: str
    origin: str  # scheme://host[:port]
    prefix: str  # the path before the version segment ("" or "/petstore")
    base_path: str  # "/v1"

    @property
    def shown(self) -> str:
        """The URL without any user:password part, for banners and HARs."""
        return self.origin + self.prefix + self.base_path


def parse_upstream(text: str) -> Upstream:
    """Check an ``--upstream`` URL; raises ``UpstreamError`` naming what is wrong."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamError(
            f"--upstream must be an http:// or https:// URL, got {text!r} "
            "(e.g. https://staging.example.com/v1)"
        )
    if parts.query or parts.fragment:
        raise UpstreamError(f"--upstream must not have a query or fragment: {text!r}")
    path = parts.path.rstrip("/")
    if not path:
        raise UpstreamError(
            f"--upstream must end in its version segment, e.g. {parts.scheme}://"
            f"{parts.hostname}/v1 (got {text!r})"
        )
    prefix, _, segment = path.rpartition("/")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    origin = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
    return Upstream(text.strip(), origin, prefix, "/" + segment)
