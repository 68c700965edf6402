"""Apply what drift proposes: a difference's setting, set to the value that removes it.

Drift names, for each difference it can, the scenario setting behind it and the
value that removes it (``setting``, ``set_to``). ``apply`` writes that into a
scenario's data (a dict, as YAML loads it), so a test can check the claim: with
the setting applied, the difference is gone.
"""

from __future__ import annotations

import copy
from typing import Any

from mockstore.fidelity.compare import Discrepancy
from mockstore.keys import key_alias

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
