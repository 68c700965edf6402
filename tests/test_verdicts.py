"""A scenario jsonschema found valid is not checked by it again; anything else is.

``mockstore.verdicts`` keeps, on disk, a digest of each scenario a load found no
problem in, under the code, schemas and libraries that judged it. These tests
load scenarios in fresh interpreters (``sys.modules`` tells whether jsonschema
was imported) and through ``load_scenario`` with a cache directory of their own.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mockstore import verdicts
from mockstore.scenario import ScenarioError, load_scenario

GOOD = textwrap.dedent(
    """
    version: 1
    name: verdicts
    keys:
      - {key: k-1, plan: free}
    pets:
      - {id: 1, name: Rex, categoryId: 1, status: available}
    """
).lstrip()
# The same scenario with a pet jsonschema refuses (a status the document does not have).
BAD_PET = GOOD.replace("status: available", "status: lost")

_LOAD = """
import sys
from mockstore.scenario import ScenarioError, load_scenario
try:
    load_scenario(sys.stdin.read(), "s.yaml")
    print("valid", "jsonschema" in sys.modules, "yaml" in sys.modules)
except ScenarioError as exc:
    print("refused", "jsonschema" in sys.modules, *[str(p) for p in exc.problems], sep="|")
"""


def load_in_a_fresh_process(text: str, cache: Path | str) -> str:
    environment = {**os.environ, verdicts.CACHE_ENV: str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _LOAD],
        input=text,
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "verdicts"
    monkeypatch.setenv(verdicts.CACHE_ENV, str(folder))
    return folder


def verdict_files(cache: Path) -> list[Path]:
    return [path for path in cache.iterdir() if len(path.name) == 64] if cache.exists() else []


def parsed_files(cache: Path, kind: str = "scenario") -> list[Path]:
    return sorted(cache.glob(f"{kind}-*.json")) if cache.exists() else []


def test_a_scenario_checked_before_loads_without_jsonschema_or_yaml(cache: Path) -> None:
    assert load_in_a_fresh_process(GOOD, cache) == "valid True True"
    assert load_in_a_fresh_process(GOOD, cache) == "valid False False"
    assert len(verdict_files(cache)) == 1
    assert len(parsed_files(cache)) == 1
    assert len(parsed_files(cache, "openapi")) == 1


def test_what_a_scenario_parsed_into_is_read_back_checked(cache: Path) -> None:
    assert load_in_a_fresh_process(GOOD, cache) == "valid True True"
    (kept,) = parsed_files(cache)
    digest, _, payload = kept.read_bytes().partition(b"\n")
    # Another payload under the digest of the first: refused, the text is parsed again.
    kept.write_bytes(digest + b"\n" + payload.replace(b"Rex", b"Max"))
    assert load_in_a_fresh_process(GOOD, cache) == "valid False True"
    assert kept.read_bytes() == digest + b"\n" + payload  # and kept again, whole
    assert load_in_a_fresh_process(GOOD, cache) == "valid False False"
    # JSON only: a payload with its own digest but not JSON is not data.
    junk = b"\x80\x04K\x01."  # a pickle
    kept.write_bytes(hashlib.sha256(junk).hexdigest().encode() + b"\n" + junk)
    assert verdicts.parsed_before("scenario", GOOD.encode()) is None


def test_a_priced_load_keeps_no_parsed_data(cache: Path) -> None:
    from mockstore.memory import MemoryBudget
    from mockstore.scenario.loader import priced

    budget = MemoryBudget(64 * 2**20)
    with budget.building("a test's load") as share, priced(share):
        assert load_scenario(GOOD, "s.yaml").name == "verdicts"
    assert parsed_files(cache) == []
    assert len(verdict_files(cache)) == 1


def test_a_refused_scenario_is_never_remembered(cache: Path) -> None:
    first = load_in_a_fresh_process(BAD_PET, cache)
    assert first.startswith("refused|True|")
    assert "not a valid Pet" in first
    assert load_in_a_fresh_process(BAD_PET, cache) == first
    assert verdict_files(cache) == []
    assert parsed_files(cache) == []


def test_a_changed_scenario_is_checked_again(cache: Path) -> None:
    assert load_in_a_fresh_process(GOOD, cache) == "valid True True"
    # One character: the pet jsonschema refuses is found, with its place in the file.
    refused = load_in_a_fresh_process(BAD_PET, cache)
    assert refused.startswith("refused|True|s.yaml:6:47: $.pets[0].status: not a valid Pet")


def test_no_cache_when_it_is_off(tmp_path: Path) -> None:
    assert load_in_a_fresh_process(GOOD, "off") == "valid True True"
    assert load_in_a_fresh_process(GOOD, "off") == "valid True True"


@pytest.mark.parametrize(
    "held",
    [b"", b"garbage\n", b"0" * 64 + b"\n", None],  # empty, wrong, another digest, truncated
)
def test_a_file_read_back_is_input(cache: Path, held: bytes | None) -> None:
    load_scenario(GOOD, "s.yaml")
    (entry,) = verdict_files(cache)
    written = entry.read_bytes()
    assert written == (entry.name + "\n").encode()
    entry.write_bytes(written[:10] if held is None else held)
    assert verdicts.known_valid(load_data(GOOD)) is False
    # Checked again, and written whole again.
    assert load_in_a_fresh_process(GOOD, cache).startswith("valid True")
    assert entry.read_bytes() == written


def load_data(text: str) -> object:
    from mockstore.scenario.loader import parse_yaml

    return parse_yaml(text, "s.yaml")[0]


def test_the_value_is_the_key_not_its_equal(cache: Path) -> None:
    # 60 and 60.0 are equal in Python; the schema refuses a plan of 60.0 requests.
    whole = GOOD + "plans:\n  tiny: {per_minute: 60, per_day: 100}\n"
    load_scenario(whole, "s.yaml")
    with pytest.raises(ScenarioError, match="must be an integer"):
        load_scenario(whole.replace("per_minute: 60,", "per_minute: 60.0,"), "s.yaml")


def test_the_directory_stays_bounded(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verdicts, "MAX_ENTRIES", 3)
    for index in range(6):
        text = GOOD.replace("name: verdicts", f"name: v{index}")
        assert load_scenario(text, "s.yaml").name == f"v{index}"
        assert len(list(cache.iterdir())) <= 3
        # The last entry written (what the scenario parsed into) is there.
        assert verdicts.parsed_before("scenario", text.encode()) == load_data(text)


def test_an_unwritable_directory_only_costs_the_check(tmp_path: Path, monkeypatch) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv(verdicts.CACHE_ENV, str(blocked / "verdicts"))
    assert load_scenario(GOOD, "s.yaml").name == "verdicts"
    assert load_scenario(GOOD, "s.yaml").name == "verdicts"


def test_the_default_directory_is_the_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(verdicts.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert verdicts.cache_directory() == Path("/somewhere/mockstore/verdicts")
    monkeypatch.setenv(verdicts.CACHE_ENV, "")
    assert verdicts.cache_directory() is None
