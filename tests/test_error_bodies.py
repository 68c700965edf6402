"""Error bodies as a provider words them, and the client's own request id answered back.

``behaviour.error_messages`` (a message template per condition), the computed
``behaviour.error_fields`` (``value``, ``parameter``, ``details`` per invalid
field, ``retry_after_s``/``_ms`` from the wait, templates) and
``behaviour.request_id.echo``. Issue 25 found ``details[]`` always naming ``name``,
``retryAfterMs`` a constant, and every Error carrying the same ``requestId``: each
is computed per answer here. Over a real uvicorn process (in Redis too under
``MOCKSTORE_TEST_STATE=redis``); templates for every input (Hypothesis).
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.error_bodies import masked
from mockstore.scenario import ScenarioError, load_scenario
from mockstore.templates import fill, names
from tests.support import LiveServer, mock_server

KEY = "sk_test_0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}
SCENARIO = f"""\
version: 1
clock: {{start: 2026-03-01T12:00:30Z, mode: manual}}
keys: [{{key: {KEY}, plan: {{per_minute: 3, per_day: 100}}}}]
behaviour:
  validation_status: 422
  request_id: {{header: X-Request-Id, format: uuid, prefix: req_, echo: '[A-Za-z0-9._-]{{8,64}}'}}
  error_messages:
    bad_limit: "Invalid value '{{value}}' for query parameter {{parameter}}"
    pet_not_found: "Pet {{value}} not found"
    unknown_key: "Unknown API key {{key}}"
    rate_limited: "Rate limit of {{limit}} exceeded: retry in {{retry_after_s}} s"
    invalid_body: "{{message}} ({{code}}, {{status}})"
  error_fields:
    - {{name: requestId, generate: request_id}}
    - name: details
      generate: details
      conditions: [invalid_body, bad_limit]
      item: {{field: '{{field}}', pointer: '{{pointer}}', issue: '{{reason}}', in: '{{location}}'}}
    - {{name: retryAfterMs, generate: retry_after_ms, conditions: [rate_limited]}}
    - {{name: retryAfter, generate: retry_after_s, conditions: [rate_limited]}}
    - {{name: rejectedValue, generate: value, conditions: [bad_limit, pet_not_found]}}
    - {{name: docs, template: 'https://docs.example.com/errors/{{code}}'}}
"""


@pytest.fixture
def api() -> LiveServer:
    with mock_server(SCENARIO) as running:
        yield running


def test_messages_embed_the_offending_value(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=AUTH) as http:
        limit = http.get("/pets?limit=abc").json()
        pet = http.get("/pets/424242").json()
        key = http.get("/pets", headers={"Authorization": "Bearer sk_live_zzzzzzzzzzzzwxyz"}).json()
    assert limit["message"] == "Invalid value 'abc' for query parameter limit"
    assert limit["rejectedValue"] == "abc"
    assert limit["details"] == [
        {"field": "limit", "pointer": "/limit", "issue": "type", "in": "query"}
    ]
    assert pet["message"] == "Pet 424242 not found"
    assert pet["rejectedValue"] == "424242"
    assert "details" not in pet and "retryAfterMs" not in pet
    assert key["message"] == "Unknown API key sk_l****wxyz"  # never the whole key
    assert pet["docs"] == "https://docs.example.com/errors/not_found"


def test_details_name_every_invalid_field(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=AUTH) as http:
        one = http.post("/pets", json={"name": "Rex", "categoryId": "seven"}).json()
        many = http.post("/pets", json={"name": 5, "categoryId": "x", "status": "lost"}).json()
        missing = http.post("/pets", json={"categoryId": 1}).json()
    assert one["details"] == [
        {"field": "categoryId", "pointer": "/categoryId", "issue": "type", "in": "body"}
    ]
    assert [d["field"] for d in many["details"]] == ["categoryId", "name", "status"]
    assert [d["issue"] for d in many["details"]] == ["type", "type", "enum"]
    assert missing["details"] == [
        {"field": "name", "pointer": "/name", "issue": "required", "in": "body"}
    ]
    assert many["message"].endswith("(validation_failed, 422)")


COLLECTIONS = f"""\
version: 1
keys: [{{key: {KEY}, plan: pro}}]
collections:
  pagination: {{style: cursor}}
  numbers: {{body: strict}}
  constraints: {{name: {{max_length: 8}}, categoryId: {{minimum: 1}}}}
behaviour:
  validation_status: 422
  error_messages:
    field_constraint: "{{parameter}} {{value}} breaks a limit"
    bad_cursor: "bad {{parameter}}: {{value}}"
    invalid_body: "{{parameter}} was {{value}}"
  error_fields:
    - {{name: rejectedValue, generate: value}}
    - name: details
      generate: details
      item: {{field: '{{field}}', issue: '{{reason}}', in: '{{location}}'}}
"""


def test_the_collections_refusals_name_their_value_and_field() -> None:
    # The conditions of the collections section (a field past a limit, a cursor the mock
    # never made, a number written with a fraction where the provider is strict) embed
    # their offending value and field as any other refusal does.
    with (
        mock_server(COLLECTIONS) as running,
        httpx.Client(base_url=running.api, headers=AUTH) as http,
    ):
        long = http.post("/pets", json={"name": "Maximilian", "categoryId": 1}).json()
        low = http.post("/pets", json={"name": "Rex", "categoryId": 0}).json()
        cursor = http.get("/pets?cursor=not-ours").json()
        fraction = http.post("/pets", json={"name": "Rex", "categoryId": 7.0}).json()
    assert long["message"] == "name Maximilian breaks a limit"
    assert long["rejectedValue"] == "Maximilian"
    assert long["details"] == [{"field": "name", "issue": "maxLength", "in": "body"}]
    assert low["details"] == [{"field": "categoryId", "issue": "minimum", "in": "body"}]
    assert low["rejectedValue"] == 0
    assert cursor["message"] == "bad cursor: not-ours"
    assert cursor["details"] == [{"field": "cursor", "issue": "format", "in": "query"}]
    assert fraction["message"] == "categoryId was 7.0"
    assert fraction["details"] == [{"field": "categoryId", "issue": "type", "in": "body"}]


def test_the_wait_is_computed_from_the_answer(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=AUTH) as http:
        for _ in range(3):
            http.get("/pets")
        first = http.get("/pets")
        api.mock.control.advance(12.25)
        later = http.get("/pets")
    assert first.status_code == 429
    body = first.json()
    assert body["retryAfter"] == int(first.headers["retry-after"]) == 30
    assert body["retryAfterMs"] == 30_000
    assert body["message"] == "Rate limit of 3 exceeded: retry in 30 s"
    assert later.json()["retryAfterMs"] == 17_750
    assert later.json()["retryAfter"] == 18  # rounded up: never early


def test_a_clients_request_id_is_answered_back_when_it_matches(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=AUTH) as http:
        echoed = http.get("/pets?limit=0", headers={"X-Request-Id": "test-case-42.attempt_1"})
        short = http.get("/pets?limit=0", headers={"X-Request-Id": "abc"})
        spaced = http.get("/pets?limit=0", headers={"X-Request-Id": "has space in it"})
        plain = http.get("/pets?limit=0")
    assert echoed.headers["x-request-id"] == echoed.json()["requestId"] == "test-case-42.attempt_1"
    generated = [short, spaced, plain]
    ids = [answer.headers["x-request-id"] for answer in generated]
    assert all(i.startswith("req_") and len(i) == 40 for i in ids)
    assert len(set(ids)) == 3  # each answer its own, never the same
    assert [answer.json()["requestId"] for answer in generated] == ids


def test_an_echoed_request_still_takes_its_number() -> None:
    # The ids a scenario generates do not depend on which requests carried their own.
    with mock_server(SCENARIO) as one, mock_server(SCENARIO) as other:
        with httpx.Client(base_url=one.api, headers=AUTH) as http:
            http.get("/pets", headers={"X-Request-Id": "client-chosen-id"})
            after_echo = http.get("/pets").headers["x-request-id"]
        with httpx.Client(base_url=other.api, headers=AUTH) as http:
            http.get("/pets")
            after_plain = http.get("/pets").headers["x-request-id"]
    assert after_echo == after_plain


def test_the_journal_names_the_answered_id(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=AUTH) as http:
        http.get("/pets/1", headers={"X-Request-Id": "trace-0000000001"})
    assert api.mock.control.requests()[-1].request_id == "trace-0000000001"


@pytest.mark.parametrize(
    ("yaml", "where", "said"),
    [
        (
            "  error_messages: {bad_limit: 'bad {value.__class__}'}\n",
            "3:31",
            "{value.__class__} names nothing",
        ),
        ("  error_messages: {gone: 'gone since {when}'}\n", "3:26", "{when} names nothing"),
        (
            "  error_fields: [{name: d, generate: details, item: {f: '{nope}'}}]\n",
            "3:57",
            "{nope} names nothing",
        ),
        (
            "  error_fields: [{name: d, generate: uuid, item: {f: x}}]\n",
            "3:50",
            "item shapes the entries",
        ),
        (
            "  error_fields: [{name: d, value: 1, template: x}]\n",
            "3:18",
            "one of value, generate or template",
        ),
    ],
)
def test_templates_may_name_only_what_an_answer_knows(yaml: str, where: str, said: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        load_scenario("version: 1\nbehaviour:\n" + yaml, "e.yaml")
    text = str(refused.value)
    assert said in text, text
    assert f"e.yaml:{where}:" in text, text


# -- templates, for every input ------------------------------------------------------------

_names = st.sampled_from(["value", "parameter", "key", "code", "x"])
_pieces = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=5),
    _names.map(lambda n: "{" + n + "}"),
    st.sampled_from(["{{", "}}", "{", "}", "{a.b}", "{0}", "{value!r}", "{value:>10}"]),
)


@given(pieces=st.lists(_pieces, max_size=8), values=st.dictionaries(_names, st.text(max_size=8)))
def test_filling_a_template_never_reads_more_than_the_values(
    pieces: list[str], values: dict[str, str]
) -> None:
    template = "".join(pieces)
    filled = fill(template, values)  # never raises, never calls anything on a value
    assert isinstance(filled, str)
    for name in names(template):
        assert name in values or "{" not in name  # a name it fills in is a plain key
    if not names(template) and "{{" not in template and "}}" not in template:
        assert filled == template


@given(token=st.text(min_size=0, max_size=64))
def test_a_masked_key_never_shows_more_than_eight_characters(token: str) -> None:
    shown = masked(token)
    assert len(shown.replace("*", "")) <= 8
    if len(token) >= 12:
        assert shown == token[:4] + "****" + token[-4:]
