"""The coverage report: which responses has the client actually met?

For each operation of the OpenAPI document, the responses worth meeting are

* the statuses the document lists for it (``responses``); those the spec
  itself states are *documented*, those marked ``x-assumed`` are mockstore's
  answers where the spec is silent, and
* the statuses mockstore can produce for it, from ``errors.ERROR_CODES``:
  which codes apply to an operation is judged from its shape in the document
  (a request body, parameters, path parameters, ``deprecated``), by the
  ``APPLIES`` table below.

A status the client met that is neither is listed as *unexpected* (a scenario's
scripted 503, a connection fault). ``never_met`` names the documented ones the
client never saw — "your tests never met a 429 on createPet".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from mockstore import schemas
from mockstore.errors import ERROR_CODES
from mockstore.reports.model import Fact


def _always(op: schemas.Operation) -> bool:
    return True


def _has_body(op: schemas.Operation) -> bool:
    return op.body_schema is not None


def _has_parameters(op: schemas.Operation) -> bool:
    return bool(op.parameters)


def _has_path_parameters(op: schemas.Operation) -> bool:
    return any(p.location == "path" for p in op.parameters)


def _deprecated(op: schemas.Operation) -> bool:
    return op.deprecated


def _undescribed(op: schemas.Operation) -> bool:
    return op.success_status is None


# Which operations can meet each Error code. Every code of ERROR_CODES is here
# or in NOT_PER_OPERATION (tests/test_coverage.py checks it), so a new code
# cannot be forgotten by the report.
APPLIES: dict[str, Callable[[schemas.Operation], bool]] = {
    "malformed_json": _has_body,
    "missing_body": _has_body,
    "validation_failed": _has_body,
    "invalid_parameter": _has_parameters,
    "unauthorized": _always,
    "invalid_token": _always,
    "not_found": _has_path_parameters,
    "gone": _deprecated,
    "payload_too_large": _has_body,
    "request_timeout": _has_body,
    "unsupported_media_type": _has_body,
    "rate_limited": _always,
    "key_banned": _always,
    "store_full": _has_body,
    "not_implemented": _undescribed,
}
NOT_PER_OPERATION: dict[str, str] = {
    "method_not_allowed": "answers a known path with a wrong method: no operation is called",
    "upstream_unreachable": "the recorder's own answer when the upstream fails, not the API's",
    "upstream_timeout": "the recorder's own answer when the upstream is too slow, not the API's",
    "bad_request": "the HTTP message itself is broken: answered by the server, never journaled",
    "headers_too_large": "the head is over the limit: answered by the server, never journaled",
    "server_busy": "no connection is free: answered by the server, never journaled",
    "internal_error": "a bug in mockstore, on any operation: not a response to cover",
    "unknown_field": "only a scenario whose provider refuses unknown NewPet fields sends it "
    "(behaviour.unknown_fields: refuse)",
    "memory_budget": "the mock's own memory is full (--memory-budget): not the service's answer",
    "state_unavailable": "the mock's own shared state (--state, Redis) is out of reach: "
    "not the service's answer",
    "maintenance": "only a scenario's maintenance window sends it, on any path it names: "
    "not a response the OpenAPI document lists per operation",
    "cors_rejected": "a refused CORS preflight (OPTIONS): no operation is called",
}


def expected_responses(op: schemas.Operation) -> dict[int, dict[str, Any]]:
    """For one operation: status -> {"documented": bool, "codes": [codes the mock may send]}."""
    expected: dict[int, dict[str, Any]] = {
        int(status): {"documented": int(status) not in op.assumed, "codes": []}
        for status in op.responses
        if status.isdigit()
    }
    for code, applies in APPLIES.items():
        if applies(op):
            status = ERROR_CODES[code].status
            slot = expected.setdefault(status, {"documented": False, "codes": []})
            slot["codes"].append(code)
    return dict(sorted(expected.items()))


def coverage(facts: list[Fact]) -> dict[str, Any]:
    """Per operation, the responses met (with their Error codes) against those expected."""
    met: dict[str, Counter[int]] = defaultdict(Counter)
    codes: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)
    for fact in facts:
        name = fact.operation or "(no operation)"
        met[name][fact.status] += 1
        if fact.code:
            codes[(name, fact.status)][fact.code] += 1

    operations = []
    never_met: list[str] = []
    possible_unmet: list[str] = []
    documented_total = documented_met = 0
    for name, op in schemas.operations().items():
        seen = met.pop(name, Counter())
        responses = []
        for status, spec in expected_responses(op).items():
            count = seen.pop(status, 0)
            seen_codes = dict(codes.get((name, status), {}))
            responses.append(
                {
                    "status": status,
                    "documented": spec["documented"],
                    "met": count,
                    "codes": seen_codes,
                    "codes_never_met": [c for c in spec["codes"] if c not in seen_codes],
                }
            )
            label = f"{name} {status}"
            if spec["documented"]:
                documented_total += 1
                documented_met += bool(count)
                if not count:
                    never_met.append(label)
            elif not count:
                possible_unmet.append(label)
        operations.append(
            {
                "operation": name,
                "method": op.method,
                "path": op.path,
                "deprecated": op.deprecated,
                "requests": sum(r["met"] for r in responses) + sum(seen.values()),
                "responses": responses,
                "unexpected": [
                    {"status": status, "met": count, "codes": dict(codes.get((name, status), {}))}
                    for status, count in sorted(seen.items())
                ],
            }
        )
    other = [
        {
            "operation": name,
            "requests": sum(statuses.values()),
            "statuses": {str(status): count for status, count in sorted(statuses.items())},
        }
        for name, statuses in sorted(met.items())
    ]
    return {
        "operations": operations,
        "other": other,
        "never_met": never_met,
        "possible_never_met": possible_unmet,
        "documented": {"met": documented_met, "total": documented_total},
    }
