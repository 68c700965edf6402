"""``calibrate`` learns two forms of a gateway's from a recording, and drift finds them gone.

- An edge that meters no caller without a key, and says so with figures of 0
  (``X-RateLimit-Limit: 0`` on every 401): ``ratelimit.anonymous: none`` with
  ``ratelimit.headers.uncounted: zero`` (calibrate left the figures out).
- A cursor the provider did not write, refused with a code of its own: the
  ``bad_cursor`` condition (calibrate called it an answer no rule explains, and
  the mock answered mockstore's ``invalid_parameter``).

The provider is mockstore under a scenario that states each, recorded in process.
"""

from __future__ import annotations

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.fidelity.drift import drift
from mockstore.fidelity.recording import recording_of
from mockstore.scenario import load_scenario
from tests.fidelity_support import AUTH, BASE, JSON_BODY, record_mock

EDGE = BASE + (
    "ratelimit: {minute: {algorithm: token_bucket}, anonymous: none,"
    " headers: {uncounted: zero, reset_decimals: 3}}\n"
)
PAGES = BASE + (
    "collections: {pagination: {style: cursor}}\n"
    "behaviour: {error_codes: {bad_cursor: cursor-unknown}}\n"
)
STEPS = [
    ("GET", "/v1/pets", "limit=1", AUTH, b"", 16.0),
    ("GET", "/v1/pets", "", [], b"", 1.0),
    ("GET", "/v1/pets", "", [("authorization", "Bearer nobody-here")], b"", 1.0),
    ("GET", "/v1/pets", "cursor=not-one-of-ours", AUTH, b"", 16.0),
]


def _learned(provider: str) -> tuple[dict, str]:
    har = record_mock(provider, STEPS)
    learned = learn(recording_of(har, "edge.har"))
    return har, render_scenario(learned, Options(None, (), recording="edge.har"), sent=0)


def test_figures_of_0_to_callers_without_a_key_are_learned_and_served() -> None:
    har, text = _learned(EDGE)
    keyless = [e["response"] for e in har["log"]["entries"] if e["response"]["status"] == 401]
    figures = [{h["name"]: h["value"] for h in r["headers"]} for r in keyless]
    assert [(f["x-ratelimit-limit"], f["x-ratelimit-remaining"]) for f in figures] == [
        ("0", "0")
    ] * 2
    scenario = load_scenario(text, "<learned>")
    assert scenario.ratelimit.anonymous == "none"
    assert scenario.ratelimit.headers.uncounted == "zero"
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_a_cursor_refused_is_the_bad_cursor_condition() -> None:
    _, text = _learned(PAGES)
    scenario = load_scenario(text, "<learned>")
    assert dict(scenario.behaviour.error_codes)["bad_cursor"] == "cursor-unknown"
    assert "no rule of calibrate's explains" not in text


def test_envoys_mark_on_a_refusal_is_a_header_the_client_reads() -> None:
    # Envoy's rate-limit filter marks what it refused: x-envoy-ratelimited: true. Its
    # prefix is the proxy's, but clients branch on it: calibrate writes it, drift compares it.
    provider = BASE + (
        "behaviour: {headers: [{name: x-envoy-ratelimited, value: 'true', status: 429}]}\n"
    )
    har = record_mock(provider, [("GET", "/v1/pets", "", AUTH, b"", 0.5)] * 6)
    assert [e["response"]["status"] for e in har["log"]["entries"]][-1] == 429
    learned = learn(recording_of(har, "envoy.har"))
    text = render_scenario(learned, Options(None, (), recording="envoy.har"), sent=0)
    rules = load_scenario(text, "<learned>").behaviour.headers
    # On the refusals alone (a 429 is the one 4xx the recording shows).
    assert [(r.name.lower(), r.value, r.status or r.status_class) for r in rules] in (
        [("x-envoy-ratelimited", "true", 429)],
        [("x-envoy-ratelimited", "true", 4)],
    )
    assert drift(har, load_scenario(BASE)).differences  # the mark is compared


def test_a_string_of_digits_read_and_a_zero_fraction_refused_is_learned() -> None:
    # Form-encoded APIs' reading (Stripe's): "4" is 4, but 4.0 and "4.0" are no integers.
    provider = BASE + "collections: {numbers: {body: digits}}\n"
    steps = [
        ("POST", "/v1/pets", "", JSON_BODY, body, 16.0)
        for body in (
            b'{"name": "Kiwi", "categoryId": "4"}',
            b'{"name": "Pip", "categoryId": 4.0}',
            b'{"name": "Pip", "categoryId": "4.0"}',
        )
    ]
    har = record_mock(provider, steps)
    assert [e["response"]["status"] for e in har["log"]["entries"]] == [201, 400, 400]
    learned = learn(recording_of(har, "numbers.har"))
    text = render_scenario(learned, Options(None, (), recording="numbers.har"), sent=0)
    scenario = load_scenario(text, "<learned>")
    assert scenario.collections.body_numbers == "digits"
    assert [d.to_dict() for d in drift(har, scenario).differences] == []
