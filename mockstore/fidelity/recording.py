"""The one loader of what ``replay`` and ``drift`` read: a HAR file and the scenario to replay.

Every way the input can be unusable ends here, as an ``InputError`` whose
message is a sentence the command prints before exiting 2: a file that cannot
be read, text that is not JSON, JSON that is not a HAR (or has an entry that is
not one), a scenario name that names nothing ("did you mean"), a scenario that
is not valid (every problem, with file, line and column). Never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mockstore.reports.har import HarError, Recorded, har_meta, read_har
from mockstore.scenario import (
    Scenario,
    ScenarioError,
    ScenarioNotFound,
    load_scenario,
    load_scenario_source,
)


class InputError(Exception):
    """A recording or a scenario that cannot be used: ``message``, then ``problems``."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []


@dataclass
class Recording:
    """A HAR's exchanges in file order, what it says about itself, and where it came from."""

    source: str
    exchanges: list[Recorded]
    meta: dict[str, Any] = field(default_factory=dict)


def recording_of(document: Any, source: str = "<har>") -> Recording:
    """The recording a HAR document holds; raises ``HarError`` for one that is not a HAR."""
    return Recording(source, read_har(document), har_meta(document))


def read_recording(path: str) -> Recording:
    """The recording in the HAR file at ``path``; raises ``InputError`` saying why not."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # not JSON, or not UTF-8
        raise InputError(f"{path} is not JSON: {exc}") from None
    try:
        return recording_of(document, path)
    except HarError as exc:
        raise InputError(f"{path}: {exc}") from None


def load_scenario_for(recording: Recording, spec: str | None) -> tuple[Scenario, str | None]:
    """The scenario to replay against, and a note when it was not the one asked for.

    ``spec`` (a bundled name, a path, YAML text) if given; else the one the HAR
    carries, or ``default`` (with a note) for a HAR that carries none. Raises
    ``InputError`` for a name that names nothing or a scenario that is not valid.
    """
    try:
        if spec is not None:
            return load_scenario_source(spec), None
        meta = recording.meta
        source = meta.get("scenario_source")
        if isinstance(source, str) and source.strip():
            name = meta.get("scenario_file") or meta.get("scenario") or "scenario"
            return load_scenario(source, f"{name} (from the HAR)"), None
        note = "the HAR carries no scenario source; replaying against 'default' (use --scenario)"
        return load_scenario_source("default"), note
    except ScenarioNotFound as exc:
        raise InputError(str(exc)) from None
    except ScenarioError as exc:
        which = repr(spec) if spec is not None else "the HAR carries"
        raise InputError(
            f"the scenario {which} is not usable:", [str(p) for p in exc.problems]
        ) from None
