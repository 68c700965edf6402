"""Calibrate's Error bodies: message templates, and fields computed from each answer.

A provider's Error messages often embed what the request got wrong ("Invalid value
'abc' for limit"), and its fields carry values of the answer: the wait in
milliseconds, the offending value, one entry per invalid field. Written as a
constant, such a field makes every answer of the mock say what one recorded answer
said. So what the mock would know of each recorded refusal (``subject``: the
value and parameter at fault and every invalid field, by mockstore's own
validation of the recorded request; the masked key, the wait, the allowance, the
request id) is looked for in the provider's words:

- a message becomes a template where each of those values was (its whole token),
  kept only when filling it in again gives every recorded message of its
  condition back;
- a field becomes ``generate: retry_after_ms`` (``_s``, ``value``, ``parameter``,
  ``details``) or a template when that reproduces every recorded value of it.

What no template or computed value reproduces is listed as not expressible.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from mockstore.error_bodies import masked, shown
from mockstore.errors import CONDITIONS, ApiError, FieldProblem
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.conditions import json_of
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import http_date
from mockstore.fidelity.replayer import bearer
from mockstore.schemas import operations
from mockstore.templates import fill
from mockstore.validation import QueryValidator, path_parameters, validate_body

Cite = Callable[..., str]
_OPERATIONS = operations()
_LIST_QUERY = QueryValidator(_OPERATIONS["listPets"])
_QUERY_CONDITIONS = frozenset({"bad_limit", "limit_above_maximum", "bad_status_filter"})
# A value this short is a number or a word too common to stand for a placeholder.
_SHORTEST = 2
_ITEM_NAMES = ("field", "pointer", "location", "reason", "message", "value")


def subject(s: Seen) -> ApiError | None:
    """What mockstore's own validation says the recorded request got wrong (its condition's)."""
    condition = s.condition
    item = s.item
    try:
        if condition in _QUERY_CONDITIONS:
            _LIST_QUERY(item.query.encode("latin-1", "replace"))
        elif condition == "bad_pet_id":
            path_parameters(_OPERATIONS["getPet"], {"petId": s.path.rsplit("/", 1)[-1]})
        elif condition == "invalid_body":
            value = json_of(item.body)
            validate_body(_OPERATIONS["createPet"], value)
        elif condition == "unknown_field":
            body = json_of(item.body)
            names = sorted(s.facts.unknown_fields)
            if names and isinstance(body, dict):
                return ApiError(
                    "unknown_field",
                    "",
                    value=names[0],
                    parameter=names[0],
                    details=tuple(
                        FieldProblem(
                            "body",
                            (n,),
                            "additionalProperties",
                            f"a NewPet has no field {n!r}",
                            body.get(n),
                        )
                        for n in names
                    ),
                )
        elif condition in ("bad_offset", "bad_cursor"):
            # The page parameter (calibrate's collections.page_refusals named it).
            named = [n for n in s.facts.query if n not in ("limit", "status")]
            if len(named) == 1:
                return ApiError("invalid_parameter", "", value=s.facts.query[named[0]][-1],
                                parameter=named[0])  # fmt: skip
        elif condition == "pet_not_found":
            raw = s.path.rsplit("/", 1)[-1]
            return ApiError("not_found", "", value=raw, parameter="petId")
        elif condition == "unsupported_media_type":
            sent = next((v for n, v in item.headers if n.lower() == "content-type"), "none")
            return ApiError("unsupported_media_type", "", value=sent, parameter="Content-Type")
        elif condition == "method_not_allowed":
            return ApiError("method_not_allowed", "", value=item.method)
        elif condition == "unknown_path":
            return ApiError("not_found", "", value=item.path)
    except ApiError as refused:
        return refused
    return None


def _wait(s: Seen) -> tuple[int, int] | None:
    """The wait a refusal states in whole seconds (its Retry-After, in seconds, a decimal or
    an HTTP-date from the answer's instant), and the most milliseconds that rounds up to."""
    value = s.headers.get("retry-after", "").strip()
    if value.isdigit():
        return int(value), int(value) * 1000
    if re.fullmatch(r"[0-9]{1,12}\.[0-9]{1,6}", value):
        # A decimal (Corral's 7.3): the milliseconds it states, to its own precision.
        return math.ceil(float(value)), math.ceil(float(value) * 1000)
    stated = http_date(value)
    if stated is None:
        return None
    seconds = max(0, math.ceil(round(stated - s.header_offset - s.item.time, 6)))
    return seconds, seconds * 1000


def _near(given: int, wait: tuple[int, int], millis: bool) -> bool:
    """Whether ``given`` is the wait of ``wait`` (in ms or s), to the second it is stated to
    (an HTTP-date's second, and the instant the answer was recorded at, may each round)."""
    seconds, most = wait
    if millis:
        return most - 2000 < given <= most + 1000
    return abs(given - seconds) <= 1


def facts_of(s: Seen, request_id: str | None) -> dict[str, str]:
    """The placeholders a template of this refusal could name, as the mock fills them in."""
    refused = subject(s)
    token = bearer(s.item.headers)
    found = {
        "code": str(s.code or ""),
        "status": str(s.status),
        "method": s.item.method,
        "path": s.item.path,
        "key": masked(token) if token else "",
        "limit": s.headers.get("x-ratelimit-limit", "").strip(),
        "request_id": request_id or "",
    }
    if refused is not None:
        found["value"] = shown(refused.value)
        found["parameter"] = refused.parameter or ""
    wait = _wait(s)
    if wait is not None:
        found["retry_after_s"] = str(wait[0])
    return found


def _ms_in(message: str, s: Seen) -> str | None:
    """A number of milliseconds in ``message`` that is the refusal's wait (within its second)."""
    wait = _wait(s)
    if wait is None:
        return None
    for number in re.findall(r"\b\d{3,}\b", message):
        if _near(int(number), wait, millis=True):
            return number
    return None


def template_of(message: str, values: dict[str, str]) -> str:
    """``message`` with each value (a whole token, longest first) replaced by its placeholder."""
    text = message.replace("{", "{{").replace("}", "}}")
    chosen = sorted(
        (
            (name, value)
            for name, value in values.items()
            # What the request got wrong may be one character (limit=0); anything else that
            # short (a status digit) would be found in words that are not it.
            if len(value) >= (1 if name in ("value", "parameter") else _SHORTEST)
        ),
        key=lambda pair: -len(pair[1]),
    )
    for name, value in chosen:
        escaped = value.replace("{", "{{").replace("}", "}}")
        text = re.sub(
            rf"(?<![A-Za-z0-9_]){re.escape(escaped)}(?![A-Za-z0-9_])",
            lambda _match, n=name: "{" + n + "}",
            text,
        )
    return text


def _fitting(texts: list[str], facts: list[dict[str, str]]) -> str | None:
    """A template every text is, filled in with its own facts; None when none is."""
    candidates = [template_of(text, fact) for text, fact in zip(texts, facts, strict=True)]
    for candidate in dict.fromkeys(candidates):
        if all(fill(candidate, fact) == text for text, fact in zip(texts, facts, strict=True)):
            return candidate
    return None


def learn_messages(
    seen: list[Seen], result: Calibration, cite: Cite, request_ids: list[str]
) -> None:
    """``behaviour.error_messages``: each condition's message as a template."""
    by_condition: dict[str, list[Seen]] = {}
    for s in seen:
        if s.condition in CONDITIONS and s.is_error and s.item.method != "HEAD":
            by_condition.setdefault(s.condition, []).append(s)
    for condition, found in by_condition.items():
        # A request of this condition that a limit or an outage refused first (a 503 of a
        # front end's bucket for a DELETE the service would answer 405) says another
        # condition's message: only the answers of the condition's own status count.
        usual = Counter(s.status for s in found).most_common(1)[0][0]
        members = [s for s in found if s.status == usual]
        texts = [s.body["message"] for s in members]
        facts = []
        for s in members:
            fact = facts_of(s, _request_id(s, request_ids))
            ms = _ms_in(s.body["message"], s)
            if ms is not None:
                fact["retry_after_ms"] = ms
            facts.append(fact)
        template = _fitting(texts, facts)
        if template is None:
            result.cannot(
                f"the Error message of {condition} varies in a way no template reproduces: "
                + "; ".join(cite(s) for s in members[:2])
            )
            continue
        if "{retry_after_ms}" in template:
            result.estimate(
                f"behaviour.error_messages.{condition}",
                f"behaviour.error_messages.{condition}: its wait in milliseconds is the mock's "
                "own (the recording states it to the second)",
            )
        result.set(f"behaviour.error_messages.{condition}", template, cite(members[0]))


def _request_id(s: Seen, names: list[str]) -> str | None:
    return next((s.headers[name] for name in names if name in s.headers), None)


def computed_field(name: str, members: list[Seen], request_ids: list[str]) -> dict[str, Any] | None:
    """The ``behaviour.error_fields`` entry that computes field ``name`` of each of ``members``'
    Error bodies (without its ``conditions``), or None when no computed value reproduces it."""
    values = [s.body[name] for s in members]
    refused = [subject(s) for s in members]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        waits = [_wait(s) for s in members]
        if all(w is not None for w in waits) and any(v > 1 for v in values):
            pairs = [(v, w) for v, w in zip(values, waits, strict=True) if w is not None]
            if all(_near(v, w, millis=False) for v, w in pairs) and max(values) < 10**5:
                return {"name": name, "generate": "retry_after_s"}
            if all(_near(v, w, millis=True) for v, w in pairs):
                return {"name": name, "generate": "retry_after_ms"}
    if all(r is not None for r in refused):
        if all(r is not None and v == r.value for v, r in zip(values, refused, strict=True)):
            return {"name": name, "generate": "value"}
        if all(r is not None and v == r.parameter for v, r in zip(values, refused, strict=True)):
            return {"name": name, "generate": "parameter"}
    if all(isinstance(v, list) for v in values):
        # The generator lists the field problems of mockstore's own refusal: none where it
        # finds none (a 404, a 429), so an empty list there fits; and a scenario's field
        # constraint lists its field, which calibrate cannot recompute (the limit is learned
        # apart): neither takes part in the fit.
        known = [(v, r) for v, r in zip(values, refused, strict=True) if r is not None]
        if known and all(
            v == [] or s.condition == "field_constraint"
            for v, r, s in zip(values, refused, members, strict=True)
            if r is None
        ):
            item = _item_shape([v for v, _ in known], [r for _, r in known])
            if item is not None:
                return {"name": name, "generate": "details", "item": item}
    if _names_the_parameter(values, members, refused):
        return {"name": name, "generate": "parameter"}
    if all(isinstance(v, str) for v in values):
        facts = [facts_of(s, _request_id(s, request_ids)) for s in members]
        template = _fitting(values, facts)  # type: ignore[arg-type]
        if template is not None and "{" in template.replace("{{", ""):
            return {"name": name, "template": template}
    return None


def _names_the_parameter(
    values: list[Any], members: list[Seen], refused: list[ApiError | None]
) -> bool:
    """Whether each value names the parameter or field its request got wrong.

    mockstore's own validation is the judge where it refuses the request too (the value
    is its parameter, or one of the fields it finds invalid: a provider may name another
    of them first); where it would not refuse it (a constraint or a number form the
    provider holds and mockstore's defaults do not), the value must name a field of the
    sent body or a query parameter of the request, and at least one answer must be the
    parameter mockstore names itself: a field that names a constant is no parameter.
    """
    exact = 0
    for value, s, error in zip(values, members, refused, strict=True):
        if not isinstance(value, str) or not value:
            return False
        if error is not None and value == error.parameter:
            exact += 1
        elif error is not None:
            if value not in {".".join(map(str, p.field)) for p in error.details}:
                return False
        elif value not in _sent_names(s):
            return False
    return exact > 0 and len(set(values)) > 1


def _sent_names(s: Seen) -> set[str]:
    """The query parameters and the body's top-level fields a request sent."""
    names = {name for name, _ in parse_qsl(s.item.query, keep_blank_values=True)}
    body = json_of(s.item.body) if s.item.body else None
    if isinstance(body, dict):
        names |= {str(name) for name in body}
    return names


def _item_shape(values: list[list[Any]], refused: list[ApiError | None]) -> dict[str, str] | None:
    """Each ``details`` entry's fields as templates of its invalid field, if one shape fits all."""
    entries: list[tuple[dict[str, Any], FieldProblem]] = []
    for value, error in zip(values, refused, strict=True):
        if error is None or len(value) < len(error.details):
            return None
        problems = sorted(error.details, key=lambda p: ".".join(map(str, p.field)))
        if len(value) > len(error.details):
            # The provider lists problems mockstore finds apart (an unknown field beside a
            # wrong type): only the entries that name a problem it finds take part.
            value = [
                entry
                for entry in value
                if isinstance(entry, dict)
                and any(_names_field({str(v) for v in entry.values()}, p) for p in problems)
            ]
            if len(value) != len(problems):
                return None
        given = sorted(
            value,
            key=lambda entry: (
                json.dumps(entry, sort_keys=True) if not isinstance(entry, dict) else ""
            ),
        )
        if not all(isinstance(entry, dict) for entry in given):
            return None
        entries.extend(_paired(given, problems))
    if not entries:
        return None
    keys = {key for entry, _ in entries for key in entry}
    shape: dict[str, str] = {}
    worded: list[str] = []
    for key in sorted(keys):
        for placeholder in _ITEM_NAMES:
            template = "{" + placeholder + "}"
            if all(
                str(entry.get(key)) == fill(template, _item_facts(problem))
                for entry, problem in entries
            ):
                shape[key] = template
                break
        else:
            constants = {json.dumps(entry.get(key)) for entry, _ in entries}
            if not all(isinstance(entry.get(key), str) for entry, _ in entries):
                return None
            if len(constants) == 1:
                shape[key] = entries[0][0][key].replace("{", "{{").replace("}", "}}")
            else:
                # The provider's own words for each problem, which no placeholder gives:
                # mockstore's words for the same problem, never one answer's constant.
                worded.append(key)
    if worded and not any(shape.get(key) in ("{field}", "{pointer}") for key in shape):
        return None  # an entry must at least name its field
    shape.update({key: "{message}" for key in worded})
    return shape


def _paired(
    given: list[dict[str, Any]], problems: list[FieldProblem]
) -> list[tuple[dict[str, Any], FieldProblem]]:
    """Each recorded entry with the invalid field it names (by any value naming the field)."""
    pairs = []
    left = list(problems)
    for entry in given:
        texts = {str(v) for v in entry.values()}
        match = next(
            (
                p
                for p in left
                if ".".join(map(str, p.field)) in texts
                or "".join(f"/{x}" for x in p.field) in texts
            ),
            None,
        )
        if match is None:
            match = left[0]
        left.remove(match)
        pairs.append((entry, match))
    return pairs


def _names_field(texts: set[str], problem: FieldProblem) -> bool:
    facts = _item_facts(problem)
    return facts["field"] in texts or facts["pointer"] in texts


def _item_facts(problem: FieldProblem) -> dict[str, str]:
    return {
        "field": ".".join(str(part) for part in problem.field),
        "pointer": "".join(f"/{part}" for part in problem.field),
        "location": problem.location,
        "reason": problem.reason,
        "message": problem.message,
        "value": shown(problem.value) if problem.sent else "",
    }


__all__ = ["computed_field", "facts_of", "learn_messages", "subject", "template_of"]
