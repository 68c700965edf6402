"""The paths a provider's CORS covers (``http.cors.paths``), from the preflights a recording shows.

A gateway often attaches CORS to some routes only: a preflight to any other path is
answered as a plain ``OPTIONS`` (an ``Allow``, a 405, a 404), with no
``Access-Control-*``. Each allowed preflight names its path's first segment
(``/pets`` for ``/pets`` and ``/pets/7``); those prefixes are CORS's paths where a
preflight to a path outside them was answered without CORS by the routing (not
refused by the limiter or for its key, which says nothing of CORS).
"""

from __future__ import annotations

# The statuses of a preflight answered by the routing, as any OPTIONS.
_ROUTED = frozenset({200, 204, 404, 405})


def prefix(path: str) -> str:
    """The first segment of ``path`` (relative to the base path), as a path prefix."""
    return "/" + path.lstrip("/").split("/", 1)[0]


def cors_paths(allowed: list[str], routed: list[tuple[str, int]]) -> list[str] | None:
    """The path prefixes CORS covers, given the paths of the allowed preflights and the
    (path, status) of the preflights answered without CORS; None where nothing shows a
    path left out (every path, ``/``)."""
    covered = sorted({prefix(path) for path in allowed})
    outside = [path for path, status in routed if status in _ROUTED and prefix(path) not in covered]
    return covered if covered and outside else None
