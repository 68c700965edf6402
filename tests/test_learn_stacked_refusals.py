"""``calibrate`` learns stacked limits' refusals from a recording (issue 25, points 1 and 8).

A provider in front of which a gateway stacks two limits, each refusing in its own way
(nginx's burst answered 503 ``slow_down`` with no Retry-After, checked first, beside a
quota answered 429 ``quota_exceeded`` with an HTTP-date): calibrate read the quota's
429 after a burst's 503 as a ban (and wrote ``ban.after_rejections: 0``, which validate
refuses), and wrote one scenario-wide refusal (``retry_after: none`` with a 429, which
validate refuses too). It now writes ``ratelimit.refusal.minute``/``.day`` and
``precedence``, and the calibrated mock answers as the provider did.

The provider is mockstore under a scenario that states them, recorded in process.
"""

from __future__ import annotations

import copy

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.result import Calibration, Key, merged
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.fidelity.drift import drift
from mockstore.fidelity.recording import recording_of
from mockstore.limiter.refusals import Refusal
from mockstore.scenario import load_scenario
from tests.fidelity_support import record_mock

PROVIDER = """\
version: 1
clock: {start: 2026-03-01T12:00:30Z, mode: manual}
keys:
  - {key: key-a, plan: {per_minute: 3, per_day: 9}}
  - {key: key-b, plan: {per_minute: 3, per_day: 8}}
ratelimit:
  day: {seconds: 3600}
  headers: {describes: day}
  refusal:
    precedence: minute
    minute: {status: 503, code: slow_down, retry_after: none}
    day: {status: 429, code: quota_exceeded, retry_after: http-date}
"""
A = [("authorization", "Bearer key-a")]
B = [("authorization", "Bearer key-b")]
# key-a: three a minute (the fourth refused by the minute) until its ninth spends the hour
# with the minute full (the next refused by the minute, checked first), then the hour's
# refusals; key-b: every 2 s, the minute refusing.
STEPS = [("GET", "/v1/pets", "", A, b"", w) for w in (0, 1, 1, 1, 60, 1, 1, 1, 60, 1, 1, 1, 60, 1)]
STEPS += [("GET", "/v1/pets", "", B, b"", 2.0)] * 10


def _calibrated(har: dict) -> str:
    return render_scenario(learn(recording_of(har, "stacked.har")), Options(None, ()), sent=0)


def test_each_windows_refusal_and_precedence_are_learned_and_reproduced() -> None:
    har = record_mock(PROVIDER, STEPS)
    statuses = [e["response"]["status"] for e in har["log"]["entries"]]
    assert statuses.count(503) >= 4 and statuses.count(429) >= 2  # both windows refused
    scenario = load_scenario(_calibrated(har), "<learned>")
    refusals = scenario.ratelimit.refusals
    assert refusals.minute == Refusal(503, "slow_down", "none")
    assert refusals.day == Refusal(429, "quota_exceeded", "http-date")
    assert refusals.precedence == "minute"
    assert scenario.ban is None or scenario.ban.after_rejections >= 1
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_a_window_whose_refusals_vary_is_written_nothing_and_listed_open() -> None:
    har = copy.deepcopy(record_mock(PROVIDER, STEPS))
    # One of the minute's refusals answered with another code: no constant says both.
    entry = next(e for e in har["log"]["entries"] if e["response"]["status"] == 503)
    content = entry["response"]["content"]
    content["text"] = content["text"].replace('"slow_down"', '"calm_down"')
    result = learn(recording_of(har, "stacked.har"))
    assert any(
        line.startswith("ratelimit.refusal.minute: the window's refusals differ")
        for line in result.unsettled
    )
    written = {path: s.value for path, s in result.settings.items() if ".refusal." in path}
    assert written == {
        "ratelimit.refusal.day.status": 429,
        "ratelimit.refusal.day.code": "quota_exceeded",
        "ratelimit.refusal.day.retry_after": "http-date",
        "ratelimit.refusal.precedence": "minute",
    }


def test_one_way_of_refusing_writes_no_window_refusal() -> None:
    one = PROVIDER.replace("    minute: {status: 503, code: slow_down, retry_after: none}\n", "")
    one = one.replace("    day: {status: 429, code: quota_exceeded, retry_after: http-date}\n", "")
    one = one.replace("    precedence: minute\n", "")
    one = one.replace("  refusal:\n", "")
    text = _calibrated(record_mock(one, STEPS))
    assert "refusal:" not in text


def test_a_probe_keys_own_length_under_another_rule_than_the_recordings_is_dropped() -> None:
    """calibrate's probes fitted a probe key's day to a sliding log of 1910 s; the recording
    settled a fixed day on the clock's grid: the merged scenario kept 1910 s as that key's
    day on the grid, which validate refuses (Aviary's calibration failed so)."""
    recording, probes = Calibration("r"), Calibration("p")
    recording.confirm("ratelimit.day.algorithm")
    recording.confirm("ratelimit.day.align")
    probes.set("ratelimit.day.algorithm", "sliding_log", "probe #1")
    plan = {"per_minute": 10, "per_day": 60, "day_seconds": 1910, "minute_seconds": 5}
    probes.keys.append(Key("probe", "key-probe", plan, ["day_seconds: 1910 s, where ..."]))
    same = {"per_minute": 10, "per_day": 60, "day_seconds": 1800}
    kept = Calibration("p2")
    kept.keys.append(Key("same", "key-same", same, []))
    (key,) = merged(recording, probes).keys
    assert key.plan == {"per_minute": 10, "per_day": 60, "minute_seconds": 5}
    assert key.evidence == []
    # Under the rule the recording settled too, the probes' own length stands.
    (key,) = merged(recording, kept).keys
    assert key.plan == same
