"""The scenario builder: a scenario file's text to a ``Scenario``, or every problem at once.

``load_scenario`` parses the YAML (with each node's line and column), checks it
against the scenario JSON Schema, and builds the frozen model of
``mockstore.scenario.model``. What the schema cannot say (a plan that must
exist, a key defined twice, pets that must be valid Pets by the OpenAPI
document) is checked here, with the same file positions. Whatever a file
leaves out takes the schema's default, and every ``behaviour`` setting is built
the same way from the schema (``_behaviour``), so a new setting needs no code here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path as FilePath
from typing import Any

from mockstore import schemas, verdicts
from mockstore.clock import parse_time
from mockstore.limits import MAX_SCENARIO_BYTES
from mockstore.ratelimit import BUILTIN_PLANS, BanPolicy, Plan
from mockstore.scenario.collections import build_collections, scenario_pets
from mockstore.scenario.limits import build_limits, limiter_headers, plan_of, with_refusal
from mockstore.scenario.loader import (
    Marks,
    Problem,
    ScenarioError,
    check_schema,
    describe_document,
    did_you_mean,
    parse_yaml,
    problem_at,
    scenario_schema,
    schema_default,
)
from mockstore.scenario.model import (
    Behaviour,
    Delay,
    DriftAccept,
    FaultRule,
    KeySpec,
    Match,
    Reply,
    Route,
    Scenario,
    behaviour_value,
)
from mockstore.scenario.problems import build_account
from mockstore.scenario.surroundings import surroundings
from mockstore.urls import CONTROL_PREFIX, is_control_path

Path = tuple[str | int, ...]

# The ``behaviour`` settings, in the schema's order: each one a ``Behaviour`` field.
BEHAVIOUR_SETTINGS: tuple[str, ...] = tuple(
    scenario_schema()["properties"]["behaviour"]["properties"]
)


def load_scenario(text: str, file: str = "<scenario>") -> Scenario:
    """Parse, validate and build a scenario; raises ``ScenarioError``.

    The schema problems and the semantic ones (unknown plans, keys defined
    twice, invalid pets, ...) are reported together: the semantic checks skip
    only the parts the schema already refused, so one run shows every error.
    """
    if len(text) > MAX_SCENARIO_BYTES:
        message = (
            f"the scenario is {len(text):,} characters long; the limit is "
            f"{MAX_SCENARIO_BYTES:,} bytes (use generate: for large inventories)"
        )
        raise ScenarioError([Problem(file, 1, 1, "$", message)])
    source = text.encode("utf-8", "surrogatepass")
    # Loads that draw on no memory account (a start's) may take the data the same
    # text parsed into before, and the verdict on it (``mockstore.verdicts``): no
    # YAML parser and no jsonschema. Should such a load find any problem, it is
    # loaded again from the text, for the problems' places in the file.
    unpriced = build_account() is None
    if unpriced:
        data = verdicts.parsed_before("scenario", source)
        if isinstance(data, dict) and verdicts.known_valid(data):
            scenario, problems = _build(text, data, Marks(), file, known=True)
            if not problems:
                return scenario
    data, marks = parse_yaml(text, file)
    if not isinstance(data, dict):
        # Never quote it: a file given by mistake (say /etc/passwd) stays out of the log.
        message = (
            f"not a scenario: the file holds {describe_document(data)}, where a scenario "
            "is a mapping that starts with version: 1"
        )
        raise ScenarioError([Problem(file, 1, 1, "$", message)])
    # jsonschema's checks (the schema, the pets, the Error bodies) are skipped for data
    # the same code found valid before (``mockstore.verdicts``): most of a start.
    known = verdicts.known_valid(data)
    scenario, problems = _build(text, data, marks, file, known=known)
    if problems:
        raise ScenarioError(problems)
    if not known:
        verdicts.remember_valid(data)
    if unpriced:
        verdicts.keep_parsed("scenario", source, data)
    return scenario


def _build(
    text: str, data: dict[str, Any], marks: Marks, file: str, known: bool
) -> tuple[Scenario, list[Problem]]:
    """The scenario ``data`` makes, and every problem found in it, in file order."""
    checked = [] if known else check_schema(data, marks, file)
    builder = _Builder(data, marks, file, broken=[path for path, _ in checked], known=known)
    scenario = builder.build(text)
    problems = {str(p): p for p in [*(p for _, p in checked), *builder.problems]}
    return scenario, sorted(problems.values(), key=lambda p: (p.line, p.column, p.path))


# Headers mockstore writes on every answer (or some), and the setting that decides each:
# a constant header (behaviour.headers) may not name one.
_WRITTEN = {
    "content-type": "behaviour.content_type",
    "content-length": "the body",
    "transfer-encoding": "the server",
    "connection": "the server",
    "date": "the scenario clock",
    "x-ratelimit-limit": "plans",
    "x-ratelimit-remaining": "plans",
    "x-ratelimit-reset": "behaviour.ratelimit_reset",
    "retry-after": "behaviour.retry_after",
    "ratelimit": "behaviour.ratelimit_draft_headers",
    "ratelimit-policy": "behaviour.ratelimit_draft_headers",
    "www-authenticate": "behaviour.www_authenticate",
    "deprecation": "behaviour.deprecation_format",
    "sunset": "behaviour.sunset_header",
    "link": "behaviour.deprecation_link",
    "location": "behaviour.location",
    "etag": "behaviour.etag",
    "allow": "behaviour.serve_head",
}
# Headers that frame the message: the server derives them, a scenario may not.
# The hex digits of each behaviour.etag_digest (profile.ETAG_DIGESTS computes them; a test
# holds the two together): behaviour.etag_digits keeps at most that many.
_DIGEST_DIGITS = {"sha256": 64, "sha1": 40, "md5": 32}
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


_SCHEMA_DEFAULT = object()


class _Builder:
    """Turns schema-checked data into a Scenario, noting what the schema cannot check.

    ``broken`` holds the paths the schema refused. Building a part needs it
    whole (``clean``); checking one field needs only that field to be free of
    schema problems (``checkable``) and of the expected type, so the semantic
    checks run on everything the schema did not already report.
    """

    def __init__(
        self,
        data: dict[str, Any],
        marks: Marks,
        file: str,
        broken: list[Path] | None = None,
        known: bool = False,
    ) -> None:
        self.data = data
        self.marks = marks
        self.file = file
        self.problems: list[Problem] = []
        self._broken = [path for path in broken or [] if path]
        # jsonschema found the whole of ``data`` valid before: its checks are not run again.
        self.known = known

    def problem(self, path: Path, message: str, *, key: bool = False) -> None:
        self.problems.append(problem_at(self.file, self.marks, path, message, key=key))

    def clean(self, path: Path) -> bool:
        """True when the schema found nothing wrong at, inside or around ``path``."""
        for bad in self._broken:
            shorter = min(len(bad), len(path))
            if bad[:shorter] == path[:shorter]:
                return False
        return True

    def checkable(self, path: Path) -> bool:
        """True when the schema found nothing wrong at or inside ``path``."""
        return not any(bad[: len(path)] == path for bad in self._broken)

    def get(self, path: Path, default: Any = _SCHEMA_DEFAULT) -> Any:
        """The value at ``path`` if present and clean, else ``default``.

        Without ``default``, the scenario schema's own default for ``path``.
        """
        if default is _SCHEMA_DEFAULT:
            default = schema_default(*(str(p) for p in path))
        value: Any = self.data
        for part in path:
            if not isinstance(value, dict) or part not in value:
                return default
            value = value[part]
        return value if self.clean(path) else default

    def build(self, source: str) -> Scenario:
        plans = self._plans()
        keys = self._keys(plans)
        anonymous = self.get(("anonymous_plan",))
        if anonymous not in plans and self._plan_names_known():
            self.problem(("anonymous_plan",), self._unknown_plan(anonymous, plans))
        base_path = self.get(("base_path",))
        if is_control_path(base_path):
            self.problem(("base_path",), f"must not be under {CONTROL_PREFIX} (the control API)")
        self._check_profile()
        start_text = self.get(("clock", "start"), None)
        start = parse_time(start_text) if start_text is not None else None
        mode = self.get(("clock", "mode"))
        ban = None
        if self.get(("ban", "enabled")):
            ban = BanPolicy(
                after_rejections=self.get(("ban", "after_rejections")),
                within_seconds=self.get(("ban", "within_seconds")),
                duration_seconds=self.get(("ban", "duration_seconds")),
                status=self.get(("ban", "status")),
                trigger=self.get(("ban", "trigger")),
            )
        collections = build_collections(self.data, self.get, self.problem, self._written())
        key_names = set(self._key_names())
        faults = []
        for index, raw in self._items("faults"):
            path: Path = ("faults", index)
            self._check_fault(raw, path, key_names, plans, base_path)
            if self.clean(path):
                faults.append(self._fault(index, raw))
        routes = []
        for index, raw in self._items("routes"):
            path = ("routes", index)
            self._check_route(raw, path, base_path)
            if self.clean(path):
                routes.append(self._route(index, raw))
        # The limiter: the ratelimit: section, the older settings read into it.
        banning = self.get(("ban", "status")) if self.get(("ban", "enabled")) else None
        limits = build_limits(self, plans, banning)
        return Scenario(
            name=self.get(("name",), FilePath(self.file.split(" ")[0]).stem or "scenario"),
            description=self.get(("description",), "").strip(),
            seed=self.get(("seed",)),
            base_path=base_path,
            isolation=self.get(("isolation",)),
            clock_start=start,
            clock_mode=mode,
            clock_headers=self.get(("clock", "headers")),
            plans=plans,
            anonymous_plan=anonymous,
            keys=tuple(keys),
            ban=ban,
            pets=tuple(
                scenario_pets(
                    self._items("pets"),
                    self.clean,
                    self.problem,
                    lambda index: self.marks.at(("pets", index))[0],
                    keep=collections.unknown_fields == "keep",
                    known=self.known,
                )
            ),
            generate_pets=self.get(("generate", "pets")),
            behaviour=with_refusal(self, self._behaviour()),
            collections=collections,
            faults=tuple(faults),
            routes=tuple(routes),
            **surroundings(self.data, self.get, self.problem, self.checkable, base_path),
            journal_size=self.get(("journal", "size")),
            journal_body_bytes=self.get(("journal", "body_bytes")),
            drift_accept=self._drift_accept(),
            journal_max_bytes=self.get(("journal", "max_bytes")),
            journal_header_bytes=self.get(("journal", "header_bytes")),
            source=source,
            file=self.file,
            ratelimit=limits,
        )

    def _check_profile(self) -> None:
        """What the schema cannot say of a provider's profile (``behaviour``)."""
        written = self._written()
        if isinstance(total := self.get(("collections", "pagination", "total_header"), None), str):
            written[total.lower()] = "collections.pagination.total_header"
        for index, rule in self._behaviour_items("headers"):
            name = rule.get("name")
            if isinstance(name, str) and name.lower() in written:
                self.problem(
                    ("behaviour", "headers", index, "name"),
                    f"mockstore writes {name} itself: set it with {written[name.lower()]}",
                )
        for index, item in self._behaviour_items("error_fields"):
            if item.get("name") in ("code", "message", "status"):
                self.problem(
                    ("behaviour", "error_fields", index, "name"),
                    f"{item['name']!r} is one of the Error's own fields (code, message, status)",
                )
        digest = self.get(("behaviour", "etag_digest"))
        digits = self.get(("behaviour", "etag_digits"))
        if isinstance(digits, int) and digits > (length := _DIGEST_DIGITS.get(digest, 64)):
            self.problem(
                ("behaviour", "etag_digits"),
                f"{digits} hex digits: the {digest} of a body has only {length}",
            )
        link = self.get(("behaviour", "deprecation_link"))
        if isinstance(link, str):
            unknown = sorted(set(re.findall(r"\{([^{}]*)\}", link)) - {"successor"})
            if unknown:
                self.problem(
                    ("behaviour", "deprecation_link"),
                    f"{{{unknown[0]}}} names nothing: {{successor}} is the only placeholder",
                )

    def _written(self) -> dict[str, str]:  # the headers mockstore writes, and their settings
        rid = self.get(("behaviour", "request_id", "header"))
        written = _WRITTEN | ({rid.lower(): "behaviour.request_id"} if isinstance(rid, str) else {})
        return written | limiter_headers(self)  # the names ratelimit: gives its headers

    def _behaviour_items(self, name: str) -> list[tuple[int, dict[str, Any]]]:
        behaviour = self.data.get("behaviour")
        items = behaviour.get(name) if isinstance(behaviour, dict) else None
        if not isinstance(items, list):
            return []
        return [(index, raw) for index, raw in enumerate(items) if isinstance(raw, dict)]

    def _drift_accept(self) -> tuple[DriftAccept, ...]:
        drift = self.data.get("drift")
        if not isinstance(drift, dict) or not self.clean(("drift",)):
            return ()
        return tuple(
            DriftAccept(
                raw["class"], raw["where"], raw["reason"], raw.get("status"), raw.get("operation")
            )
            for raw in drift.get("accept", [])
        )

    def _items(self, section: str) -> list[tuple[int, dict[str, Any]]]:
        """The mapping items of a list section, with their indexes."""
        items = self.data.get(section)
        if not isinstance(items, list):
            return []
        return [(index, raw) for index, raw in enumerate(items) if isinstance(raw, dict)]

    def _field(self, raw: dict[str, Any], path: Path, name: str, kind: type | tuple) -> Any:
        """``raw[name]`` when it is there, of ``kind`` and free of schema problems."""
        value = raw.get(name)
        if (
            isinstance(value, kind)
            and not isinstance(value, bool)
            and self.checkable((*path, name))
        ):
            return value
        return None

    def _plan_names_known(self) -> bool:
        """False when ``plans`` is not a mapping, so no name can be called unknown."""
        return "plans" not in self.data or isinstance(self.data["plans"], dict)

    def _plans(self) -> dict[str, Plan]:
        plans = dict(BUILTIN_PLANS)
        raw_plans = self.data.get("plans")
        if isinstance(raw_plans, dict):
            for name, raw in raw_plans.items():
                if self.clean(("plans", name)):
                    plans[name] = plan_of(name, raw)
                else:
                    # Refused by the schema, but named: keys using it are not "unknown".
                    plans[name] = Plan(name, 1, 1)
        return plans

    def _key_names(self) -> list[str]:
        raw_keys = self.data.get("keys")
        if not isinstance(raw_keys, list):
            return []
        return [k["key"] for k in raw_keys if isinstance(k, dict) and isinstance(k.get("key"), str)]

    @staticmethod
    def _unknown_plan(name: str, plans: dict[str, Plan]) -> str:
        known = sorted(n for n in plans if not n.startswith("custom:"))
        return f"unknown plan {name!r}{did_you_mean(name, known)} (known: {', '.join(known)})"

    def _keys(self, plans: dict[str, Plan]) -> list[KeySpec]:
        keys: list[KeySpec] = []
        first_seen: dict[str, int] = {}
        for index, raw in self._items("keys"):
            path: Path = ("keys", index)
            key = self._field(raw, path, "key", str)
            if key is not None:
                if key in first_seen:
                    line = self.marks.at(("keys", first_seen[key]))[0]
                    self.problem(
                        (*path, "key"), f"key {key!r} is defined twice (first on line {line})"
                    )
                    continue
                first_seen[key] = index
            plan_name = self._field(raw, path, "plan", str)
            if plan_name is not None and plan_name not in plans and self._plan_names_known():
                self.problem((*path, "plan"), self._unknown_plan(plan_name, plans))
                continue
            if not self.clean(path):
                continue
            plan_value = raw["plan"]
            if isinstance(plan_value, dict):
                plan_name = f"custom:{key}"
                plans[plan_name] = plan_of(plan_name, plan_value)
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
            keys.append(
                KeySpec(key, plan_name, raw.get("tenant", key), minute, day, raw.get("recorded_as"))
            )
        return keys

    def _behaviour(self) -> Behaviour:
        # Every setting the same way: the file's value (else the schema's default),
        # as the model holds it.
        return Behaviour(
            **{
                name: behaviour_value(name, self.get(("behaviour", name), self._default(name)))
                for name in BEHAVIOUR_SETTINGS
            }
        )

    @staticmethod
    def _default(name: str) -> Any:
        # A mapping (error_codes, request_id, ...) has a default per entry, not one
        # for the whole mapping.
        spec = scenario_schema()["properties"]["behaviour"]["properties"][name]
        return spec.get("default", {})

    def _check_reply(self, raw: Any, path: Path) -> None:
        """An error status needs an Error body whose status matches (unless raw)."""
        if not isinstance(raw, dict):
            return
        self._check_headers(raw, path)
        status = self._field(raw, path, "status", int)
        if status is None or status < 400 or raw.get("raw", False) is True:
            return
        if "body" not in raw:
            self.problem(
                path,
                f"an error status ({status}) needs an Error body "
                f"{{code, message, status: {status}}} (or raw: true)",
            )
            return
        if not self.checkable((*path, "body")):
            return
        body = raw["body"]
        errors = () if self.known else schemas.errors_of(schemas.schema_validator("Error"), body)
        for error in errors:
            self.problem(
                (*path, "body", *error.absolute_path),
                "not an Error: " + schemas.describe(error, ""),
            )
        if isinstance(body, dict) and body.get("status") not in (None, status):
            self.problem(
                (*path, "body", "status"),
                f"Error status {body.get('status')} differs from the response status {status}",
            )

    def _check_headers(self, raw: dict[str, Any], path: Path) -> None:
        """Scripted headers must be sendable: a token name, a Latin-1 one-line value."""
        headers = self._field(raw, path, "headers", dict)
        for name, value in (headers or {}).items():
            where = (*path, "headers", name)
            if name.lower() in _FRAMING_HEADERS:
                self.problem(
                    where, f"{name} is set by the server from the body; remove it", key=True
                )
            elif not _HEADER_NAME.fullmatch(name):
                self.problem(where, f"{name!r} is not a valid HTTP header name", key=True)
            if isinstance(value, str) and not _HEADER_VALUE.fullmatch(value):
                self.problem(where, "a header value must be one line of Latin-1 text")

    @staticmethod
    def _reply(raw: dict[str, Any]) -> Reply:
        """A checked ``respond`` encoded once, so answering costs no encoding."""
        body = raw.get("body")
        encoded = None
        if "body" in raw:
            # A lone surrogate (JSON text may escape one) has no UTF-8 form: raw text
            # writes it as "?", JSON escapes it again (still valid JSON), never a 500.
            if isinstance(body, str) and raw.get("raw", False):
                encoded = body.encode("utf-8", "replace")
            else:
                try:
                    encoded = json.dumps(body, ensure_ascii=False).encode()
                except UnicodeEncodeError:
                    encoded = json.dumps(body).encode()
        headers = tuple((str(k), str(v)) for k, v in raw.get("headers", {}).items())
        return Reply(raw["status"], encoded, headers, raw.get("ratelimit_headers", True))

    def _check_where(self, raw: dict[str, Any], path: Path, base_path: str) -> None:
        """A path must be relative to the base path, or it could never match."""
        where = self._field(raw, path, "path", str)
        if base_path and where is not None and where.startswith(base_path + "/"):
            self.problem(
                (*path, "path"),
                f"paths are relative to base_path {base_path}: write {where[len(base_path) :]!r}",
            )

    def _check_match(
        self,
        raw: Any,
        path: Path,
        key_names: set[str],
        plans: dict[str, Plan],
        base_path: str,
    ) -> None:
        if not isinstance(raw, dict):
            return
        key = self._field(raw, path, "key", str)
        if key is not None and key not in key_names:
            hint = did_you_mean(key, key_names)
            self.problem((*path, "key"), f"key {key!r} is not defined under keys{hint}")
        plan = self._field(raw, path, "plan", str)
        if plan is not None and plan not in plans and self._plan_names_known():
            self.problem((*path, "plan"), self._unknown_plan(plan, plans))
        between = self._field(raw, path, "between_seconds", list)
        if between is not None and between[0] >= between[1]:
            self.problem((*path, "between_seconds"), "the start must be before the end")
        first = self._field(raw, path, "from_call", int)
        last = self._field(raw, path, "until_call", int)
        if first is not None and last is not None and first > last:
            self.problem((*path, "from_call"), "from_call must not be after until_call")
        if "operation" in raw and ("method" in raw or "path" in raw):
            self.problem(path, "use operation, or method and path, not both")
        self._check_where(raw, path, base_path)

    def _check_fault(
        self,
        raw: dict[str, Any],
        path: Path,
        key_names: set[str],
        plans: dict[str, Plan],
        base_path: str,
    ) -> None:
        self._check_match(raw.get("match"), (*path, "match"), key_names, plans, base_path)
        self._check_reply(raw.get("respond"), (*path, "respond"))
        delay = raw.get("delay")
        if isinstance(delay, dict):
            bounds = self._field(delay, (*path, "delay"), "uniform_ms", list)
            if bounds is not None and bounds[0] > bounds[1]:
                self.problem((*path, "delay", "uniform_ms"), "the low bound is above the high")

    def _check_route(self, raw: dict[str, Any], path: Path, base_path: str) -> None:
        # The schema reports a route that names neither or all of operation,
        # method and path; one naming an operation and a method only passes it.
        if "operation" in raw and ("method" in raw) != ("path" in raw):
            self.problem(path, "a route needs either operation, or method and path (not both)")
        self._check_where(raw, path, base_path)
        self._check_reply(raw.get("respond"), (*path, "respond"))

    @staticmethod
    def _match(raw: dict[str, Any]) -> Match:
        between = raw.get("between_seconds")
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
            every=raw.get("every"),
            probability=raw.get("probability"),
            between_seconds=(float(between[0]), float(between[1])) if between else None,
        )

    def _fault(self, index: int, raw: dict[str, Any]) -> FaultRule:
        delay = None
        spec = raw.get("delay")
        if spec is not None:
            if "fixed_ms" in spec:
                delay = Delay("fixed", spec["fixed_ms"])
            elif "uniform_ms" in spec:
                delay = Delay("uniform", *spec["uniform_ms"])
            else:
                delay = Delay(
                    "lognormal", spec["lognormal"]["median_ms"], spec["lognormal"]["sigma"]
                )
        return FaultRule(
            index=index,
            name=raw.get("name", f"faults[{index}]"),
            match=self._match(raw["match"]),
            reply=self._reply(raw["respond"]) if "respond" in raw else None,
            delay=delay,
            fault=raw.get("fault"),
        )

    def _route(self, index: int, raw: dict[str, Any]) -> Route:
        return Route(
            index=index,
            operation=raw.get("operation"),
            method=raw.get("method"),
            path=raw.get("path"),
            reply=self._reply(raw["respond"]),
        )


__all__ = ["BEHAVIOUR_SETTINGS", "load_scenario"]
