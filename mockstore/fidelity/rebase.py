"""URLs on a service's own address: moved to another base, or written relative to it.

A service behind ``mockstore record`` writes absolute URLs to itself in
``Location``, ``Content-Location`` and ``Link`` (a redirect, a created pet, the
next page). Passed on unchanged, they send a client past the recorder, straight
to the upstream, and out of the recording. So the recorder rewrites them as a
reverse proxy's reverse mapping does (Apache's ``ProxyPassReverse``, nginx's
``proxy_redirect``): a URL under the upstream's base (``http://10.0.0.7:9000/api``,
the part before the version segment) is written under the address the client
called (``http://127.0.0.1:8080``), the rest of it kept. Any other URL (another
host, a documentation page) is left as it is.

A recording keeps what the upstream sent; ``drift`` and ``calibrate`` read such
URLs relative to the service's own base instead: ``http://10.0.0.7:9000/api/v1/pets``
is ``/v1/pets``, as the mock's ``http://127.0.0.1:8080/v1/pets`` is. So a recording
compares with a mock on any host and port, and a calibrated scenario never holds
the recorded host and port.

Pure functions of header values: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

# The headers whose values are (or hold) URI references (RFC 9110 10.2.2, 8.7; RFC 8288).
URL_HEADERS = frozenset({"location", "content-location", "link"})
_URL_HEADER_BYTES = frozenset(name.encode() for name in URL_HEADERS)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LINK_TARGET = re.compile(r"<([^<>]*)>")
# What a Host header may hold: a name or an IPv4 address, or a bracketed IPv6 one, and a port.
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$")


@dataclass(frozen=True)
class Base:
    """Where a service's paths start: its origin (``http://host:port``, normalised) and the
    path before the version segment (``""`` or ``/api``)."""

    origin: str
    prefix: str = ""


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an absolute http(s) URL, normalised (lower case, no
    default port), or None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    shown = f":{port}" if port is not None and port != _DEFAULT_PORTS[scheme] else ""
    return f"{scheme}://{host}{shown}"


def base_of(url: str) -> Base | None:
    """The ``Base`` of a base URL ending in its version segment (``http://h:9000/api/v1``)."""
    found = origin_of(url)
    if found is None:
        return None
    path = urlsplit(url.strip()).path.rstrip("/")
    return Base(found, path.rpartition("/")[0])


def own_base(scheme: str, host: str | None) -> Base | None:
    """The base a client addressed (the scheme and its ``Host`` header), if ``host`` is one."""
    if host is None or not _HOST.match(host.strip()):
        return None
    return base_of(f"{scheme}://{host.strip()}/v1")


def _moved(reference: str, source: Base, target: Base) -> str:
    """``reference`` under ``target`` if it is an absolute URL under ``source``, else as is."""
    text = reference.strip()
    found = origin_of(text)
    if found is None or found != source.origin:
        return reference
    parts = urlsplit(text)
    path = parts.path
    if source.prefix and path != source.prefix and not path.startswith(source.prefix + "/"):
        return reference  # on the upstream's host, outside what the recorder serves
    rest = path[len(source.prefix) :] or "/"
    query = f"?{parts.query}" if parts.query else ""
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{target.origin}{target.prefix}{rest}{query}{fragment}"


def rebase(name: str, value: str, source: Base, target: Base) -> str:
    """Header ``name``'s ``value`` with every URL under ``source`` moved under ``target``.

    ``Location`` and ``Content-Location`` hold one reference; ``Link`` one per ``<...>``
    (its parameters kept as they are). Other headers are returned unchanged.
    """
    lowered = name.lower()
    if lowered not in URL_HEADERS:
        return value
    if lowered == "link":
        return _LINK_TARGET.sub(lambda m: f"<{_moved(m.group(1), source, target)}>", value)
    return _moved(value, source, target)


def relative_to_own(name: str, value: str, own: Base | None) -> str:
    """``value`` with every URL on the service's ``own`` base written as a path under it.

    What ``drift`` compares and ``calibrate`` writes: ``<http://h:9000/api/v1/pets>`` is
    ``</v1/pets>`` for a service whose base is ``http://h:9000/api``.
    """
    if own is None:
        return value
    return rebase(name, value, own, Base(""))


def on_own_address(
    scope: dict[str, Any], headers: list[tuple[bytes, bytes]], upstream: Base
) -> list[tuple[bytes, bytes]]:
    """An upstream's answer ``headers`` as the recorder passes them on: its URLs to itself
    written on the address the client called (the request's scheme and ``Host``)."""
    host = next((value for name, value in scope["headers"] if name == b"host"), None)
    own = own_base(scope.get("scheme", "http"), host.decode("latin-1") if host else None)
    if own is None or own == upstream:
        return headers
    return [
        (name, rebase(name.decode(), value.decode("latin-1"), upstream, own).encode("latin-1"))
        if name in _URL_HEADER_BYTES
        else (name, value)
        for name, value in headers
    ]


__all__ = [
    "URL_HEADERS",
    "Base",
    "base_of",
    "on_own_address",
    "origin_of",
    "own_base",
    "rebase",
    "relative_to_own",
]
