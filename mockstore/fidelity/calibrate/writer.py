"""The scenario calibrate writes: each setting under the probe that settled it.

The settings come in the scenario schema's order (``behaviour`` and its
``error_codes`` as ``scenario.schema.json`` lists them), so a calibrated file
reads like the format's reference, and a new setting needs no change here.
What the format cannot express is listed (and accepted under ``drift.accept``
where drift would report it); what was not settled is listed with the reason.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.prober import one_line
from mockstore.fidelity.calibrate.probes import Calibration
from mockstore.scenario.build import BEHAVIOUR_SETTINGS
from mockstore.scenario.model import DEFAULT_ERROR_CODES
from mockstore.version import __version__


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)


def _flow(value: Any) -> str:
    """A value as one line of YAML (JSON is a YAML flow style)."""
    return json.dumps(value, ensure_ascii=True)


def render_scenario(result: Calibration, options: Options, sent: int) -> str:
    """The scenario file: ``sent`` probes of ``options.budget`` settled ``result``."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        "# yaml-language-server: $schema=https://mockstore.dev/schema/scenario-v1.json",
        f"# Calibrated by mockstore calibrate {__version__} against {result.target}",
        f"# at {now}: {sent} request(s) of a budget of {options.budget}; writes "
        f"{'allowed' if options.allow_writes else 'not allowed'}; rate limit "
        f"{'spent' if options.allow_rate_limit else 'not spent'}.",
        "# Each setting cites the probe that settled it. Keys are written as their aliases:",
        "# mockstore record journals the same aliases, so mockstore drift matches them.",
        "version: 1",
        "name: calibrated",
        f"description: {_scalar('Reproduces ' + result.target + ' as calibrate observed it.')}",
    ]
    if result.anonymous is not None:
        value, evidence = result.anonymous
        if isinstance(value, dict):
            lines.append("plans:")
            lines.extend(f"  # {e}" for e in evidence)
            lines.append(f"  anonymous: {_flow(value)}")
            lines.append("anonymous_plan: anonymous")
        else:
            lines.extend(f"# {e}" for e in evidence)
            lines.append(f"anonymous_plan: {value}")
    if result.keys:
        lines.append("keys:")
        for alias, plan, evidence in result.keys:
            lines.extend(f"  # {e}" for e in evidence)
            lines.append(f"  - {{key: {alias}, plan: {_flow(plan)}}}")
    if result.behaviour or result.error_codes:
        lines.append("behaviour:")
        for name in BEHAVIOUR_SETTINGS:
            if name == "error_codes" and result.error_codes:
                lines.append("  error_codes:")
                for condition, _ in DEFAULT_ERROR_CODES:
                    if condition in result.error_codes:
                        setting = result.error_codes[condition]
                        lines.extend(f"    # {e}" for e in setting.evidence)
                        lines.append(f"    {condition}: {_scalar(setting.value)}")
            elif name in result.behaviour:
                setting = result.behaviour[name]
                lines.extend(f"  # {e}" for e in setting.evidence)
                lines.append(f"  {name}: {_scalar(setting.value)}")
    if result.routes:
        lines.append("routes:")
        for route, evidence in result.routes:
            lines.extend(f"  # {e}" for e in evidence)
            lines.append(f"  - {_flow(route)}")
    if result.accept:
        lines.append("drift:")
        lines.append(
            "  # What the scenario format cannot express, so drift reports it as accepted."
        )
        lines.append("  accept:")
        for entry, reason in result.accept:
            lines.append(f"    - {_flow({**entry, 'reason': reason})}")
    lines.append("# Not expressible in the scenario format (observed, not reproduced):")
    lines.extend(f"#   - {text}" for text in result.inexpressible or ["(nothing)"])
    lines.append("# Not settled (mockstore's default kept):")
    lines.extend(f"#   - {one_line(text)}" for text in result.unsettled or ["(nothing)"])
    return "\n".join(lines) + "\n"
