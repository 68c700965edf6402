"""The scenario model: a frozen description of how the mock behaves.

``load_scenario`` turns a file's text into a ``Scenario`` or raises
``ScenarioError`` with every problem at once. What the JSON Schema cannot say
(a plan that must exist, a key defined twice, pets that must be valid Pets by
the OpenAPI document) is checked here, with the same file positions.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path as FilePath
from typing import Any

from mockstore import schemas
from mockstore.clock import parse_time
from mockstore.ratelimit import BUILTIN_PLANS, BanPolicy, Plan
from mockstore.scenario.loader import (
    Marks,
    Problem,
    ScenarioError,
    json_path,
    parse_yaml,
    problem_at,
    schema_problems,
)

SUNSET = parse_time("2030-12-05T00:00:00Z")
# The spec gives no deprecation date; this default is documented in the README.
DEPRECATED_SINCE = parse_time("2026-01-01T00:00:00Z")
FAULT_KINDS = ("connection_reset", "empty_response", "malformed_json", "truncated_body", "slow_body")


@dataclass(frozen=True, slots=True)
class Behaviour:
    """The knobs for what the spec leaves open."""

    default_status: str | None = None
    retry_after: str = "seconds"
    after_sunset: str = "gone"
    ratelimit_draft_headers: bool = False
    max_body_bytes: int = 1_048_576
    deprecated_since: float = DEPRECATED_SINCE
    sunset: float = SUNSET


@dataclass(frozen=True, slots=True)
class KeySpec:
    key: str
    plan: str
    tenant: str
    used_minute: int = 0
    used_day: int = 0


@dataclass(frozen=True, slots=True)
class Delay:
    kind: str  # fixed | uniform | lognormal
    first: float  # fixed: ms; uniform: low ms; lognormal: median ms
    second: float = 0.0  # uniform: high ms; lognormal: sigma

    def draw_ms(self, rng: random.Random) -> float:
        if self.kind == "fixed":
            return self.first
        if self.kind == "uniform":
            return rng.uniform(self.first, self.second)
        return self.first * rng.lognormvariate(0.0, self.second)


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted answer, encoded once at load time."""

    status: int
    body: bytes | None
    headers: tuple[tuple[str, str], ...] = ()
    ratelimit_headers: bool = True


@dataclass(frozen=True, slots=True)
class Match:
    operation: str | None = None
    method: str | None = None
    path: str | None = None
    key: str | None = None
    plan: str | None = None
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: tuple[tuple[str, Any], ...] = ()
    calls: frozenset[int] = frozenset()
    from_call: int | None = None
    until_call: int | None = None
    probability: float | None = None
    between_seconds: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class FaultRule:
    index: int
    name: str
    match: Match
    reply: Reply | None = None
    delay: Delay | None = None
    fault: str | None = None


@dataclass(frozen=True, slots=True)
class Route:
    index: int
    operation: str | None
    method: str | None
    path: str | None
    reply: Reply


@dataclass(frozen=True)
class Scenario:
    """One loaded, valid scenario. Immutable: running state is built from it."""

    name: str = "default"
    description: str = ""
    seed: int = 0
    base_path: str = "/v1"
    isolation: str = "shared"
    clock_start: float | None = None
    clock_mode: str = "running"
    plans: dict[str, Plan] = field(default_factory=lambda: dict(BUILTIN_PLANS))
    anonymous_plan: str = "free"
    keys: tuple[KeySpec, ...] = ()
    ban: BanPolicy | None = BanPolicy()
    pets: tuple[dict[str, Any], ...] = ()
    generate_pets: int = 0
    behaviour: Behaviour = Behaviour()
    faults: tuple[FaultRule, ...] = ()
    routes: tuple[Route, ...] = ()
    journal_size: int = 10_000
    journal_body_bytes: int = 4096
    source: str = ""
    file: str = "<scenario>"

    def initial_pets(self) -> list[dict[str, Any]]:
        """The listed pets plus the seeded generated ones, in id order."""
        pets = [dict(p) for p in self.pets]
        if self.generate_pets:
            pets.extend(generate_pets(self.generate_pets, self.seed, pets))
        return pets

    def to_json(self) -> dict[str, Any]:
        """A summary for ``GET /__mockstore/scenario``."""
        return {
            "name": self.name,
            "description": self.description,
            "file": self.file,
            "seed": self.seed,
            "base_path": self.base_path,
            "isolation": self.isolation,
            "clock": {"start": self.clock_start, "mode": self.clock_mode},
            "plans": {
                n: {"per_minute": p.per_minute, "per_day": p.per_day} for n, p in self.plans.items()
            },
            "keys": [{"key": k.key, "plan": k.plan, "tenant": k.tenant} for k in self.keys],
            "faults": len(self.faults),
            "routes": len(self.routes),
            "pets": len(self.pets) + self.generate_pets,
            "source": self.source,
        }


_NAMES = (
    "Rex Bella Max Luna Charlie Lucy Cooper Daisy Milo Bailey Rocky Sadie Buddy Molly Bear "
    "Maggie Duke Sophie Tucker Chloe Oliver Lola Jack Zoe Toby Stella Leo Coco Bruno Nala"
).split()
_STATUSES = ("available", "pending", "sold")


def generate_pets(count: int, seed: int, existing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``count`` schema-valid pets, the same for the same seed, after the listed ids."""
    rng = random.Random(f"mockstore-generate-{seed}")
    next_id = max((p["id"] for p in existing), default=0) + 1
    pets = []
    for offset in range(count):
        pets.append(
            {
                "id": next_id + offset,
                "name": f"{rng.choice(_NAMES)} {rng.randrange(1, 1000)}",
                "categoryId": rng.randrange(1, 21),
                "status": rng.choice(_STATUSES),
            }
        )
    return pets


def bundled_dir() -> Any:
    return resources.files("mockstore.bundled")


def bundled_names() -> list[str]:
    return sorted(
        entry.name.removesuffix(".yaml")
        for entry in bundled_dir().iterdir()
        if entry.name.endswith(".yaml")
    )


def read_scenario_source(name_or_path: str) -> tuple[str, str]:
    """The text and display name of a bundled scenario name or a file path.

    Raises ``ScenarioError`` naming the bundled scenarios when neither exists.
    """
    candidate = FilePath(name_or_path)
    if candidate.is_file():
        return candidate.read_text(encoding="utf-8"), str(candidate)
    bundled = bundled_dir().joinpath(f"{name_or_path}.yaml")
    if "/" not in name_or_path and bundled.is_file():
        return bundled.read_text(encoding="utf-8"), f"{name_or_path}.yaml (bundled)"
    names = ", ".join(bundled_names())
    message = f"no scenario file or bundled scenario named {name_or_path!r}; bundled: {names}"
    raise ScenarioError([Problem(name_or_path, 1, 1, "$", message)])


def load_scenario_file(name_or_path: str) -> Scenario:
    text, file = read_scenario_source(name_or_path)
    return load_scenario(text, file)


def load_scenario(text: str, file: str = "<scenario>") -> Scenario:
    """Parse, validate and build a scenario; raises ``ScenarioError``."""
    data, marks = parse_yaml(text, file)
    problems = schema_problems(data, marks, file)
    if problems:
        raise ScenarioError(problems)
    builder = _Builder(data, marks, file)
    scenario = builder.build(text)
    if builder.problems:
        raise ScenarioError(sorted(builder.problems, key=lambda p: (p.line, p.column, p.path)))
    return scenario


class _Builder:
    """Turns schema-valid data into a Scenario, noting what the schema cannot check."""

    def __init__(self, data: dict[str, Any], marks: Marks, file: str) -> None:
        self.data = data
        self.marks = marks
        self.file = file
        self.problems: list[Problem] = []

    def problem(self, path: tuple[str | int, ...], message: str) -> None:
        self.problems.append(problem_at(self.file, self.marks, path, message))

    def build(self, source: str) -> Scenario:
        d = self.data
        plans = dict(BUILTIN_PLANS)
        for name, raw in d.get("plans", {}).items():
            plans[name] = Plan(name, raw["per_minute"], raw["per_day"])
        keys = self._keys(d.get("keys", []), plans)
        anonymous = d.get("anonymous_plan", "free")
        if anonymous not in plans:
            self.problem(("anonymous_plan",), self._unknown_plan(anonymous, plans))
        base_path = d.get("base_path", "/v1")
        if base_path.startswith("/__mockstore"):
            self.problem(("base_path",), "must not be under /__mockstore (the control API)")
        clock = d.get("clock", {})
        start = parse_time(clock["start"]) if "start" in clock else None
        mode = clock.get("mode", "running")
        raw_ban = d.get("ban", {})
        ban = None
        if raw_ban.get("enabled", True):
            ban = BanPolicy(
                after_rejections=raw_ban.get("after_rejections", 10),
                within_seconds=raw_ban.get("within_seconds", 60),
                duration_seconds=raw_ban.get("duration_seconds", 600),
                status=raw_ban.get("status", 429),
            )
        key_names = {k.key for k in keys}
        return Scenario(
            name=d.get("name", FilePath(self.file.split(" ")[0]).stem or "scenario"),
            description=d.get("description", "").strip(),
            seed=d.get("seed", 0),
            base_path=base_path,
            isolation=d.get("isolation", "shared"),
            clock_start=start,
            clock_mode=mode,
            plans=plans,
            anonymous_plan=anonymous,
            keys=tuple(keys),
            ban=ban,
            pets=tuple(self._pets(d.get("pets", []))),
            generate_pets=d.get("generate", {}).get("pets", 0),
            behaviour=self._behaviour(d.get("behaviour", {})),
            faults=tuple(
                self._fault(i, raw, key_names, plans) for i, raw in enumerate(d.get("faults", []))
            ),
            routes=tuple(self._route(i, raw) for i, raw in enumerate(d.get("routes", []))),
            journal_size=d.get("journal", {}).get("size", 10_000),
            journal_body_bytes=d.get("journal", {}).get("body_bytes", 4096),
            source=source,
            file=self.file,
        )

    @staticmethod
    def _unknown_plan(name: str, plans: dict[str, Plan]) -> str:
        return f"unknown plan {name!r} (known: {', '.join(sorted(plans))})"

    def _keys(self, raw_keys: list[dict[str, Any]], plans: dict[str, Plan]) -> list[KeySpec]:
        keys: list[KeySpec] = []
        first_seen: dict[str, int] = {}
        for index, raw in enumerate(raw_keys):
            path = ("keys", index)
            key = raw["key"]
            if key in first_seen:
                line = self.marks.at(("keys", first_seen[key]))[0]
                self.problem((*path, "key"), f"key {key!r} is defined twice (first on line {line})")
                continue
            first_seen[key] = index
            plan_value = raw["plan"]
            if isinstance(plan_value, dict):
                plan_name = f"custom:{key}"
                plans[plan_name] = Plan(plan_name, plan_value["per_minute"], plan_value["per_day"])
            else:
                plan_name = plan_value
                if plan_name not in plans:
                    self.problem((*path, "plan"), self._unknown_plan(plan_name, plans))
                    continue
            plan = plans[plan_name]
            used = raw.get("used", {})
            minute, day = used.get("minute", 0), used.get("day", used.get("minute", 0))
            if minute > plan.per_minute:
                self.problem(
                    (*path, "used", "minute"),
                    f"{minute} is more than the plan's per_minute allowance ({plan.per_minute})",
                )
            if day > plan.per_day:
                self.problem(
                    (*path, "used", "day"),
                    f"{day} is more than the plan's per_day allowance ({plan.per_day})",
                )
            if minute > day:
                self.problem((*path, "used"), f"minute ({minute}) cannot exceed day ({day})")
            keys.append(KeySpec(key, plan_name, raw.get("tenant", key), minute, day))
        return keys

    def _pets(self, raw_pets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        validator = schemas.schema_validator("Pet")
        seen: dict[Any, int] = {}
        pets = []
        for index, pet in enumerate(raw_pets):
            errors = list(schemas.errors_of(validator, pet))
            for error in errors:
                self.problem(
                    ("pets", index, *error.absolute_path),
                    "not a valid Pet: " + schemas.describe(error, ""),
                )
            extra = sorted(set(pet) - {"id", "name", "categoryId", "status"})
            for name in extra:
                self.problem(("pets", index, name), f"unknown Pet field {name!r}")
            if errors or extra:
                continue
            if pet["id"] in seen:
                line = self.marks.at(("pets", seen[pet["id"]]))[0]
                self.problem(
                    ("pets", index, "id"), f"pet id {pet['id']} is used twice (first on line {line})"
                )
                continue
            seen[pet["id"]] = index
            pets.append(pet)
        return pets

    def _behaviour(self, raw: dict[str, Any]) -> Behaviour:
        status = raw.get("default_status", "omit")
        return Behaviour(
            default_status=None if status == "omit" else status,
            retry_after=raw.get("retry_after", "seconds"),
            after_sunset=raw.get("after_sunset", "gone"),
            ratelimit_draft_headers=raw.get("ratelimit_draft_headers", False),
            max_body_bytes=raw.get("max_body_bytes", 1_048_576),
            deprecated_since=parse_time(raw["deprecated_since"])
            if "deprecated_since" in raw
            else DEPRECATED_SINCE,
            sunset=parse_time(raw["sunset"]) if "sunset" in raw else SUNSET,
        )

    def _reply(self, raw: dict[str, Any], path: tuple[str | int, ...]) -> Reply:
        status = raw["status"]
        has_body = "body" in raw
        body = raw.get("body")
        if status >= 400 and not raw.get("raw", False):
            validator = schemas.schema_validator("Error")
            if not has_body:
                self.problem(
                    path, f"an error status ({status}) needs an Error body (or raw: true)"
                )
            else:
                for error in schemas.errors_of(validator, body):
                    self.problem(
                        (*path, "body", *error.absolute_path),
                        "not an Error: " + schemas.describe(error, ""),
                    )
                if isinstance(body, dict) and body.get("status") not in (None, status):
                    self.problem(
                        (*path, "body", "status"),
                        f"Error status {body.get('status')} differs from the response status {status}",
                    )
        encoded = None
        if has_body:
            if isinstance(body, str) and raw.get("raw", False):
                encoded = body.encode()
            else:
                encoded = json.dumps(body, ensure_ascii=False).encode()
        headers = tuple((str(k), str(v)) for k, v in raw.get("headers", {}).items())
        return Reply(status, encoded, headers, raw.get("ratelimit_headers", True))

    def _match(
        self,
        raw: dict[str, Any],
        path: tuple[str | int, ...],
        key_names: set[str],
        plans: dict[str, Plan],
    ) -> Match:
        if "key" in raw and raw["key"] not in key_names:
            self.problem((*path, "key"), f"key {raw['key']!r} is not defined under keys")
        if "plan" in raw and raw["plan"] not in plans:
            self.problem((*path, "plan"), self._unknown_plan(raw["plan"], plans))
        between = raw.get("between_seconds")
        if between and between[0] > between[1]:
            self.problem((*path, "between_seconds"), "the start must not be after the end")
        if raw.get("from_call") and raw.get("until_call") and raw["from_call"] > raw["until_call"]:
            self.problem((*path, "from_call"), "from_call must not be after until_call")
        if "operation" in raw and ("method" in raw or "path" in raw):
            self.problem(path, "use operation, or method and path, not both")
        return Match(
            operation=raw.get("operation"),
            method=raw.get("method"),
            path=raw.get("path"),
            key=raw.get("key"),
            plan=raw.get("plan"),
            query=tuple(sorted(raw.get("query", {}).items())),
            headers=tuple(sorted((k.lower(), v) for k, v in raw.get("headers", {}).items())),
            body=tuple(sorted(raw.get("body", {}).items())),
            calls=frozenset(raw.get("calls", ())),
            from_call=raw.get("from_call"),
            until_call=raw.get("until_call"),
            probability=raw.get("probability"),
            between_seconds=tuple(between) if between else None,
        )

    def _fault(
        self, index: int, raw: dict[str, Any], key_names: set[str], plans: dict[str, Plan]
    ) -> FaultRule:
        path: tuple[str | int, ...] = ("faults", index)
        delay = None
        if "delay" in raw:
            spec = raw["delay"]
            if "fixed_ms" in spec:
                delay = Delay("fixed", spec["fixed_ms"])
            elif "uniform_ms" in spec:
                low, high = spec["uniform_ms"]
                if low > high:
                    self.problem((*path, "delay", "uniform_ms"), "the low bound is above the high")
                delay = Delay("uniform", low, high)
            else:
                delay = Delay("lognormal", spec["lognormal"]["median_ms"], spec["lognormal"]["sigma"])
        return FaultRule(
            index=index,
            name=raw.get("name", f"faults[{index}]"),
            match=self._match(raw["match"], (*path, "match"), key_names, plans),
            reply=self._reply(raw["respond"], (*path, "respond")) if "respond" in raw else None,
            delay=delay,
            fault=raw.get("fault"),
        )

    def _route(self, index: int, raw: dict[str, Any]) -> Route:
        return Route(
            index=index,
            operation=raw.get("operation"),
            method=raw.get("method"),
            path=raw.get("path"),
            reply=self._reply(raw["respond"], ("routes", index, "respond")),
        )


__all__ = [
    "Behaviour",
    "FaultRule",
    "Scenario",
    "ScenarioError",
    "json_path",
    "load_scenario",
    "load_scenario_file",
]
