"""Issue 19, finding 7: HARs are read with their sizes checked before allocation and depth bounded.

On main ``drift`` on a HAR claiming a 1 GiB body used 1.08 GB, 10**13 gave a
MemoryError traceback, and deeply nested JSON (in the file or in a recorded
body) gave a RecursionError traceback and exit 1. Every bad input is now exit
2 with a sentence, or (a claim the mock refuses by its length) replayed
without the claimed bytes. The commands run as a user runs them, with their
peak memory read by the parent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mockstore.app import create_app
from tests.attacks import MiB, mib

_PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "print(done.returncode)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    "sys.stdout.write(done.stdout + done.stderr)\n"
)


def _run(*command: str) -> tuple[int, int, str]:
    """``mockstore COMMAND...``: its exit status, peak memory and output."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "mockstore", *command],
        capture_output=True,
        text=True,
        timeout=600,
    )
    code, peak, output = done.stdout.split("\n", 2)
    return int(code), int(peak), output


@pytest.fixture(scope="module")
def recorded() -> dict:
    """A real HAR: a createPet refused for its size (413) and a getPet."""
    scenario = "version: 1\nkeys: [{key: pro-key, plan: pro}]\nbehaviour: {max_body_bytes: 64}\n"
    with TestClient(create_app(scenario), base_url="http://127.0.0.1") as client:
        client.post(
            "/v1/pets",
            content=b'{"name": "' + b"n" * 100 + b'", "categoryId": 1}',
            headers={"Authorization": "Bearer pro-key", "Content-Type": "application/json"},
        )
        client.get("/v1/pets/1", headers={"Authorization": "Bearer pro-key"})
        return client.get("/__mockstore/requests.har", params={"mask": "false"}).json()


def _claiming(har: dict, size: int) -> dict:
    """The HAR with its refused create claiming a body of ``size`` bytes, cut short."""
    claimed = json.loads(json.dumps(har))
    entry = claimed["log"]["entries"][0]
    assert entry["response"]["status"] == 413
    headers = [h for h in entry["request"]["headers"] if h["name"].lower() != "content-length"]
    entry["request"]["headers"] = [*headers, {"name": "Content-Length", "value": str(size)}]
    entry["request"]["bodySize"] = size
    entry["_mockstore"]["request_truncated"] = True
    return claimed


@pytest.mark.parametrize("size", [2**30, 10**13])
@pytest.mark.parametrize("command", ["drift", "replay"])
def test_a_claimed_body_is_never_allocated(
    tmp_path: Path, recorded: dict, size: int, command: str
) -> None:
    path = tmp_path / "claims.har"
    path.write_text(json.dumps(_claiming(recorded, size)))
    extra = ["--scenario", "default"] if command == "drift" else []
    code, peak, output = _run(command, str(path), *extra)
    assert peak <= 150 * MiB, f"{command} peaked at {mib(peak)}"
    assert "Traceback" not in output and "MemoryError" not in output, output
    assert code in (0, 1), output


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("command", ["drift", "replay"])
def test_a_deeply_nested_file_is_exit_2_with_a_sentence(tmp_path: Path, command: str) -> None:
    path = tmp_path / "deep.har"
    path.write_text('{"log": {"entries": ' + _deep(100_000) + "}}")
    extra = ["--scenario", "default"] if command == "drift" else []
    code, _, output = _run(command, str(path), *extra)
    assert code == 2, output
    assert "Traceback" not in output
    assert "nested more than 64 levels deep" in output


@pytest.mark.parametrize("command", ["drift", "replay"])
def test_a_deeply_nested_recorded_body_is_compared_as_text(
    tmp_path: Path, recorded: dict, command: str
) -> None:
    deep = json.loads(json.dumps(recorded))
    deep["log"]["entries"][1]["response"]["content"]["text"] = _deep(100_000)
    path = tmp_path / "deep-body.har"
    path.write_text(json.dumps(deep))
    extra = ["--scenario", "default"] if command == "drift" else []
    code, _, output = _run(command, str(path), *extra)
    assert "Traceback" not in output and "RecursionError" not in output, output
    assert code == 1, output  # a difference, reported as one


@pytest.mark.parametrize("command", ["drift", "replay"])
def test_a_har_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, command: str
) -> None:
    path = tmp_path / "huge.har"
    with path.open("wb") as out:  # sparse: 300 MB that take no room on disk
        out.truncate(300 * 10**6)
    extra = ["--scenario", "default"] if command == "drift" else []
    code, peak, output = _run(command, str(path), *extra)
    assert code == 2, output
    assert "over the 268,435,456 a HAR may have" in output
    assert peak <= 100 * MiB, f"{command} peaked at {mib(peak)}"


@pytest.mark.parametrize("text", ["\xff\xfe", "{", "[]", '{"log": 1}', "nul\x00"])
def test_every_bad_file_is_exit_2_with_a_sentence(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.har"
    path.write_bytes(text.encode("latin-1"))
    for command, extra in (("replay", []), ("drift", ["--scenario", "default"])):
        code, _, output = _run(command, str(path), *extra)
        assert code == 2, (command, output)
        assert "Traceback" not in output
        assert f"mockstore {command}: " in output
