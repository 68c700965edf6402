"""Drift's advice, proven: each setting it names, applied and replayed, removes its difference.

``attribution`` names, for each difference, the scenario setting that decides it and
the value the recording shows. That is a claim; ``prove`` checks it the only way that
settles it: it writes the value into the scenario (``apply``), checks that the
scenario is still valid, replays the whole recording against it with the one replay
engine (``drift`` on ``replayer``), and compares again. A suggestion is proven when,
applied, every difference it names is gone and no new one appears anywhere. One that
reveals, where its difference was, a difference of another setting's (a header's name
first, then the form of its value) is tried together with that one, up to ``ROUNDS``;
one that fixes a status reveals the rest of that answer, which two different answers
hid: what shows there then was there all along, and is not counted as added.

Whatever is not proven gets a reason of its own (``reasons``): ``value-not-shown`` (a
setting without a value drift could read from the recording), ``value-invalid`` (a
value validate refuses), ``value-does-not-remove``, ``value-adds-difference``, or
``value-unproven`` past ``MAX_REPLAYED``; the setting tried stays on the difference
(``tried``), for a reader to see what was tried.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from mockstore.fidelity.discrepancy import Discrepancy
from mockstore.keys import key_alias
from mockstore.scenario import Scenario, ScenarioError, load_scenario

# Settings whose value is one more entry of a list, not the whole list (a maintenance
# window, a latency rule: attribution_http suggests one entry each).
LISTS = frozenset(
    {"behaviour.headers", "behaviour.error_fields", "routes", "maintenance", "latency"}
)
# A suggestion and the ones it reveals where its difference was: tried together up to this.
ROUNDS = 3
# The plan a suggestion for callers without a key is written under.
ANONYMOUS_PLAN = "drift-anonymous"
# The most exchanges the proofs of one drift replay in all (a recording of 10,000 exchanges:
# 200 replays). A recording that holds more distinct suggestions than that proves the ones
# with the most differences first; the rest say they were not tried (``value-unproven``).
MAX_REPLAYED = 2_000_000

# Drift's comparison against another scenario; the exchanges (entries) it must compare
# afresh, causes and all, even where the mock answers as it did before.
Rerun = Callable[[Scenario, frozenset[int]], list[Discrepancy]]


class NotApplicable(ValueError):
    """The setting cannot be written into this scenario (a key it does not have)."""


@dataclass(frozen=True)
class Suggestion:
    """A setting and the value drift suggests for it (and the key, for a key's plan)."""

    setting: str
    value: str  # JSON, so that suggestions compare and hash
    key: str | None = None

    @classmethod
    def of(cls, difference: Discrepancy) -> Suggestion:
        assert difference.setting is not None and difference.value
        key = difference.key if difference.setting == "keys[].plan" else None
        return cls(difference.setting, json.dumps(difference.value[0], sort_keys=True), key)

    @property
    def set_to(self) -> Any:
        return json.loads(self.value)


def apply(data: dict[str, Any], setting: str, value: Any, key: str | None = None) -> dict[str, Any]:
    """``data`` (a scenario as YAML loads it) with ``setting`` set to ``value`` (a new dict).

    ``keys[].plan`` is the plan of the key ``key`` (named, or aliased, as the recording
    names it); ``anonymous_plan`` a plan of its own; a setting of ``LISTS`` gets one more
    entry. Raises ``NotApplicable`` for a key the scenario does not have.
    """
    out = copy.deepcopy(data)
    if setting == "keys[].plan":
        for entry in out.get("keys") or []:
            named = entry.get("key") if isinstance(entry, dict) else None
            if named is not None and key in (named, key_alias(str(named))):
                entry["plan"] = value
                return out
        raise NotApplicable(f"the scenario has no key {key}")
    if setting == "anonymous_plan":
        out.setdefault("plans", {})[ANONYMOUS_PLAN] = value
        out["anonymous_plan"] = ANONYMOUS_PLAN
        return out
    parts = setting.split(".")
    node = out
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    if setting in LISTS:
        entries = node.get(parts[-1])
        if not isinstance(entries, list):
            entries = node[parts[-1]] = []
        if value not in entries:
            entries.append(value)
    else:
        node[parts[-1]] = value
    return out


def prove(differences: list[Discrepancy], scenario: Scenario, rerun: Rerun) -> int:
    """Check every setting ``differences`` name by replaying with it applied; the replays.

    A proven difference keeps its setting (``proven``); any other gets a reason and keeps
    the setting as ``tried``. ``rerun`` is drift's comparison against another scenario.
    """
    data = yaml.safe_load(scenario.source) if scenario.source.strip() else None
    groups: dict[Suggestion, list[Discrepancy]] = {}
    for difference in differences:
        if difference.setting is None or difference.accepted_by is not None:
            continue
        if not difference.value:
            _demote(difference, "value-not-shown")
            continue
        groups.setdefault(Suggestion.of(difference), []).append(difference)
    checker = _Checker(data if isinstance(data, dict) else None, differences, rerun)
    exchanges = max((d.entry for d in differences), default=0)
    for suggestion, claimed in sorted(groups.items(), key=lambda item: -len(item[1])):
        if (checker.replays + ROUNDS) * exchanges > MAX_REPLAYED:
            verdict: str | None = "value-unproven"
        else:
            verdict = checker.check(suggestion, claimed)
        for difference in claimed:
            if verdict is None:
                difference.proven = True
            else:
                _demote(difference, verdict)
    return checker.replays


def _demote(difference: Discrepancy, reason: str) -> None:
    assert difference.setting is not None
    # A value validate refuses is no value: only the setting is shown as tried.
    value = () if reason == "value-invalid" else difference.value
    difference.tried = (difference.setting, value)
    difference.setting, difference.value, difference.reason = None, (), reason


class _Checker:
    """Replays of the scenario with suggestions applied, each replay run once."""

    def __init__(
        self, data: dict[str, Any] | None, original: list[Discrepancy], rerun: Rerun
    ) -> None:
        self.data = data
        self.known = {(d.entry, d.kind, d.where) for d in original}
        self.rerun = rerun
        self.replays = 0
        self._runs: dict[tuple[str, frozenset[int]], list[Discrepancy] | None] = {}

    def _run(self, data: dict[str, Any], fresh: frozenset[int]) -> list[Discrepancy] | None:
        """Drift's differences against ``data`` (the ``fresh`` entries compared afresh), or
        None when it is not a valid scenario."""
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        if (text, fresh) not in self._runs:
            try:
                scenario = load_scenario(text, "<drift's suggestion applied>")
            except ScenarioError:
                self._runs[text, fresh] = None
            else:
                self.replays += 1
                self._runs[text, fresh] = self.rerun(scenario, fresh)
        return self._runs[text, fresh]

    def check(self, suggestion: Suggestion, claimed: list[Discrepancy]) -> str | None:
        """None when ``suggestion`` is proven, else the reason it is not."""
        if self.data is None:
            return "value-not-shown"  # a scenario without its source: nothing to apply it to
        places = {(d.entry, d.where) for d in claimed}
        # A status difference hid the rest of its answer (two different answers are not
        # compared further): what its fix reveals there was masked, not added.
        masked = {d.entry for d in claimed if d.kind == "status"}
        data, pending, tried = self.data, {suggestion}, set()
        for round_ in range(ROUNDS):
            try:
                for each in sorted(pending, key=lambda s: (s.setting, s.value)):
                    data = apply(data, each.setting, each.set_to, each.key)
            except NotApplicable:
                return "value-invalid" if round_ == 0 else "value-does-not-remove"
            tried |= pending
            # Its own places compared afresh: what is left there is attributed anew.
            after = self._run(data, frozenset(entry for entry, _ in places))
            if after is None:
                return "value-invalid" if round_ == 0 else "value-does-not-remove"
            added = [
                d for d in after
                if (d.entry, d.where) not in places and d.entry not in masked
                and (d.entry, d.kind, d.where) not in self.known
            ]  # fmt: skip
            if added:
                return "value-adds-difference"
            left = [d for d in after if (d.entry, d.where) in places]
            if not left:
                return None
            if any(d.setting is None or not d.value for d in left):
                return "value-does-not-remove"
            pending = {Suggestion.of(d) for d in left} - tried
            if not pending:
                return "value-does-not-remove"
        return "value-does-not-remove"


__all__ = ["LISTS", "NotApplicable", "Suggestion", "apply", "prove"]
