"""Issue 25: a W3C trace context as the request id (``behaviour.request_id.format: traceparent``).

Aviary answers every request with ``traceparent``: the client's own trace id with a new
span id when it sent a well-formed one, else a new trace; every Error body names the
trace id (``traceId``). The mock could only echo a client's id whole or make its own,
so a client that follows its trace failed against it. Over a real uvicorn process (in
Redis too under ``MOCKSTORE_TEST_STATE=redis``).
"""

from __future__ import annotations

import re

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.http_semantics import HttpSemantics
from mockstore.scenario import load_scenario
from tests.support import mock_server

KEY = {"Authorization": "Bearer trace-key"}
ECHO = "00-(?!0{32})[0-9a-fA-F]{32}-[0-9a-fA-F]{16}-[0-9a-fA-F]{2}"
SCENARIO = f"""\
version: 1
keys: [{{key: trace-key, plan: pro}}]
behaviour:
  request_id: {{header: traceparent, format: traceparent, echo: '{ECHO}'}}
  error_fields: [{{name: traceId, generate: trace_id}}]
"""
FORM = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-01")
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_a_trace_the_client_started_goes_on_with_a_new_span() -> None:
    sent = f"00-{TRACE}-00f067aa0ba902b7-01"
    with mock_server(SCENARIO) as api, httpx.Client(base_url=api.api, headers=KEY) as http:
        continued = http.get("/pets/123456789", headers={"traceparent": sent})
        started = http.get("/pets/123456789")
        zero = http.get("/pets/123456789", headers={"traceparent": f"00-{'0' * 32}-{'1' * 16}-01"})
        listed = http.get("/pets", headers={"traceparent": sent})
    found = FORM.fullmatch(continued.headers["traceparent"])
    assert found and found.group(1) == TRACE and found.group(2) != "00f067aa0ba902b7"
    assert continued.status_code == 404 and continued.json()["traceId"] == TRACE
    for answer in (started, zero):
        new = FORM.fullmatch(answer.headers["traceparent"])
        assert new and new.group(1) not in (TRACE, "0" * 32)
        assert answer.json()["traceId"] == new.group(1)
    again = FORM.fullmatch(listed.headers["traceparent"])
    assert again and again.group(1) == TRACE and again.group(2) != found.group(2)


@settings(max_examples=100)
@given(sent=st.text(alphabet="0123456789abcdefABCDEF-xz ", max_size=60))
def test_the_answers_traceparent_is_always_well_formed(sent: str) -> None:
    semantics = HttpSemantics(load_scenario(SCENARIO))
    generated = b"00-" + b"a" * 32 + b"-" + b"b" * 16 + b"-01"
    answered = semantics.request_id({b"traceparent": sent.encode()}, generated).decode()
    assert FORM.fullmatch(answered)
    if re.fullmatch(ECHO, sent):
        assert answered == f"00-{sent[3:35].lower()}-{'b' * 16}-01"
    else:
        assert answered == generated.decode()
