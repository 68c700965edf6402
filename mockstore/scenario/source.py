"""The one scenario resolver: what a user names becomes scenario text and a name for errors.

Every entry point takes a scenario the same way (``mockstore serve --scenario``,
``MOCKSTORE_SCENARIO``, ``mockstore validate``, ``mockstore replay --scenario``,
``create_app``, ``MockServer``, ``Control.load_scenario``, the pytest plugin's
option, marker and ``load()``), so each accepts the same three things:

- a **bundled name** (``flaky-create``; ``mockstore scenarios`` lists them),
- a **path** to a YAML file (relative to the working directory),
- **YAML text** (anything spanning lines, or a one-line mapping such as
  ``{version: 1}``), or a ``Mapping`` (sent as JSON, which is YAML).

A string is tried in that order of certainty: text if it spans lines, a file
if one exists, a bundled name if one matches, text if it reads as a YAML
mapping. Whatever is left names nothing, and is refused as *not found* with
the bundled names and the closest one, never as an invalid scenario at
``name:1:1``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from mockstore.limits import MAX_SCENARIO_BYTES
from mockstore.scenario.loader import Problem, ScenarioError, did_you_mean

ScenarioSpec = str | os.PathLike[str] | Mapping[str, Any]
SourceKind = Literal["bundled", "file", "text"]

# One line that can only be YAML: a flow mapping, or ``key: value`` (a colon and a
# space, which a path such as C:\scenarios\x.yaml never has).
ONE_LINE_YAML = re.compile(r"^\s*(\{|[A-Za-z_][\w-]*\s*:(\s|$))")
_YAML_SUFFIXES = (".yaml", ".yml", ".json")
BUNDLED_SUFFIX = " (bundled)"


class ScenarioNotFound(LookupError):
    """A name or path that names no scenario; ``str()`` says what was looked for."""

    def __init__(self, spec: str, message: str) -> None:
        self.spec = spec
        self.message = message
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class ScenarioSource:
    """A resolved scenario: its text, the name its problems are reported under, where from.

    ``path`` is the file on disk for a file (what ``serve --watch`` watches),
    ``None`` for a bundled scenario or text.
    """

    text: str
    file: str
    kind: SourceKind
    path: Path | None = None

    def load(self) -> Any:
        """The ``Scenario`` (raises ``ScenarioError`` with every problem)."""
        from mockstore.scenario.build import load_scenario

        return load_scenario(self.text, self.file)


def bundled_dir() -> Any:
    return resources.files("mockstore.bundled")


def bundled_names() -> list[str]:
    return sorted(
        entry.name.removesuffix(".yaml")
        for entry in bundled_dir().iterdir()
        if entry.name.endswith(".yaml")
    )


def resolve_scenario(spec: ScenarioSpec, *, label: str | None = None) -> ScenarioSource:
    """Resolve a bundled name, a path, YAML text or a mapping; see the module docstring.

    ``label`` names inline text (or a mapping) in error messages. Raises
    ``ScenarioNotFound`` for a name or path that names nothing, ``ScenarioError``
    for a file that exists but cannot be read.
    """
    if isinstance(spec, Mapping):
        return ScenarioSource(json.dumps(spec), label or "<mapping>", "text")
    if isinstance(spec, os.PathLike):
        path = Path(os.fspath(spec))
        if not path.is_file():
            raise ScenarioNotFound(str(path), _missing_file(str(path)))
        return _read_file(path)
    if not isinstance(spec, str):
        raise TypeError(
            f"a scenario is a bundled name, a path, YAML text or a mapping, not {type(spec)!r}"
        )
    if "\n" in spec:
        return ScenarioSource(spec, label or "<scenario>", "text")
    name = spec.strip()
    if name and Path(name).is_file():
        return _read_file(Path(name))
    bundled = _bundled(name)
    if bundled is not None:
        return bundled
    if ONE_LINE_YAML.match(name):
        return ScenarioSource(spec, label or "<scenario>", "text")
    raise ScenarioNotFound(spec, _not_found(name))


def load_scenario_source(spec: ScenarioSpec, *, label: str | None = None) -> Any:
    """Resolve and load: the ``Scenario`` a spec names (``ScenarioNotFound``, ``ScenarioError``)."""
    return resolve_scenario(spec, label=label).load()


def read_scenario_source(spec: ScenarioSpec) -> tuple[str, str]:
    """The text and display name of what ``spec`` names (see ``resolve_scenario``)."""
    source = resolve_scenario(spec)
    return source.text, source.file


def load_scenario_file(spec: ScenarioSpec) -> Any:
    """The ``Scenario`` a bundled name, path or YAML text names; kept for existing callers."""
    return load_scenario_source(spec)


def _bundled(name: str) -> ScenarioSource | None:
    stem = name.removesuffix(".yaml")
    if not stem or "/" in stem or "\\" in stem or stem.startswith("."):
        return None
    entry = bundled_dir().joinpath(f"{stem}.yaml")
    if not entry.is_file():
        return None
    return ScenarioSource(
        entry.read_text(encoding="utf-8"), f"{stem}.yaml{BUNDLED_SUFFIX}", "bundled"
    )


class ScenarioTooLarge(ValueError):
    """A scenario file over ``MAX_SCENARIO_BYTES``; ``str()`` says so."""


def read_limited(path: Path, limit: int = MAX_SCENARIO_BYTES) -> str:
    """The file's text, read up to ``limit`` bytes and never more, whatever its size.

    Raises ``ScenarioTooLarge`` past the limit (a 600 MB file is refused after
    8 MiB of it), ``UnicodeDecodeError`` and ``OSError`` as reading does.
    """
    with path.open("rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise ScenarioTooLarge(
            f"the file is over {limit:,} bytes, the limit for a scenario "
            "(use generate: for large inventories); only that much of it was read"
        )
    return data.decode("utf-8")


def _read_file(path: Path) -> ScenarioSource:
    try:
        text = read_limited(path)
    except UnicodeDecodeError as exc:
        message = f"not UTF-8 text (byte {exc.start}); a scenario is a YAML file"
        raise ScenarioError([Problem(str(path), 1, 1, "$", message)]) from None
    except ScenarioTooLarge as exc:
        raise ScenarioError([Problem(str(path), 1, 1, "$", str(exc))]) from None
    except OSError as exc:
        message = f"cannot read: {exc.strerror or exc}"
        raise ScenarioError([Problem(str(path), 1, 1, "$", message)]) from None
    return ScenarioSource(text, str(path), "file", path)


def _bundled_list() -> str:
    return "bundled: " + ", ".join(bundled_names())


def _missing_file(spec: str) -> str:
    where = Path(spec)
    if where.is_dir():
        return f"scenario {spec!r} is a directory, not a YAML file"
    hint = did_you_mean(where.name.removesuffix(where.suffix), bundled_names())
    absolute = "" if where.is_absolute() else f" (looked in {Path.cwd()})"
    return f"scenario file {spec!r} not found{absolute}{hint}; {_bundled_list()}"


def _not_found(name: str) -> str:
    if not name:
        return f"no scenario named: give a bundled name, a path or YAML text; {_bundled_list()}"
    if "/" in name or "\\" in name or name.endswith(_YAML_SUFFIXES):
        return _missing_file(name)
    hint = did_you_mean(name, bundled_names())
    return (
        f"scenario {name!r} not found: no bundled scenario and no file of that name{hint}; "
        f"{_bundled_list()}"
    )
