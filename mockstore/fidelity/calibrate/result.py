"""What a calibration settled: each setting with its evidence, and what it could not.

A recording (``learn``) and the probes (``probes``) both fill one
``Calibration``: a setting is named by its path in the scenario schema
(``behaviour.error_codes.bad_limit``, ``ban.after_rejections``) and cites the
exchanges that settled it. The writer writes it in the schema's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mockstore.scenario import scenario_schema
from mockstore.scenario.limits import ALIASES


def one_line(text: str) -> str:
    """``text`` on one line of at most 200 characters, for a comment in the scenario file."""
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


def _in_schema(path: str) -> bool:
    node: Any = scenario_schema()
    for part in path.split("."):
        node = (node.get("properties") or {}).get(part)
        if node is None:
            return False
    return True


# Settings whose value is a list of entries, each settled (and cited) on its own.
LISTS = frozenset({"behaviour.headers", "behaviour.error_fields", "maintenance", "latency"})


@dataclass
class Setting:
    value: Any
    evidence: list[str]


@dataclass
class Key:
    """A key of the calibrated scenario: its name there, the alias recordings show, its plan."""

    name: str
    alias: str
    plan: Any
    evidence: list[str]


@dataclass
class Calibration:
    """What the recording and the probes settled, what the format cannot say, what stayed open."""

    target: str
    settings: dict[str, Setting] = field(default_factory=dict)
    items: dict[str, list[Setting]] = field(default_factory=dict)  # the LISTS, entry by entry
    keys: list[Key] = field(default_factory=list)
    anonymous: Setting | None = None  # the anonymous plan's figures
    pets: Setting | None = None
    routes: list[Setting] = field(default_factory=list)
    inexpressible: list[str] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)
    estimated: dict[str, str] = field(default_factory=dict)  # path -> why it is a guess
    varying: set[str] = field(default_factory=set)  # header names no constant reproduces
    confirmed: set[str] = field(default_factory=set)  # settled at mockstore's default
    # Pet ids the recording created: a later listing (the probes') shows them, but a
    # replay of the recording creates them again, so the scenario does not start with them.
    created: set[int] = field(default_factory=set)

    def set(self, path: str, value: Any, *evidence: str) -> None:
        """Settle ``path`` (a scenario setting) to ``value``, citing ``evidence``."""
        assert _in_schema(path), f"{path} is not a scenario setting"
        if path in LISTS:
            entries = self.items.setdefault(path, [])
            if all(entry.value != value for entry in entries):  # one entry, cited once
                entries.append(Setting(value, [one_line(e) for e in evidence]))
            return
        self.settings[path] = Setting(value, [one_line(e) for e in evidence])

    def confirm(self, path: str) -> None:
        """``path`` is settled at mockstore's own default: nothing to write, nothing to probe."""
        assert _in_schema(path), f"{path} is not a scenario setting"
        self.confirmed.add(path)

    def settled(self, path: str) -> bool:
        return path in self.settings or path in self.items or path in self.confirmed

    def value(self, path: str, default: Any = None) -> Any:
        found = self.settings.get(path)
        return found.value if found is not None else default

    def cannot(self, text: str) -> None:
        """Note something the provider does that the scenario format cannot express."""
        line = one_line(text)
        if line not in self.inexpressible:
            self.inexpressible.append(line)

    def open(self, text: str) -> None:
        """Note something left unsettled (mockstore's default kept), with the reason."""
        line = one_line(text)
        if line not in self.unsettled:
            self.unsettled.append(line)

    def estimate(self, path: str, text: str) -> None:
        """``path`` is settled by a guess within what was seen (``text`` says which)."""
        self.estimated[path] = one_line(text)

    def key(self, alias: str) -> Key | None:
        return next((k for k in self.keys if k.alias == alias), None)

    @property
    def count(self) -> int:
        """How many settings are settled (a list's entries each count)."""
        return (
            len(self.settings)
            + sum(len(entries) for entries in self.items.values())
            + len(self.keys)
            + (self.anonymous is not None)
            + (self.pets is not None)
            + len(self.routes)
        )


def merged(first: Calibration, then: Calibration) -> Calibration:
    """``first`` (a recording's), with what ``then`` (the probes') settled that it had not."""
    out = Calibration(first.target if first.settings or first.keys else then.target)
    out.settings = {
        **{p: s for p, s in then.settings.items() if p not in first.confirmed},
        **first.settings,
    }
    out.confirmed = first.confirmed | then.confirmed
    for path, text in first.estimated.items():
        if path in then.settings and path not in then.estimated:
            out.settings[path] = then.settings[path]  # measured beats guessed
        else:
            out.estimated[path] = text
    out.estimated.update({p: t for p, t in then.estimated.items() if p not in out.estimated})
    out.varying = first.varying | then.varying
    for path in LISTS:
        mine = list(first.items.get(path, []))
        names = {str(entry.value.get("name", "")).lower() for entry in mine}
        if path == "behaviour.headers":
            names |= first.varying
            # The listing's total and page headers (collections.pagination.total_header,
            # page_headers) are no constants, though one probe's listing shows one value.
            for setting, kept in first.settings.items():
                if setting.startswith(
                    ("collections.pagination.total_header", "collections.pagination.page_headers.")
                ) and isinstance(kept.value, str):
                    names.add(kept.value.lower())
        mine += [
            entry
            for entry in then.items.get(path, [])
            if str(entry.value.get("name", "")).lower() not in names
        ]
        if mine:
            out.items[path] = mine
    if any(path.startswith("collections.order.") for path in out.settings):
        # Ordered by a field: behaviour.list_order (the older spelling) cannot say it too.
        out.settings.pop("behaviour.list_order", None)
    out.keys = list(first.keys)
    out.keys += [
        _own_lengths_kept(key, first, then) for key in then.keys if first.key(key.alias) is None
    ]
    out.anonymous = first.anonymous or then.anonymous
    out.pets = first.pets
    if out.pets is None and then.pets is not None:
        kept = [pet for pet in then.pets.value if pet.get("id") not in first.created]
        if kept:
            out.pets = Setting(kept, then.pets.evidence)
    out.created = first.created | then.created
    out.routes = first.routes or then.routes
    said = {text.split(": ", 1)[0] for text in first.inexpressible}
    for text in [*first.inexpressible, *then.inexpressible]:
        if text in first.inexpressible or text.split(": ", 1)[0] not in said:
            out.cannot(text)
    for text in [*first.unsettled, *then.unsettled]:
        out.open(text)
    _said_once(out, first)
    return out


def _own_lengths_kept(key: Key, first: Calibration, then: Calibration) -> Key:
    """A probe key, without the plan's own window lengths the probes fitted under another
    window (algorithm, alignment) than the recording settled: a length fitted to one rule
    means nothing under another (a sliding log's 1910 s is no fixed window on the clock's
    grid, which must divide the day)."""
    if not isinstance(key.plan, dict):
        return key
    plan, evidence = dict(key.plan), list(key.evidence)
    for window in ("minute", "day"):
        rule = [(f"ratelimit.{window}.{name}", default) for name, default in _WINDOW_RULE]
        if not any(first.settled(path) for path, _ in rule):
            continue
        if [first.value(p, d) for p, d in rule] == [then.value(p, d) for p, d in rule]:
            continue
        if plan.pop(f"{window}_seconds", None) is not None:
            evidence = [line for line in evidence if not line.startswith(f"{window}_seconds:")]
    return Key(key.name, key.alias, plan, evidence) if plan != key.plan else key


# A window's rule and mockstore's own (the schema's defaults).
_WINDOW_RULE = (("algorithm", "fixed"), ("align", "clock"))


def _said_once(out: Calibration, first: Calibration) -> None:
    """An older setting and its ``ratelimit:`` counterpart (``scenario.limits.ALIASES``), one
    settled by each side: the recording's (``first``) is kept, the other dropped."""
    for old, news in ALIASES.items():
        old_path = ".".join(map(str, old))
        new_paths = [".".join(map(str, new)) for new in news]
        present = [path for path in new_paths if path in out.settings]
        if old_path not in out.settings or not present:
            continue
        if old_path in first.settings and not any(path in first.settings for path in present):
            for path in present:
                del out.settings[path]
        else:
            del out.settings[old_path]
