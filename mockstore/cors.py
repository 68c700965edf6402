"""Cross-origin resource sharing as the Fetch standard has a server answer it.

A scenario's provider may serve pages of other origins (``http.cors``). A
browser asks first, for a request it may not send without asking (a bearer key
makes every API call one), with a *preflight*: ``OPTIONS`` with ``Origin`` and
``Access-Control-Request-Method`` (and ``-Headers``). An allowed preflight is
answered ``preflight_status`` with ``Access-Control-Allow-Origin``,
``-Allow-Methods``, ``-Allow-Headers``, ``-Max-Age`` and ``-Allow-Credentials``;
one from an origin, for a method or with a header the provider does not allow
gets no ``Access-Control-Allow-*`` (the browser refuses), or a refusal
(``rejected_status``). Every other answer to a request with an allowed
``Origin`` carries ``Access-Control-Allow-Origin`` (and ``-Expose-Headers``,
``-Allow-Credentials``). Where the origin is named rather than ``*``, ``Vary:
Origin`` says the answer depends on it.

Pure: headers in, headers out, as (name, value) byte pairs.
"""

from __future__ import annotations

from mockstore.scenario.http_section import Cors

Header = tuple[bytes, bytes]


def _under(path: str, prefix: str) -> bool:
    if prefix == "/":
        return True
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def _exactly(path: str, template: str) -> bool:
    """Whether ``path`` is ``template``, a ``{name}`` segment standing for any one segment."""
    asked, wanted = path.rstrip("/").split("/"), template.rstrip("/").split("/")
    return len(asked) == len(wanted) and all(
        w == a or (w.startswith("{") and w.endswith("}") and a != "")
        for a, w in zip(asked, wanted, strict=True)
    )


class CorsPolicy:
    """One scenario's ``http.cors``, compiled."""

    __slots__ = (
        "_any_header",
        "_any_origin",
        "_exposed",
        "_headers",
        "_methods",
        "_origins",
        "_path_rule",
        "settings",
    )

    def __init__(self, settings: Cors) -> None:
        self.settings = settings
        self._any_origin = "*" in settings.origins
        self._origins = frozenset(origin.lower() for origin in settings.origins)
        self._methods = frozenset(settings.methods)
        self._any_header = "*" in settings.headers
        self._headers = frozenset(name.lower() for name in settings.headers)
        self._exposed = ", ".join(settings.expose_headers).encode("latin-1")
        self._path_rule = _exactly if settings.match == "exact" else _under

    def applies(self, relative: str) -> bool:
        """Whether CORS applies to a path (relative to the base path)."""
        rule = self._path_rule
        return any(rule(relative, path) for path in self.settings.paths)

    def covering(self, relative: str) -> list[str]:
        """The configured paths that put ``relative`` under CORS, as ``match`` reads them."""
        rule = self._path_rule
        return [path for path in self.settings.paths if rule(relative, path)]

    def exactly_on(self, relative: str) -> list[str]:
        """The configured paths ``relative`` is exactly (``match: exact``'s reading)."""
        return [path for path in self.settings.paths if _exactly(relative, path)]

    def allows_origin(self, origin: bytes) -> bool:
        return self._any_origin or origin.decode("latin-1").lower() in self._origins

    def _origin_headers(self, origin: bytes) -> list[Header]:
        named = self.settings.credentials or not self._any_origin
        headers: list[Header] = [(b"access-control-allow-origin", origin if named else b"*")]
        if self.settings.credentials:
            headers.append((b"access-control-allow-credentials", b"true"))
        if named:
            headers.append((b"vary", b"Origin"))
        return headers

    def preflight(
        self, origin: bytes, method: bytes, requested: bytes | None
    ) -> tuple[bool, list[Header]]:
        """(allowed, the headers of the answer) for a preflight."""
        asked = [
            name.strip().lower()
            for name in (requested or b"").decode("latin-1").split(",")
            if name.strip()
        ]
        allowed = (
            self.allows_origin(origin)
            and method.decode("latin-1") in self._methods
            and (self._any_header or all(name in self._headers for name in asked))
        )
        if not allowed:
            # Not allowed: nothing that lets the browser go on; the answer still varies.
            return False, [(b"vary", b"Origin")]
        settings = self.settings
        headers = self._origin_headers(origin)
        headers.append((b"access-control-allow-methods", ", ".join(settings.methods).encode()))
        if self._any_header and asked:
            # "*" is not a wildcard where credentials are allowed: the names asked for.
            allow = (requested or b"").strip() if settings.credentials else b"*"
            headers.append((b"access-control-allow-headers", allow))
        elif settings.headers and not self._any_header:
            headers.append(
                (b"access-control-allow-headers", ", ".join(settings.headers).encode("latin-1"))
            )
        if settings.max_age is not None:
            headers.append((b"access-control-max-age", b"%d" % settings.max_age))
        return True, headers

    def actual(self, origin: bytes) -> list[Header]:
        """The headers of an answer (not a preflight) to a request from ``origin``."""
        if not self.allows_origin(origin):
            return []
        headers = self._origin_headers(origin)
        if self._exposed:
            headers.append((b"access-control-expose-headers", self._exposed))
        return headers


def is_preflight(method: str, origin: bytes | None, request_method: bytes | None) -> bool:
    """Whether a request is a CORS preflight (the Fetch standard's CORS-preflight request)."""
    return method == "OPTIONS" and origin is not None and request_method is not None


__all__ = ["CorsPolicy", "is_preflight"]
