"""``mockstore replay`` and ``mockstore drift`` read their input one way and refuse it one way.

Every unreadable input ends in exit status 2 and a sentence on stderr that
says what was wrong, never a traceback: the same loader
(``mockstore.fidelity.recording``) serves both commands. Each case runs the
command as a subprocess, as a user or a CI job does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = ["replay", "drift"]
EMPTY_HAR = json.dumps({"log": {"entries": []}})


def _run(command: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    return subprocess.run(
        [sys.executable, "-m", "mockstore", command, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _refused(result: subprocess.CompletedProcess[str], command: str, *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith(f"mockstore {command}: "), result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


# (what the file holds, or None for no file; what the message must say)
HARS = {
    "missing file": (None, ["cannot read", "No such file"]),
    "not JSON": ("{not json", ["is not JSON"]),
    "not UTF-8": (b"\xff\xfe{}", ["is not JSON"]),
    "a JSON list": ("[1, 2, 3]", ["not a HAR file"]),
    "no log": ('{"entries": []}', ["not a HAR file: no 'log' object"]),
    "entries not a list": ('{"log": {"entries": 3}}', ["'log.entries' is not a list"]),
    "an entry without a request": (
        '{"log": {"entries": [{"response": {"status": 200}}]}}',
        ["log.entries[0]: missing or invalid request/response"],
    ),
    "an entry of the wrong shape": (
        json.dumps(
            {
                "log": {
                    "entries": [
                        {
                            "request": {"method": "GET", "url": "/v1/pets", "headers": "none"},
                            "response": {"status": 200},
                            "startedDateTime": "2026-03-01T12:00:00Z",
                        }
                    ]
                }
            }
        ),
        ["log.entries[0].request.headers must be a list"],
    ),
    "an entry with a bad time": (
        json.dumps(
            {
                "log": {
                    "entries": [
                        {
                            "request": {"method": "GET", "url": "/v1/pets"},
                            "response": {"status": 200},
                            "startedDateTime": "yesterday",
                        }
                    ]
                }
            }
        ),
        ["log.entries[0]: startedDateTime 'yesterday' is not ISO 8601"],
    ),
    "an entry whose postData is a string": (
        json.dumps(
            {
                "log": {
                    "entries": [
                        {
                            "request": {"method": "POST", "url": "/v1/pets", "postData": "x"},
                            "response": {"status": 201},
                            "startedDateTime": "2026-03-01T12:00:00Z",
                        }
                    ]
                }
            }
        ),
        ["log.entries[0]: not a HAR entry"],
    ),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", list(HARS), ids=lambda c: c.replace(" ", "-"))
def test_an_unreadable_har_exits_2_with_a_sentence(command: str, case: str, tmp_path: Path) -> None:
    content, words = HARS[case]
    har = tmp_path / "session.har"
    if isinstance(content, bytes):
        har.write_bytes(content)
    elif content is not None:
        har.write_text(content)
    _refused(_run(command, str(har), "--scenario", "default"), command, *words)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_for_a_har_exits_2(command: str, tmp_path: Path) -> None:
    _refused(_run(command, str(tmp_path), "--scenario", "default"), command, "cannot read")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_scenario_name_exits_2_with_did_you_mean(command: str, tmp_path: Path) -> None:
    har = tmp_path / "session.har"
    har.write_text(EMPTY_HAR)
    result = _run(command, str(har), "--scenario", "nopezz")
    _refused(result, command, "scenario 'nopezz' not found", "bundled: ")
    near = _run(command, str(har), "--scenario", "flaky-creat")
    _refused(near, command, "did you mean 'flaky-create'")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_scenario_file_exits_2(command: str, tmp_path: Path) -> None:
    har = tmp_path / "session.har"
    har.write_text(EMPTY_HAR)
    result = _run(command, str(har), "--scenario", str(tmp_path / "gone.yaml"))
    _refused(result, command, "gone.yaml", "not found")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_invalid_scenario_exits_2_with_every_problem(command: str, tmp_path: Path) -> None:
    har = tmp_path / "session.har"
    har.write_text(EMPTY_HAR)
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nbehaviour: {validation_status: 418, serve_head: maybe}\n")
    result = _run(command, str(har), "--scenario", str(bad))
    _refused(result, command, "is not usable", f"{bad}:2:", "validation_status", "serve_head")


def test_replay_refuses_an_invalid_scenario_the_har_carries(tmp_path: Path) -> None:
    har = tmp_path / "session.har"
    carried = {"scenario_source": "version: 1\nseed: many\n", "scenario_file": "mine.yaml"}
    har.write_text(json.dumps({"log": {"entries": [], "_mockstore": carried}}))
    result = _run("replay", str(har))
    _refused(result, "replay", "the scenario the HAR carries is not usable", "mine.yaml")


def test_drift_needs_a_scenario() -> None:
    result = _run("drift", "session.har")
    assert result.returncode == 2
    assert "--scenario" in result.stderr and "Traceback" not in result.stderr
