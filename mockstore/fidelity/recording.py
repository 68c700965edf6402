"""The one loader of what ``replay`` and ``drift`` read: a HAR file and the scenario to replay.

Every way the input can be unusable ends here, as an ``InputError`` whose
message is a sentence the command prints before exiting 2: a file that cannot
be read, a file larger than ``MAX_HAR_BYTES`` (refused from its size, before a
byte of it is read), text that is not JSON or is nested deeper than
``MAX_JSON_DEPTH`` (checked before it is parsed: Python's parser recurses),
JSON that is not a HAR (or has an entry that is not one), a scenario name that
names nothing ("did you mean"), a scenario that is not valid (every problem,
with file, line and column). Never a traceback. A string longer than a HAR's
reader can use is cut in the raw bytes before it is parsed (``long_strings``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from mockstore.fidelity.long_strings import BadString, cut_long_strings
from mockstore.limits import MAX_SCENARIO_BYTES
from mockstore.memory import MiB, format_size
from mockstore.reports.har import HarError, Recorded, har_meta, read_har
from mockstore.scenario import (
    Scenario,
    ScenarioError,
    ScenarioNotFound,
    load_scenario,
    load_scenario_source,
)
from mockstore.validation import MAX_JSON_DEPTH, json_depth_over, json_parse_cost

# The largest HAR replay and drift read: parsed, a HAR takes several times its
# size, and a full journal's (48 MiB of entries) is about 150 MB. A larger one
# is refused before it is read; export it in parts (requests.har?since=N).
MAX_HAR_BYTES = 256 * MiB
# What parsing a HAR may hold, bounded before it is parsed (``json_parse_cost``,
# a few byte counts): a HAR of small objects holds up to 29 times its size once
# parsed (190 MB of them took 3.39 GB, and more than a minute). A full default
# journal's HAR (21.6 MB) is bounded at 350 MB, and holds 104 MB.
MAX_HAR_PARSE = 512 * MiB
# The longest body a HAR entry is read with: a journal keeps at most 1 MiB of
# one, and a longer body (or a string posing as one) is cut to this and read as
# cut short (one 8 MB string made replay use 0.97 GiB; 40 MB, a MemoryError).
MAX_HAR_BODY = 1 * MiB
# The longest string a HAR is parsed with (characters): a body of MAX_HAR_BODY
# in base64. A longer one is cut to one character more in the raw bytes, before
# it is parsed (``long_strings``): its body is still read as cut short, its URL
# or header still refused as too long, and no 100 MB string is ever made. The
# scenario the HAR carries may be as long as a scenario may be.
MAX_HAR_STRING = -(-MAX_HAR_BODY // 3) * 4
_STRING_BOUNDS = {b"scenario_source": MAX_SCENARIO_BYTES}


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
    """The recording a HAR document holds; raises ``HarError`` for one that is not a HAR.

    A body longer than ``MAX_HAR_BODY`` is read cut to it, as cut short.
    """
    return Recording(source, read_har(document, MAX_HAR_BODY), har_meta(document))


def read_recording(path: str) -> Recording:
    """The recording in the HAR file at ``path``; raises ``InputError`` saying why not."""
    try:
        size = os.stat(path).st_size
        if size > MAX_HAR_BYTES:
            raise InputError(
                f"{path} is {size:,} bytes, over the {MAX_HAR_BYTES:,} a HAR may have "
                "(export it in parts: requests.har?since=N)"
            )
        with open(path, "rb") as handle:
            data = handle.read(MAX_HAR_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_HAR_BYTES:  # it grew since it was measured
        raise InputError(f"{path} is over the {MAX_HAR_BYTES:,} bytes a HAR may have")
    cost = json_parse_cost(data)
    if cost > MAX_HAR_PARSE:
        raise InputError(
            f"{path} could take {format_size(cost)} once parsed, over the "
            f"{format_size(MAX_HAR_PARSE)} a HAR may (export it in parts: requests.har?since=N)"
        )
    try:
        # One copy at a time: the bytes go once they are text, the text once parsed.
        data = cut_long_strings(data, MAX_HAR_STRING, _STRING_BOUNDS)
        if json_depth_over(data):
            raise ValueError(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
        text = data.decode("utf-8")
        del data
        document = json.loads(text)
        del text
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not JSON: not UTF-8 text (byte {exc.start})") from None
    except BadString as exc:
        raise InputError(f"{path} is not JSON: {exc}") from None
    except ValueError as exc:  # not JSON, or nested too deep
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
