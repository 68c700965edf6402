"""``calibrate --from``: a scenario learned from a recording reproduces the recording.

The provider here is mockstore itself under a scenario with one knob turned: every
request of the drift tests is recorded (in process, on a manual clock), a scenario
is learned from the recording alone, and drift of the recording against it finds
nothing a setting could remove. Each setting the learner writes cites an exchange
of the recording. And the evidence the learner reads: a ban told from a rate
limit by the run of refusals it ends, a token only ever refused counted as a
caller without a key, a refused HEAD as HEAD not served.
"""

from __future__ import annotations

import pytest
import yaml

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.fidelity.drift import drift
from mockstore.fidelity.evidence import read
from mockstore.fidelity.recording import recording_of
from mockstore.keys import key_alias
from mockstore.scenario import load_scenario
from tests.fidelity_support import AUTH, BASE, KEY, KNOBS, REQUESTS, record_mock, with_knob

# The requests that show every knob, 16 s apart (the key has 4 a minute), then a ban.
STEPS = [(*request, 16.0) for request in REQUESTS] + [(*REQUESTS[0], 0.0)] * 10


@pytest.mark.parametrize("knob", ["(none)", *KNOBS])
def test_a_scenario_learned_from_a_recording_reproduces_it(knob: str) -> None:
    provider = BASE if knob == "(none)" else with_knob(knob)
    har = record_mock(provider, STEPS)
    learned = learn(recording_of(har, "session.har"))
    text = render_scenario(learned, Options(None, (), recording="session.har"), sent=0)
    scenario = load_scenario(text, "<learned>")
    report = drift(har, scenario)
    left = [d.to_dict() for d in report.differences if d.cause != "not_expressible"]
    assert not left, (text, left[:3])
    assert {key_alias(KEY), key_alias("other-key")} <= {k.key for k in scenario.keys}
    for line_number, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if stripped.startswith(('- {"name"', '- {"operation"')) or (
            ": " in stripped
            and not (stripped.startswith(("#", "version:", "name:", "description:", '- {"id"')))
        ):
            previous = text.splitlines()[line_number - 1].strip()
            if not previous.startswith("#") and not previous.endswith(":"):
                continue
            assert previous.startswith("# recorded #") or previous.endswith(":"), (line, previous)


def _conditions(provider: str, steps: list) -> list[tuple[int, str | None, int]]:
    har = record_mock(provider, steps)
    return [(s.status, s.condition, s.run_position) for s in read(recording_of(har), "/v1")]


def test_a_ban_is_told_from_a_rate_limit_by_the_run_it_ends() -> None:
    provider = BASE + "behaviour: {error_codes: {key_banned: SUSPENDED}}\n"
    seen = _conditions(provider, [(*REQUESTS[0], 0.0)] * 9)
    # 4 a minute; the 3rd refusal reaches the ban (after_rejections 3) and is still a 429.
    assert [condition for _, condition, _ in seen] == [None] * 4 + ["rate_limited"] * 3 + [
        "key_banned"
    ] * 2
    assert [position for _, _, position in seen][4:] == [1, 2, 3, 4, 5]


def test_a_token_only_ever_refused_is_a_caller_without_a_key() -> None:
    provider = BASE.replace("anonymous_plan", "x-unused") + (
        "plans: {tiny: {per_minute: 1}}\nanonymous_plan: tiny\n"
    )
    unknown = [("authorization", "Bearer nobody-of-theirs")]
    har = record_mock(
        provider,
        [("GET", "/v1/pets", "", [], b"", 0.0), ("GET", "/v1/pets", "", unknown, b"", 0.0)],
    )
    seen = read(recording_of(har), "/v1")
    assert [(s.status, s.condition) for s in seen] == [(401, "missing_key"), (429, "rate_limited")]
    assert seen[0].bucket == seen[1].bucket == "address 127.0.0.1"


def test_a_head_refused_with_a_404_is_head_not_served() -> None:
    provider = (
        BASE + "behaviour: {serve_head: [listPets], error_statuses: {method_not_allowed: 404}}\n"
    )
    seen = _conditions(provider, [(*REQUESTS[5], 0.0), ("HEAD", "/v1/pets/1", "", AUTH, b"", 0.0)])
    assert seen[-1][:2] == (404, "method_not_allowed")


def test_what_is_learned_is_what_the_provider_chose() -> None:
    provider = with_knob(
        "behaviour: {error_codes: {bad_limit: BAD_LIMIT}, ratelimit_reset: epoch-ms,"
        " request_id: {header: X-Trace-Id, format: hex, prefix: ''},"
        " headers: [{name: X-Api-Version, value: '2'}], list_order: descending}"
    )
    learned = learn(recording_of(record_mock(provider, STEPS), "session.har"))
    assert learned.value("behaviour.error_codes.bad_limit") == "BAD_LIMIT"
    assert learned.value("behaviour.ratelimit_reset") == "epoch-ms"
    assert learned.value("behaviour.request_id.header") == "x-trace-id"
    assert learned.value("behaviour.request_id.format") == "hex"
    assert learned.value("behaviour.list_order") == "descending"
    assert [entry.value for entry in learned.items["behaviour.headers"]] == [
        {"name": "x-api-version", "value": "2"}
    ]
    assert yaml.safe_load(
        render_scenario(learned, Options(None, (), recording="session.har"), sent=0)
    )["ban"] == {"after_rejections": 3, "duration_seconds": 30}
