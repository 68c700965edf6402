"""The scenario calibrate writes: each setting under the exchanges that settled it.

The settings come in the scenario schema's order (``behaviour`` and each of its
mappings as ``scenario.schema.json`` lists them), so a calibrated file reads
like the format's reference, and a new setting needs no change here. What the
format cannot express is listed, and what was not settled, with the reason. No
``drift.accept`` is written: accepting a difference is the reader's decision.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.result import LISTS, Calibration, Setting, one_line
from mockstore.scenario import scenario_schema
from mockstore.version import __version__

_SCHEMA = scenario_schema()


def _flow(value: Any) -> str:
    """A value as one line of YAML (JSON is a YAML flow style)."""
    return json.dumps(value, ensure_ascii=True)


def _cited(setting: Setting, indent: str) -> list[str]:
    return [f"{indent}# {one_line(e)}" for e in setting.evidence]


def _section(result: Calibration, prefix: str, node: dict[str, Any], indent: str) -> list[str]:
    """The settled settings under ``prefix`` (``behaviour``, ``ban``), in the schema's order."""
    lines: list[str] = []
    for name, spec in node["properties"].items():
        path = f"{prefix}.{name}"
        if path in LISTS:
            entries = result.items.get(path, [])
            if entries:
                lines.append(f"{indent}{name}:")
                for entry in entries:
                    lines.extend(_cited(entry, indent + "  "))
                    lines.append(f"{indent}  - {_flow(entry.value)}")
        elif "properties" in spec and spec.get("type") == "object":
            inner = _section(result, path, spec, indent + "  ")
            if inner:
                lines.append(f"{indent}{name}:")
                lines.extend(inner)
        elif path in result.settings:
            setting = result.settings[path]
            lines.extend(_cited(setting, indent))
            lines.append(f"{indent}{name}: {_flow(setting.value)}")
    return lines


def render_scenario(result: Calibration, options: Options, sent: int) -> str:
    """The scenario file: what a recording and ``sent`` probes (of the budget) settled."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    sources = []
    if options.recording is not None:
        sources.append(f"learned from {options.recording}")
    if options.target is not None:
        sources.append(
            f"probed {result.target}: {sent} request(s) of a budget of {options.budget}; "
            f"writes {'allowed' if options.allow_writes else 'not allowed'}; rate limit "
            f"{'spent' if options.allow_rate_limit else 'not spent'}"
        )
    lines = [
        "# yaml-language-server: $schema=https://mockstore.dev/schema/scenario-v1.json",
        f"# Calibrated by mockstore calibrate {__version__} at {now}:",
        *(f"#   {one_line(text)}" for text in sources),
        "# Each setting cites the exchanges that settled it. Keys are named as the scenario",
        "# names them, with the alias recordings show (mockstore record journals aliases).",
        "version: 1",
        "name: calibrated",
        f"description: {_flow('Reproduces ' + result.target + ' as calibrate observed it.')}",
    ]
    if result.anonymous is not None:
        value = result.anonymous.value
        if isinstance(value, dict):
            lines.append("plans:")
            lines.extend(_cited(result.anonymous, "  "))
            lines.append(f"  anonymous: {_flow(value)}")
            lines.append("anonymous_plan: anonymous")
        else:
            lines.extend(_cited(result.anonymous, ""))
            lines.append(f"anonymous_plan: {value}")
    if result.keys:
        lines.append("keys:")
        for key in result.keys:
            lines.extend(f"  # {one_line(e)}" for e in key.evidence)
            entry: dict[str, Any] = {"key": key.name, "plan": key.plan}
            if key.name != key.alias:
                entry["recorded_as"] = key.alias
            lines.append(f"  - {_flow(entry)}")
    ban = _section(result, "ban", _SCHEMA["properties"]["ban"], "  ")
    if ban:
        lines.append("ban:")
        lines.extend(ban)
    limiter = _section(result, "ratelimit", _SCHEMA["properties"]["ratelimit"], "  ")
    if limiter:
        lines.append("ratelimit:")
        lines.extend(limiter)
    if result.pets is not None:
        lines.append("pets:")
        lines.extend(_cited(result.pets, "  "))
        lines.extend(f"  - {_flow(pet)}" for pet in result.pets.value)
    behaviour = _section(result, "behaviour", _SCHEMA["properties"]["behaviour"], "  ")
    if behaviour:
        lines.append("behaviour:")
        lines.extend(behaviour)
    collections = _section(result, "collections", _SCHEMA["properties"]["collections"], "  ")
    if collections:
        lines.append("collections:")
        lines.extend(collections)
    if result.routes:
        lines.append("routes:")
        for route in result.routes:
            lines.extend(_cited(route, "  "))
            lines.append(f"  - {_flow(route.value)}")
    http = _section(result, "http", _SCHEMA["properties"]["http"], "  ")
    if http:
        lines.append("http:")
        lines.extend(http)
    for name in ("maintenance", "latency"):
        entries = result.items.get(name, [])
        if entries:
            lines.append(f"{name}:")
            for entry in entries:
                lines.extend(_cited(entry, "  "))
                lines.append(f"  - {_flow(entry.value)}")
    lines.append("# Not expressible in the scenario format (observed, not reproduced):")
    lines.extend(f"#   - {text}" for text in result.inexpressible or ["(nothing)"])
    lines.append("# Not settled (mockstore's default kept), or settled by a guess:")
    notes = [*result.unsettled, *result.estimated.values()]
    lines.extend(f"#   - {one_line(text)}" for text in notes or ["(nothing)"])
    return "\n".join(lines) + "\n"
