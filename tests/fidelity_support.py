"""What the fidelity tests share: recordings of an in-process mock, and drift's fixes applied.

``record_mock`` runs requests against an in-process mock of a scenario on a
manual clock and returns its journal as a HAR: a recording of a provider whose
every choice a scenario states. ``apply`` writes what drift proposes for a
difference (``setting`` set to ``set_to``) into a scenario's data (a dict, as
YAML loads it), so a test can check the claim: with it applied, the difference
is gone.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from mockstore import __version__
from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.fidelity.compare import Discrepancy
from mockstore.fidelity.replayer import call
from mockstore.keys import key_alias
from mockstore.reports.har import HarMeta, to_har
from mockstore.scenario import load_scenario

START = 1772366430.0  # 2026-03-01T12:00:30Z
# (method, path, query, headers, body, seconds to wait before it)
Step = tuple[str, str, str, list[tuple[str, str]], bytes, float]


def record_mock(scenario_text: str, steps: list[Step], start: float = START) -> dict[str, Any]:
    """Run ``steps`` against an in-process mock of ``scenario_text``; its journal as HAR."""
    scenario = load_scenario(scenario_text)
    clock = Clock(start=start, mode="manual", wall=lambda: start + 7200)
    app = create_app(scenario, clock=clock)

    async def send_all() -> None:
        for method, path, query, headers, body, wait in steps:
            clock.advance(wait)
            await call(app, method, path, query, headers, body, "127.0.0.1")

    asyncio.run(send_all())
    meta = HarMeta(creator_version=__version__, scenario=scenario.name, base_path="/v1")
    return to_har(app.runtime.journal.select(), meta)


# Settings whose value is one more entry of a list, not the whole list.
LISTS = frozenset({"behaviour.headers", "behaviour.error_fields"})


def apply(data: dict[str, Any], difference: Discrepancy) -> dict[str, Any]:
    """``data`` with ``difference``'s setting set to its ``set_to`` (a new dict)."""
    assert difference.setting is not None and difference.value, difference.to_dict()
    out = copy.deepcopy(data)
    path, value = difference.setting, difference.value[0]
    if path == "keys[].plan":
        for entry in out.get("keys", []):
            if difference.key in (entry["key"], key_alias(entry["key"])):
                entry["plan"] = value
                return out
        raise AssertionError(f"no key {difference.key} in the scenario")
    if path == "anonymous_plan":
        out.setdefault("plans", {})["drift-anonymous"] = value
        out["anonymous_plan"] = "drift-anonymous"
        return out
    parts = path.split(".")
    node = out
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    if path in LISTS:
        entries = node.setdefault(parts[-1], [])
        if value not in entries:
            entries.append(value)
    else:
        node[parts[-1]] = value
    return out
