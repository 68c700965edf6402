"""Issue 27, finding 5: a HAR is bounded by what it holds, not only by its size.

On main one 8 MB string made ``replay`` use 0.97 GiB, a 40 MB string was a
``MemoryError`` traceback, and a 190 MB HAR (under the 256 MiB size limit)
reached 3.39 GB and had not finished in 60 s. Now what parsing a HAR may hold
is bounded before it is parsed (``json_parse_cost``; refused past
``MAX_HAR_PARSE``, in the time a few byte counts take), and a body longer than
a recording can hold is cut to ``MAX_HAR_BODY`` and replayed as cut short, as
a body the journal cut is. The commands run as a user runs them, their peak
memory read by the parent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockstore.fidelity.recording import MAX_HAR_BODY, read_recording
from tests.attacks import MiB, mib
from tests.test_hostile_hars import _run, recorded  # noqa: F401 - the fixture

# What a command may hold besides the HAR: the interpreter, the mock it replays
# against (its budget), and the HAR as parsed within its bound.
PEAK = 400 * MiB


def _with(har: dict, text: str, where: str) -> dict:
    """The HAR with ``text`` as one of its fields (``where``)."""
    changed = json.loads(json.dumps(har))
    entry = changed["log"]["entries"][1]
    if where == "response":
        entry["response"]["content"]["text"] = text
    elif where == "request":
        entry["request"]["postData"] = {"mimeType": "application/json", "text": text}
    elif where == "header":
        entry["request"]["headers"].append({"name": "X-Long", "value": text})
    else:
        entry["request"]["url"] += "?q=" + text
    return changed


# Two million characters outside the BMP: 24 MB of JSON escapes, 8 MB parsed.
LONG = "\U0001f600" * 2_000_000


@pytest.mark.parametrize("where", ["request", "response", "header", "url"])
@pytest.mark.parametrize("command", ["replay", "drift"])
def test_a_huge_string_is_cut_or_refused_not_multiplied(
    tmp_path: Path,
    recorded: dict,  # noqa: F811
    where: str,
    command: str,
) -> None:
    path = tmp_path / "long.har"
    path.write_text(json.dumps(_with(recorded, LONG, where)))
    extra = ["--scenario", "default"] if command == "drift" else []
    code, peak, output = _run(command, str(path), *extra)
    assert "Traceback" not in output and "MemoryError" not in output, output[-2000:]
    if where in ("request", "response"):
        assert code in (0, 1), output[-2000:]  # cut, and compared as cut short
    else:
        assert code == 2, output[-2000:]
        assert "over the 65,536" in output
    assert peak <= PEAK, f"{command} peaked at {mib(peak)}"


def test_a_cut_body_is_read_as_cut_short(tmp_path: Path, recorded: dict) -> None:  # noqa: F811
    path = tmp_path / "long.har"
    path.write_text(json.dumps(_with(recorded, "s" * (MAX_HAR_BODY + 10), "response")))
    exchange = read_recording(str(path)).exchanges[1]
    assert len(exchange.response_body) == MAX_HAR_BODY
    assert exchange.response_truncated


@pytest.mark.parametrize("command", ["replay", "drift"])
def test_a_har_that_would_parse_past_its_bound_is_refused_at_once(
    tmp_path: Path, command: str
) -> None:
    # 190 MB of small objects: tens of GB once parsed. Refused from a count of
    # its brackets and commas, before a value is made.
    path = tmp_path / "many.har"
    with path.open("w") as out:
        out.write('{"log": {"entries": [')
        chunk = '{"a":[1]},' * 1_000_000
        for _ in range(19):
            out.write(chunk)
        out.write("{}]}}")
    extra = ["--scenario", "default"] if command == "drift" else []
    code, peak, output = _run(command, str(path), *extra)
    assert code == 2, output[-2000:]
    assert "Traceback" not in output
    assert "export it in parts" in output
    assert peak <= PEAK, f"{command} peaked at {mib(peak)}"
