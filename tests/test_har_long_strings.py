"""Issue 27, point 5: a HAR's strings are bounded before they are made, not after.

On main ``json.loads`` made every string of a HAR whole, and the reader cut a
body to the 1 MiB a recording holds only afterwards: a 100 MB body (under the
size and parse bounds) was made as a 100 MB string, beside the text it was
parsed from, then thrown away. Now each string is cut in the raw bytes to
``MAX_HAR_STRING`` characters and one (``fidelity.long_strings``) before the
document is parsed; the reader sees the same: a body cut short, a URL or a
header too long, a scenario as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from mockstore.fidelity.long_strings import BadString, cut_long_strings
from mockstore.fidelity.recording import MAX_HAR_BODY, MAX_HAR_STRING, read_recording
from tests.attacks import MiB, mib
from tests.test_hostile_hars import _run, recorded  # noqa: F401 - the fixture

# Any text a JSON string may hold: astral characters (a surrogate pair when escaped),
# escapes, quotes and backslashes, lone surrogates.
texts = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(['"', "\\", "\n", "\x00", "\U0001f600", "\ud800", "é"]),
    ),
    max_size=60,
)
documents = st.recursive(
    st.one_of(texts, st.integers(), st.none()),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


def _cut_value(value: object, bound: int) -> object:
    """``value`` with each string over ``bound`` characters cut to ``bound + 1``."""
    if isinstance(value, str):
        return value[: bound + 1] if len(value) > bound else value
    if isinstance(value, list):
        return [_cut_value(item, bound) for item in value]
    if isinstance(value, dict):
        return {_cut_value(k, bound): _cut_value(v, bound) for k, v in value.items()}
    return value


@given(documents, st.integers(min_value=0, max_value=30), st.booleans())
@example(["\U0001f600" * 40], 3, True)
@example(["\\" * 40 + '"' * 40], 7, False)
def test_a_document_reads_as_its_strings_cut(value: object, bound: int, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    cut = cut_long_strings(raw, bound)
    assert json.loads(cut) == _cut_value(value, bound)


@given(
    documents,
    st.integers(min_value=0, max_value=80),
    st.booleans(),
    st.integers(min_value=24, max_value=64),
)
@example(["\U0001f600" * 40], 30, True, 24)
@example(["a\ud800" * 40], 30, True, 25)
@example(["é\\" * 40], 50, False, 31)
def test_a_string_decoded_in_slices_reads_the_same(
    value: object, bound: int, ascii_only: bool, size: int
) -> None:
    # Long strings are decoded 256 KiB at a time; here a few bytes at a time, so
    # that slices end inside escapes, UTF-8 sequences and surrogate pairs.
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    cut = cut_long_strings(raw, bound, slice_bytes=size)
    assert json.loads(cut) == _cut_value(value, bound)


@given(st.text(min_size=1, max_size=50), st.integers(min_value=15, max_value=30))  # keys whole
def test_a_key_may_name_a_longer_bound(text: str, bound: int) -> None:
    raw = json.dumps({"scenario_source": text, "other": text}).encode("utf-8", "surrogatepass")
    read = json.loads(cut_long_strings(raw, bound, {b"scenario_source": 100}))
    assert read == {"scenario_source": text, "other": _cut_value(text, bound)}


def test_a_long_string_that_is_not_json_is_refused() -> None:
    try:
        cut_long_strings(b'["' + b"\x01" * 100 + b'"]', 10)
    except BadString as exc:
        assert exc.offset == 1
    else:
        raise AssertionError("a string of control characters was read")


def test_a_long_body_is_read_cut_short_and_the_scenario_whole(
    tmp_path: Path,
    recorded: dict,  # noqa: F811
) -> None:
    har = json.loads(json.dumps(recorded))
    har["log"]["entries"][1]["response"]["content"]["text"] = "é" * (3 * MAX_HAR_STRING)
    source = "# " + "x" * (2 * MAX_HAR_STRING) + "\nversion: 1\n"
    har["log"].setdefault("_mockstore", {})["scenario_source"] = source
    path = tmp_path / "long.har"
    path.write_text(json.dumps(har, ensure_ascii=False))
    recording = read_recording(str(path))
    exchange = recording.exchanges[1]
    assert exchange.response_body == ("é" * MAX_HAR_STRING).encode()[:MAX_HAR_BODY]
    assert exchange.response_truncated
    assert recording.meta["scenario_source"] == source


def test_a_100_mb_body_is_never_made(tmp_path: Path, recorded: dict) -> None:  # noqa: F811
    # The same command on the HAR as recorded gives what replaying costs without it.
    plain = tmp_path / "plain.har"
    plain.write_text(json.dumps(recorded))
    code, reference, output = _run("replay", str(plain))
    assert code in (0, 1), output[-2000:]
    long = json.loads(json.dumps(recorded))
    size = 100 * MiB
    long["log"]["entries"][1]["response"]["content"]["text"] = "s" * size
    path = tmp_path / "long.har"
    path.write_text(json.dumps(long))
    del long
    code, peak, output = _run("replay", str(path))
    assert "Traceback" not in output, output[-2000:]
    assert code in (0, 1), output[-2000:]  # the body read cut short, and compared as such
    # The file's bytes are read (100 MB); main then made its text (100 MB more) and
    # the string (100 MB more) before cutting it.
    assert peak - reference < 1.5 * size, f"replay used {mib(peak - reference)} more"
