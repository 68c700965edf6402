"""A JSON document's long strings cut in its raw bytes, before any of them is made.

``json.loads`` makes every string whole: a HAR under its size and parse bounds
(``fidelity.recording``) could still hold a 100 MB body, made as a 100 MB
string (up to four times that in memory) only to be cut to the 1 MiB a
recording holds. Here the strings are found in the raw bytes (one pass of the
same pattern the depth check uses), and each one longer than its bound is
replaced, in the bytes, by its first ``bound + 1`` characters: decoded a slice
of its raw text at a time (256 KiB, each cut back to a whole character) until
there are enough, so that no more than the characters kept and one slice are
ever made however many bytes a character takes (up to 12 as escapes),
re-encoded, and left one character over the bound so that the reader still
sees it was longer (a body is read as cut short, a URL or a header
refused as too long). Nothing else in the document changes.

A string's bound is chosen by the key it is the value of (``bounds``), else
``default``: a HAR carries its scenario's source, which may be as long as a
scenario may be.
"""

from __future__ import annotations

import json
import re

# A JSON string in raw bytes (validation._JSON_STRING: unrolled, possessive, in
# constant memory).
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
# The key a value follows: ``"name" :`` just before it (keys of interest are plain).
_KEY_BEFORE = re.compile(rb'"([A-Za-z0-9_]{1,64})"\s*:\s*\Z')
# The longest raw text of one character: a surrogate pair, ``\ud83d\ude00``.
_MOST_BYTES_A_CHARACTER = 12
# The raw text of a long string is decoded this many bytes at a time (at least
# twice the longest character's, so that a slice always holds a whole one).
SLICE = 256 * 1024


class BadString(ValueError):
    """A long string whose raw text does not decode (the document is not JSON)."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"the string at byte {offset} is not a valid JSON string")
        self.offset = offset


def cut_long_strings(
    data: bytes, default: int, bounds: dict[bytes, int] | None = None, slice_bytes: int = SLICE
) -> bytes:
    """``data`` with every string longer than its bound (in characters) cut to ``bound + 1``.

    Returns ``data`` itself when no string needs cutting. Raises ``BadString``
    for a long string whose text is not valid JSON.
    """
    bounds = bounds or {}
    smallest = min(default, *bounds.values()) if bounds else default
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    done = 0
    # A string of at most ``smallest`` raw bytes has at most that many characters.
    for match in _STRING.finditer(data):
        start, end = match.span()
        if end - start - 2 <= smallest:
            continue
        key = _KEY_BEFORE.search(data, max(0, start - 80), start)
        bound = bounds.get(key.group(1), default) if key is not None else default
        if end - start - 2 <= bound:
            continue
        head = _head(view[start + 1 : end - 1], bound + 1, start, slice_bytes)
        if head is None:
            continue
        pieces += [view[done:start], _encoded(head)]
        done = end
    if not pieces:
        return data
    pieces.append(view[done:])
    return b"".join(pieces)


def _head(raw: memoryview, characters: int, offset: int, slice_bytes: int) -> str | None:
    """The first ``characters`` characters of a string's raw text; None if it has fewer.

    Decodes the raw text a slice at a time, each cut back to a whole character
    (not an escape, a UTF-8 sequence or a surrogate pair cut in two), and stops
    as soon as it has enough: never the whole of a long string, and never more
    than one slice beyond the characters kept.
    """
    pieces: list[str] = []
    have = 0
    at = 0
    while have < characters:
        if at >= len(raw):
            return None
        text, used = _decoded(raw[at : at + slice_bytes], at + slice_bytes >= len(raw), offset)
        pieces.append(text)
        have += len(text)
        at += used
    return "".join(pieces)[:characters]


def _decoded(raw: memoryview, last: bool, offset: int) -> tuple[str, int]:
    """A slice of a string's raw text decoded, and how many of its bytes that took.

    A slice that is not the last is cut back until it ends on a whole
    character: before an escape or a UTF-8 sequence cut in two, and before a
    high surrogate whose low half is in the next slice.
    """
    quoted = bytearray(len(raw) + 2)
    quoted[0] = quoted[-1] = 0x22  # the quotes
    quoted[1:-1] = raw
    for back in range(min(_MOST_BYTES_A_CHARACTER, len(raw)) + 1):
        if back:
            del quoted[-2]  # the slice one byte shorter, the closing quote kept
        try:
            text = json.loads(quoted)
        except ValueError:  # an escape or a UTF-8 sequence cut in two, or not JSON
            continue
        if not last and text and "\ud800" <= text[-1] <= "\udbff":
            continue  # half a surrogate pair (``\ud83d`` of ``\ud83d\ude00``) at the cut
        if text or last:
            return text, len(raw) - back
    raise BadString(offset)


def _encoded(text: str) -> bytes:
    """``text`` as a JSON string, in no more bytes than its raw text took (UTF-8, not escapes)."""
    try:
        return json.dumps(text, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (carried as an escape, or a pair cut in two)
        return json.dumps(text).encode("ascii")
