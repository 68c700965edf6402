"""Any provider is reproduced: a random profile, recorded, calibrated from the recording, drifted.

The profiled stand-in (``tests/upstream/profiled.py``) serves a ``Profile`` drawn
from the whole space of choices a Pet Store provider makes where the spec is
silent (``tests/upstream/profiles.py``). A client's session goes through
``mockstore record``; ``mockstore calibrate --from`` learns the scenario from the
recording, with probes (``--target``, ``--allow-writes``) for what it lacks; then
``mockstore drift`` compares the recording with the calibrated scenario. The
property: no difference is left that a setting could remove, and every one left
is a case the docs list as not expressible (``unexplained`` is not one: a
difference no rule explains is a failure).

The client's session (``tests/fidelity_session.py``, with ``edges``) meets every
choice a profile draws: each section of the scenario schema a provider can differ
in (the limiter's algorithms, windows, counts, refusals and header forms; HTTP
semantics; collections; maintenance; latency; Error bodies).

The drawn profile is made a real provider's: its windows a real minute and a day
or an hour, drawn (the stand-in's short windows are a test convenience), its ban's window and
length in minutes where it drew seconds, and the client is given a roomy key
beside the profile's small plans, as a tester would be.

Why the ban's seconds become minutes: a recording's instants are the recorder's
(when each request reached it), not the provider's (when it read its clock, a
moment later); the moment varies with the load. A provider that bans after two
refusals within 1 s (profile 0 of the default draw), with the session's refusals
a few hundred milliseconds apart on a loaded machine, can see two refusals 0.99 s
apart that the recording stamps 1.01 s apart: replayed on the recording's
instants, the mock does not ban where the provider did (``key_banned`` recorded,
``rate_limited`` replayed; a Hypothesis FlakyFailure, since the same profile
passes again). No recording can place a boundary that falls within its own
jitter; one minute is far outside it, whatever the load. The default
run draws three profiles, the same every run; ``-m slow`` draws forty more, new each run.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from mockstore.cli.main import main
from mockstore.fidelity.attribution import NOT_EXPRESSIBLE
from tests.fidelity_session import client_session
from tests.upstream import new_key, recorder
from tests.upstream.counting import counted
from tests.upstream.profiled import Plan, Profile
from tests.upstream.profiles import profiles

# Reasons a difference may stay: the documented ones, less the one that explains nothing.
ALLOWED = set(NOT_EXPRESSIBLE) - {"unexplained"}


def as_a_real_provider(profile: Profile, day_seconds: int = 86_400) -> Profile:
    """``profile`` with a real minute and a real day (or an hourly quota, as some gateways
    have), and a roomy plan for the tester's own key."""
    ban = profile.rate_limits.ban
    limits = replace(
        profile.rate_limits,
        minute_seconds=60,
        day_seconds=day_seconds,
        plans=(*profile.rate_limits.plans, ("tester", Plan(1_000))),
        ban=replace(
            ban, within_seconds=ban.within_seconds * 60, duration_seconds=ban.duration_seconds * 60
        ),
    )
    return replace(profile, rate_limits=limits, clock_offset_seconds=0)


def _mockstore(*args: str) -> subprocess.CompletedProcess[str]:
    """``mockstore ARGS``: the command's own entry point, in this process (a process of its
    own per command would double the time of every example)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return subprocess.CompletedProcess(["mockstore", *args], status, out.getvalue(), err.getvalue())


def reproduce(profile: Profile) -> dict[str, Any]:
    """Record ``profile``'s provider, calibrate from the recording, drift: the JSON report."""
    main, tight = new_key(), new_key()
    small = profile.rate_limits.plans[0][0]
    with tempfile.TemporaryDirectory(prefix="property-") as directory:
        work = Path(directory)
        har, calibrated = work / "session.har", work / "calibrated.yaml"
        with counted("profiled", {main: "tester", tight: small}, profile=profile) as upstream:
            with recorder(upstream.url, "--out", str(har)) as proxy:
                collections = profile.semantics.collections
                client_session(
                    proxy.url, main, tight, oversize=profile.semantics.max_body_bytes + 100,
                    edges=True, page_parameter=collections.parameter,
                )  # fmt: skip
                assert proxy.stop() == 0
            calibration = _mockstore(
                "calibrate", "--from", str(har), "--target", upstream.url,
                "--key", main, "--key", tight, "--allow-writes", "--wait", "0",
                "--out", str(calibrated),
            )  # fmt: skip
        assert calibration.returncode == 0, calibration.stderr
        note(calibrated.read_text())
        done = _mockstore("drift", str(har), "--scenario", str(calibrated), "--format", "json")
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout)


def check(profile: Profile, day_seconds: int = 86_400) -> None:
    profile = as_a_real_provider(profile, day_seconds)
    note(profile.to_json())
    report = reproduce(profile)
    left = [d for d in report["differences"] if d["cause"] != "not_expressible"]
    assert not left, json.dumps(left[:5], indent=1)
    reasons = {d["reason"] for d in report["differences"] if d["cause"] == "not_expressible"}
    assert reasons <= ALLOWED, json.dumps(
        [d for d in report["differences"] if d.get("reason") not in ALLOWED][:5], indent=1
    )
    assert report["compared"] >= 30


# A failing example is reported with its profile (note()); shrinking would replay the
# whole loop hundreds of times, so it is left out.
_COMMON = {
    "deadline": None,
    "database": None,
    "phases": [Phase.explicit, Phase.generate],
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


# The longer window: a day, or an hour (Aviary's quota).
_DAYS = st.sampled_from([86_400, 3_600])


@settings(max_examples=3, derandomize=True, **_COMMON)  # type: ignore[arg-type]
@given(profile=profiles(), day_seconds=_DAYS)
def test_a_provider_drawn_at_random_is_reproduced(profile: Profile, day_seconds: int) -> None:
    check(profile, day_seconds)


@pytest.mark.slow
@settings(max_examples=40, **_COMMON)  # type: ignore[arg-type]
@given(profile=profiles(), day_seconds=_DAYS)
def test_many_providers_drawn_at_random_are_reproduced(profile: Profile, day_seconds: int) -> None:
    check(profile, day_seconds)
