"""The fault engine's shortcuts never change which rules fire.

FaultEngine indexes rules by operation and key, leaves out rules a request's
shape cannot match, and rests rules whose count or time window says "not now".
This property test drives it and a plain reference (every rule, in order, every
time) with the same random rules and request sequences and demands the same
outcome for every request: the same rules fired, the same answer, the same
random draws.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.faults import FaultEngine, RequestFacts, draw
from mockstore.scenario import load_scenario
from mockstore.scenario.model import FaultRule
from tests.support import examples

KEYS = ("k1", "k2")
OPERATIONS = ("listPets", "getPet")

condition = st.fixed_dictionaries(
    {},
    optional={
        "operation": st.sampled_from(OPERATIONS),
        "key": st.sampled_from(KEYS),
        "query": st.just({"status": "sold"}),
        "headers": st.just({"X-Case": "a"}),
        "calls": st.lists(st.integers(1, 12), min_size=1, max_size=3),
        "from_call": st.integers(1, 12),
        "until_call": st.integers(1, 12),
        "every": st.integers(1, 4),
        "probability": st.sampled_from([0.0, 0.3, 0.7, 1.0]),
        "between_seconds": st.tuples(st.integers(0, 40), st.integers(1, 40))
        .filter(lambda w: w[0] < w[1])
        .map(list),
    },
).filter(lambda m: m.get("from_call", 1) <= m.get("until_call", 99))
rule = st.fixed_dictionaries(
    {"match": condition, "action": st.sampled_from(["delay", "respond", "fault"])}
)
request = st.fixed_dictionaries(
    {
        "operation": st.sampled_from(OPERATIONS),
        "key": st.sampled_from(KEYS),
        "status": st.booleans(),
        "case": st.sampled_from([None, "a", "b"]),
        "elapsed": st.integers(0, 50),
    }
)


def scenario(rules: list[dict[str, Any]]) -> str:
    lines = ["version: 1", "keys: [{key: k1, plan: free}, {key: k2, plan: pro}]", "faults:"]
    actions = {
        "delay": "delay: {fixed_ms: 1}",
        "respond": "respond: {status: 503, body: {code: x, message: y, status: 503}}",
        "fault": "fault: connection_reset",
    }
    for index, raw in enumerate(rules):
        lines.append(f"  - name: r{index}")
        lines.append(f"    match: {json.dumps(raw['match'])}")
        lines.append(f"    {actions[raw['action']]}")
    return "\n".join(lines) + "\n"


def facts(raw: dict[str, Any]) -> RequestFacts:
    return RequestFacts(
        operation=raw["operation"],
        method="GET",
        path="/pets",
        key=raw["key"],
        plan="free" if raw["key"] == "k1" else "pro",
        elapsed=float(raw["elapsed"]),
        query={"status": ["sold"]} if raw["status"] else {"limit": ["5"]},
        headers={"x-case": raw["case"]} if raw["case"] else {},
    )


def reference(rules: tuple[FaultRule, ...], seed: int, requests: list[RequestFacts]):
    """Every rule, in order, every time: the meaning the engine must keep."""
    counts = [0] * len(rules)
    for f in requests:
        fired, answer = [], None
        for index, r in enumerate(rules):
            m = r.match
            if m.operation not in (None, f.operation) or m.key not in (None, f.key):
                continue
            if any(v not in f.query.get(n, ()) for n, v in m.query):
                continue
            if any(f.headers.get(n) != v for n, v in m.headers):
                continue
            counts[index] += 1
            n = counts[index]
            if answer is not None:
                continue
            if m.calls and n not in m.calls:
                continue
            if m.from_call is not None and n < m.from_call:
                continue
            if m.until_call is not None and n > m.until_call:
                continue
            if m.every is not None and n % m.every:
                continue
            if m.between_seconds is not None and not (
                m.between_seconds[0] <= f.elapsed < m.between_seconds[1]
            ):
                continue
            if m.probability is not None and draw(str(seed), index, n) >= m.probability:
                continue
            fired.append(r.name)
            if r.reply is not None or r.fault is not None:
                answer = r.name
        yield fired, answer


@settings(max_examples=examples(150), deadline=None)
@given(
    rules=st.lists(rule, min_size=1, max_size=8),
    requests=st.lists(request, min_size=1, max_size=40),
    seed=st.integers(0, 2**16),
)
def test_the_engine_fires_exactly_what_the_plain_reading_fires(
    rules: list[dict[str, Any]], requests: list[dict[str, Any]], seed: int
) -> None:
    loaded = load_scenario(scenario(rules), "model.yaml").faults
    engine = FaultEngine(loaded, seed)
    sequence = [facts(r) for r in requests]
    expected = list(reference(loaded, seed, sequence))
    for f, (fired, answer) in zip(sequence, expected, strict=True):
        outcome = engine.evaluate(f)
        assert list(outcome.fired) == fired
        assert (outcome.rule.name if outcome.rule else None) == answer


def raw(request: dict[str, Any]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The query string and ASGI headers ``facts`` describes, as the server passes them.

    The server passes no headers at all when none is one a rule compares
    (``rule_header_names``): so does this.
    """
    query = b"status=sold" if request["status"] else b"limit=5"
    if not request["case"]:
        return query, []
    headers = [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer x")]
    headers.insert(1, (b"x-case", request["case"].encode()))
    return query, headers


@settings(max_examples=examples(150), deadline=None)
@given(
    rules=st.lists(rule, min_size=1, max_size=8),
    requests=st.lists(request, min_size=1, max_size=40),
    seed=st.integers(0, 2**16),
)
def test_screening_the_raw_request_first_fires_exactly_what_the_plain_reading_fires(
    rules: list[dict[str, Any]], requests: list[dict[str, Any]], seed: int
) -> None:
    # The server's path: screen() on the raw query and headers, and only when
    # it finds rows that could fire, RequestFacts and evaluate().
    loaded = load_scenario(scenario(rules), "model.yaml").faults
    engine = FaultEngine(loaded, seed)
    sequence = [facts(r) for r in requests]
    expected = list(reference(loaded, seed, sequence))
    for r, f, (fired, answer) in zip(requests, sequence, expected, strict=True):
        query, headers = raw(r)
        screened = engine.screen(f.operation, f.key, query, headers, f.elapsed)
        if screened is None:
            assert (fired, answer) == ([], None)
            continue
        outcome = engine.evaluate(f, screened)
        assert list(outcome.fired) == fired
        assert (outcome.rule.name if outcome.rule else None) == answer
