"""Which operation a method and path name, derived from the OpenAPI document.

The route table is not written by hand: every path and operationId of
``openapi.yaml`` becomes a route, so adding an operation to the document is
what makes the server route it. Paths here are relative to the scenario's base
path (``/pets/7``, not ``/v1/pets/7``).

``HEAD`` is served wherever ``GET`` is (RFC 9110 section 9.3.2): it resolves to
the GET operation, and ``Allow`` names it. A scenario may say a provider does
not (``behaviour.serve_head: false``), or only on some operations (a list of
them): that scenario gets a table with HEAD only there.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from mockstore.schemas import Operation

_PLACEHOLDER = re.compile(r"(\{[^/{}]+\})")


def compile_path(template: str) -> re.Pattern[str]:
    """``/pets/{petId}`` -> a pattern matching the whole path, one segment per ``{name}``.

    A placeholder named like a Python identifier (every one in the OpenAPI
    document) is a named group, so ``match.groupdict()`` gives the parameters
    as sent; any other name (a scenario may write ``{pet-id}``) still matches
    one segment.
    """
    seen: set[str] = set()
    regex = ""
    for part in _PLACEHOLDER.split(template):
        if not _PLACEHOLDER.fullmatch(part):
            regex += re.escape(part)
            continue
        name = part[1:-1]
        if name.isidentifier() and name not in seen:
            seen.add(name)
            regex += f"(?P<{name}>[^/]+)"
        else:
            regex += "[^/]+"
    return re.compile(f"^{regex}$")


def allow_header(methods: Iterable[str], head: bool = True) -> str:
    """The ``Allow`` value for a path's methods: HEAD wherever GET is (if ``head``), sorted."""
    allowed = set(methods)
    if "GET" in allowed and head:
        allowed.add("HEAD")
    return ", ".join(sorted(allowed))


@dataclass(frozen=True, slots=True)
class Resolved:
    """What a method and path name.

    ``operation`` is None when the path is unknown (``allow`` empty) or the
    method is not one of the path's (``allow`` names those); ``params`` holds
    the path parameters as sent.
    """

    operation: Operation | None
    params: dict[str, str]
    allow: str


_NOWHERE = Resolved(None, {}, "")


class _PathRoutes:
    """One path of the document: its operations by method (HEAD beside GET)."""

    __slots__ = ("allow", "by_method", "pattern", "resolved")

    def __init__(self, pattern: re.Pattern[str] | None) -> None:
        self.pattern = pattern
        self.by_method: dict[str, Operation] = {}
        self.allow = ""
        # Literal paths answer with these, made once: no allocation per request.
        self.resolved: dict[str, Resolved] = {}


class Router:
    """Resolves (method, relative path) to an operation of the document.

    Literal paths (``/pets``) are two dict lookups; templated ones
    (``/pets/{petId}``) are tried in the document's order.
    """

    def __init__(
        self, operations: Iterable[Operation], head: bool | Collection[str] = True
    ) -> None:
        """``head``: serve HEAD on every GET operation (True), none, or those named."""
        self.head = head
        self._literal: dict[str, _PathRoutes] = {}
        self._templated: list[_PathRoutes] = []
        by_path: dict[str, _PathRoutes] = {}
        for op in operations:
            routes = by_path.get(op.path)
            if routes is None:
                templated = _PLACEHOLDER.search(op.path) is not None
                routes = by_path[op.path] = _PathRoutes(
                    compile_path(op.path) if templated else None
                )
                if templated:
                    self._templated.append(routes)
                else:
                    self._literal[op.path] = routes
            routes.by_method[op.method] = op
            if op.method == "GET" and (head is True or (head and op.operation_id in head)):
                routes.by_method["HEAD"] = op
        for routes in by_path.values():
            # HEAD is in by_method wherever it is served: Allow names exactly those.
            routes.allow = allow_header(routes.by_method, head=False)
            routes.resolved = {m: Resolved(op, {}, "") for m, op in routes.by_method.items()}

    @property
    def paths(self) -> dict[str, str]:
        """Every path template of the document and its ``Allow`` value."""
        every = [*self._literal.values(), *self._templated]
        return {next(iter(r.by_method.values())).path: r.allow for r in every if r.by_method}

    def resolve(self, method: str, path: str) -> Resolved:
        routes = self._literal.get(path)
        if routes is not None:
            return routes.resolved.get(method) or Resolved(None, {}, routes.allow)
        for candidate in self._templated:
            assert candidate.pattern is not None
            match = candidate.pattern.match(path)
            if match is not None:
                operation = candidate.by_method.get(method)
                if operation is None:
                    return Resolved(None, {}, candidate.allow)
                return Resolved(operation, match.groupdict(), "")
        return _NOWHERE
