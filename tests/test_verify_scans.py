"""Issue 27, finding 1: ``verify`` with ``body_contains`` over large bodies, within the budget.

On main each body was parsed after a depth check whose regular expression
took 270 ms a MiB holding the GIL (3.7 s a call over 1 MiB bodies; eight at
once stalled the API 3.6 s), uncharged (120 MiB more). Now the check is 20
times faster, each parse is charged its most (``json_parse_cost``) to the reports'
share before it runs (507 when it cannot be), and body scans take turns.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.validation import json_depth_over, json_parse_cost
from tests.attacks import BIG_NAME, big_journal, budget_env, create_big_pets
from tests.support import LiveServer, examples, live_server

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
    | st.sampled_from(['"', "\\", '\\"', "[", "{", "]", "}", '"]']),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    return 0


@settings(max_examples=examples(300), deadline=None)
@given(json_values, st.integers(min_value=0, max_value=6), st.booleans())
def test_the_depth_check_counts_what_the_parser_nests(value: Any, limit: int, ascii: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii).encode("utf-8", "surrogatepass")
    assert json_depth_over(text, limit) == (_depth(value) > limit)


@settings(max_examples=examples(200), deadline=None)
@given(json_values)
def test_a_parse_holds_no_more_than_its_cost(value: Any) -> None:
    text = json.dumps([value] * 50).encode("utf-8", "surrogatepass")
    tracemalloc.start()
    try:
        parsed = json.loads(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del parsed
    assert peak <= json_parse_cost(text)


@pytest.fixture(scope="module")
def big_bodies() -> Iterator[LiveServer]:
    """Eight creates of about 1 MiB each, journaled whole, on a server of 64 MiB."""
    env = budget_env(MOCKSTORE_SCENARIO_YAML=big_journal())
    with live_server(env=env) as running:
        statuses = create_big_pets(running.api, 8)
        assert statuses.count(201) >= 2, statuses
        yield running


def test_body_contains_over_large_bodies_still_counts_them(big_bodies: LiveServer) -> None:
    found = httpx.post(
        big_bodies.url + "/__mockstore/verify",
        json={"operation": "createPet", "body_contains": {"categoryId": 1}, "at_least": 2},
        timeout=120,
    )
    assert found.status_code == 200, found.text[:300]
    assert found.json()["ok"] is True


def test_a_body_the_budget_cannot_parse_is_a_507(big_bodies: LiveServer) -> None:
    # A body of 1 MiB of small objects would parse into about 30 MiB: more than
    # a 64 MiB server's share for reports can hold besides what is held. Main
    # parsed it anyway (and answered 200).
    items = json.dumps([{"a": [1]}] * 80_000)
    created = httpx.post(
        big_bodies.api + "/pets",
        content=json.dumps({"name": "x", "categoryId": 1, "tags": json.loads(items)}),
        headers={"Authorization": "Bearer public-key", "content-type": "application/json"},
        timeout=60,
    )
    assert created.status_code in (201, 400, 413), created.text[:200]
    answer = httpx.post(
        big_bodies.url + "/__mockstore/verify",
        json={"body_contains": {"name": BIG_NAME[:1]}},
        timeout=120,
    )
    assert answer.status_code == 507, answer.text[:300]
    body = answer.json()
    assert body["code"] == "memory_budget" and body["status"] == 507
    assert "body_contains" in body["message"]
