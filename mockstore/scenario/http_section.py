"""The ``http`` section of a scenario: HTTP semantics beyond the API's own, as frozen types.

Conditional requests, content coding, CORS, a plain ``OPTIONS``, ``Allow`` per
path, a trailing slash and advisory headers: each part is a small frozen type
whose defaults are the scenario schema's (``scenario.schema.json``, the one
place a default is written), and ``HttpSettings()`` is mockstore's own
behaviour, so a scenario that leaves the section out pays nothing for it
(``mockstore.http_semantics`` compiles a section that says something).

``http_settings`` turns the section as a scenario file gives it (already
checked against the schema) into ``HttpSettings``; ``check_http`` reports what
the schema cannot say (a read that honours conditional requests must carry a
validator; an ``Allow`` override must name a path of the document).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mockstore import schemas
from mockstore.clock import parse_time
from mockstore.scenario.loader import scenario_schema

Report = Callable[[tuple[str | int, ...], str], None]


def _node(*path: str) -> dict[str, Any]:
    node: dict[str, Any] = scenario_schema()["properties"]["http"]
    for part in path:
        node = node["properties"][part]
    return node


def _default(*path: str) -> Any:
    return _node(*path)["default"]


# Where in the pipeline an answer of the section is made (see the schema's ``stage``).
STAGES = ("gateway", "counted", "authenticated")


@dataclass(frozen=True, slots=True)
class Conditional:
    """``http.conditional``: which reads carry Last-Modified and answer 304."""

    operations: frozenset[str] = frozenset(_default("conditional", "operations"))
    last_modified: frozenset[str] = frozenset(_default("conditional", "last_modified"))
    pets_modified: float = parse_time(_default("conditional", "pets_modified"))
    comparison: str = _default("conditional", "comparison")


@dataclass(frozen=True, slots=True)
class Compression:
    """``http.compression``: the codings offered, the smallest body coded, ``Vary``."""

    encodings: tuple[str, ...] = tuple(_default("compression", "encodings"))
    min_bytes: int = _default("compression", "min_bytes")
    vary: bool = _default("compression", "vary")


@dataclass(frozen=True, slots=True)
class Cors:
    """``http.cors`` when given: the preflight and the headers of cross-origin answers."""

    paths: tuple[str, ...] = tuple(_default("cors", "paths"))
    match: str = _default("cors", "match")
    origins: tuple[str, ...] = tuple(_default("cors", "origins"))
    methods: tuple[str, ...] = tuple(_default("cors", "methods"))
    headers: tuple[str, ...] = tuple(_default("cors", "headers"))
    expose_headers: tuple[str, ...] = tuple(_default("cors", "expose_headers"))
    max_age: int | None = _default("cors", "max_age")
    credentials: bool = _default("cors", "credentials")
    preflight_status: int = _default("cors", "preflight_status")
    rejected_status: int | None = _default("cors", "rejected_status")
    refuse_origins: bool = _default("cors", "refuse_origins")
    code: str = _default("cors", "code")
    stage: str = _default("cors", "stage")


@dataclass(frozen=True, slots=True)
class Options:
    """``http.options``: a plain ``OPTIONS`` answered with ``Allow``, or not served."""

    serve: bool = _default("options", "serve")
    status: int = _default("options", "status")
    stage: str = _default("options", "stage")


@dataclass(frozen=True, slots=True)
class TrailingSlash:
    """``http.trailing_slash``: what ``/v1/pets/`` is."""

    answer: str = _default("trailing_slash", "answer")
    status: int = _default("trailing_slash", "status")
    location: str = _default("trailing_slash", "location")
    stage: str = _default("trailing_slash", "stage")


@dataclass(frozen=True, slots=True)
class AdvisoryHeader:
    """A header advising the client (``http.advisory.unknown_fields``, ``.clamped_limit``):
    name, value template."""

    header: str
    value: str


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """The whole ``http`` section; ``HttpSettings()`` is mockstore's own behaviour."""

    conditional: Conditional = Conditional()
    compression: Compression = Compression()
    cors: Cors | None = None
    options: Options = Options()
    # (path template, Allow value), in the file's order.
    allow: tuple[tuple[str, str], ...] = ()
    trailing_slash: TrailingSlash = TrailingSlash()
    unknown_fields: AdvisoryHeader | None = None
    clamped_limit: AdvisoryHeader | None = None

    @property
    def active(self) -> bool:
        """Whether the section changes anything mockstore does."""
        return self != HttpSettings()


def _part(kind: type, raw: Any) -> Any:
    """A frozen part from its mapping: the given values, the schema's defaults elsewhere."""
    if not isinstance(raw, dict):
        return kind()
    values = {}
    for name, value in raw.items():
        values[name] = tuple(value) if isinstance(value, list) else value
    return kind(**values)


def http_settings(raw: Any) -> HttpSettings:
    """The ``http`` section as a scenario file gives it (schema-checked) as ``HttpSettings``."""
    if not isinstance(raw, dict):
        return HttpSettings()
    conditional = raw.get("conditional") or {}
    advisory = (raw.get("advisory") or {}).get("unknown_fields")
    unknown_default = _node("advisory", "unknown_fields")["properties"]
    clamped = (raw.get("advisory") or {}).get("clamped_limit")
    clamped_default = _node("advisory", "clamped_limit")["properties"]
    return HttpSettings(
        conditional=Conditional(
            **{
                name: parse_time(value)
                if name == "pets_modified"
                else frozenset(value)
                if isinstance(value, list)
                else value
                for name, value in conditional.items()
            }
        ),
        compression=_part(Compression, raw.get("compression")),
        cors=_part(Cors, raw["cors"]) if isinstance(raw.get("cors"), dict) else None,
        options=_part(Options, raw.get("options")),
        allow=tuple((raw.get("allow") or {}).items()),
        trailing_slash=_part(TrailingSlash, raw.get("trailing_slash")),
        unknown_fields=AdvisoryHeader(
            advisory.get("header", unknown_default["header"]["default"]),
            advisory.get("value", unknown_default["value"]["default"]),
        )
        if isinstance(advisory, dict)
        else None,
        clamped_limit=AdvisoryHeader(
            clamped.get("header", clamped_default["header"]["default"]),
            clamped.get("value", clamped_default["value"]["default"]),
        )
        if isinstance(clamped, dict)
        else None,
    )


def check_http(raw: Any, report: Report, etag: dict[str, str], base_path: str) -> None:
    """What the schema cannot say of an ``http`` section; ``report(path, message)`` each.

    ``etag``: the reads that carry an ETag (``behaviour.etag``).
    """
    if not isinstance(raw, dict):
        return
    conditional = raw.get("conditional")
    if isinstance(conditional, dict):
        operations = conditional.get("operations")
        modified = conditional.get("last_modified")
        # Only the names: a wrong entry (a mapping, say) is the schema's to report.
        dated = {m for m in modified if isinstance(m, str)} if isinstance(modified, list) else set()
        if isinstance(operations, list):
            for index, operation in enumerate(operations):
                if isinstance(operation, str) and operation not in etag and operation not in dated:
                    report(
                        ("http", "conditional", "operations", index),
                        f"{operation} has no validator to compare: give it an ETag "
                        f"(behaviour.etag.{operation}) or Last-Modified (last_modified)",
                    )
    cors = raw.get("cors")
    if (
        isinstance(cors, dict)
        and cors.get("refuse_origins") is True
        and cors.get("rejected_status") is None
    ):
        report(
            ("http", "cors", "refuse_origins"),
            "refusing requests from origins not allowed needs rejected_status (400 or 403)",
        )
    allow = raw.get("allow")
    if isinstance(allow, dict):
        paths = set(schemas.openapi_document()["paths"])
        for template in allow:
            if isinstance(template, str) and template not in paths:
                shown = ", ".join(sorted(paths))
                hint = (
                    f" (paths are relative to base_path {base_path})"
                    if base_path and template.startswith(base_path + "/")
                    else ""
                )
                report(
                    ("http", "allow", template),
                    f"{template!r} is not a path of the document ({shown}){hint}",
                )
    cors = raw.get("cors")
    if isinstance(cors, dict):
        prefixes = cors.get("paths")
        if isinstance(prefixes, list) and base_path:
            for index, prefix in enumerate(prefixes):
                if isinstance(prefix, str) and prefix.startswith(base_path + "/"):
                    report(
                        ("http", "cors", "paths", index),
                        f"paths are relative to base_path {base_path}: "
                        f"write {prefix[len(base_path) :]!r}",
                    )
        origins = cors.get("origins")
        if isinstance(origins, list) and "*" in origins and len(origins) > 1:
            report(("http", "cors", "origins"), "* allows every origin: give it alone")


__all__ = [
    "STAGES",
    "AdvisoryHeader",
    "Compression",
    "Conditional",
    "Cors",
    "HttpSettings",
    "Options",
    "TrailingSlash",
    "check_http",
    "http_settings",
]
