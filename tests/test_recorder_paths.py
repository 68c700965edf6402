"""Issue 27, finding 6: the recorder refuses every dot-segment form a server might decode.

On main the recorder resolved plain and singly percent-encoded dot segments,
but forwarded ``..;`` (a dot segment to Tomcat, which drops path
parameters), double encoding (``%252e``: a dot to a server that decodes
twice) and overlong UTF-8 (``%c0%ae``: a dot to a lenient decoder) as they
were. The property: whatever way a server reads a forwarded path (decoding
once, twice or thrice, overlong forms, ``%u``, backslashes as slashes, path
parameters dropped, compatibility normalisation, any case), it stays under
the base path.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.fidelity.forwarding import forwarded_path
from tests.rawhttp import request
from tests.support import examples
from tests.upstream import recorder
from tests.upstream.echo import echo_upstream

BASE = "/v1"
# Ways to write a dot, a slash or a dot segment that some server decodes.
DOTS = [".", "%2e", "%2E", "%252e", "%25252e", "%c0%ae", "%C0%AE", "%e0%80%ae", "%u002e",
        "%ef%bc%8e", "\uff0e"]  # fmt: skip
SLASHES = ["/", "%2f", "%2F", "%252f", "%c0%af", "%e0%80%af", "\\", "%5c", "%5C", "%255c",
           "%c1%9c", "%u002f", "%ef%bc%8f", "\uff0f"]  # fmt: skip
PARAMETERS = ["", ";", ";x", ";jsessionid=1", "%3b", "%3Bx"]
PLAIN = ["v1", "pets", "1", "admin", "echo", "a.b", "..a", "x%20y"]


@st.composite
def hostile_paths(draw: st.DrawFn) -> str:
    """A path under /v1 whose segments mix plain names with every hidden dot and slash."""
    segments = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        kind = draw(st.sampled_from(["plain", "dot", "dots", "slash"]))
        if kind == "plain":
            segments.append(draw(st.sampled_from(PLAIN)))
        elif kind == "slash":
            segments.append(draw(st.sampled_from(PLAIN)) + draw(st.sampled_from(SLASHES)) + "..")
        else:
            count = 1 if kind == "dot" else 2
            dots = "".join(draw(st.sampled_from(DOTS)) for _ in range(count))
            segments.append(dots + draw(st.sampled_from(PARAMETERS)))
    return BASE + "/" + "/".join(segments)


_OVERLONG = {
    b"\xc0\xae": b".",
    b"\xe0\x80\xae": b".",
    b"\xc0\xaf": b"/",
    b"\xe0\x80\xaf": b"/",
    b"\xc1\x9c": b"\\",
}
_PERCENT_U = re.compile(rb"%u([0-9a-fA-F]{4})")


def _readings(path: bytes) -> list[bytes]:
    """The paths servers might make of ``path``: each decoding, leniency and normalisation."""
    readings = [path]
    current = path
    for _ in range(3):  # decoded once, twice, three times
        current = _PERCENT_U.sub(lambda m: chr(int(m.group(1), 16)).encode(), current)
        current = unquote_to_bytes(current)
        readings.append(current)
    lenient = []
    for reading in readings:
        for overlong, plain in _OVERLONG.items():
            reading = reading.replace(overlong, plain)
        text = reading.decode("utf-8", "replace")
        lenient.append(unicodedata.normalize("NFKC", text).encode())
    readings += lenient
    readings += [r.replace(b"\\", b"/") for r in readings]
    readings += [b"/".join(s.split(b";", 1)[0] for s in r.split(b"/")) for r in readings]
    return readings


def _resolved(path: bytes) -> bytes:
    segments: list[bytes] = []
    for segment in path.split(b"/")[1:]:
        if segment == b"..":
            if segments:
                segments.pop()
        elif segment != b".":
            segments.append(segment)
    return b"/" + b"/".join(segments)


@settings(max_examples=examples(2000), deadline=None)
@given(hostile_paths())
def test_whatever_a_server_makes_of_a_forwarded_path_it_stays_under_the_base(path: str) -> None:
    forwarded = forwarded_path(path.encode("utf-8"), BASE)
    if forwarded is None:
        return
    for reading in _readings(forwarded):
        resolved = _resolved(reading)
        assert resolved == BASE.encode() or resolved.startswith(BASE.encode() + b"/"), (
            path,
            forwarded,
            reading,
        )


@pytest.mark.parametrize(
    "path",
    [
        "/v1/..;/admin",
        "/v1/..;x/..;x/admin",
        "/v1/pets/..%3b/..%3b/admin",
        "/v1/%252e%252e/%252e%252e/admin",
        "/v1/%c0%ae%c0%ae/%c0%ae%c0%ae/admin",
        "/v1/%e0%80%ae%e0%80%ae/admin",
        "/v1/%u002e%u002e/admin",
        "/v1/%ef%bc%8e%ef%bc%8e/admin",
        "/v1/pets%c0%af..%c0%af..%c0%afadmin",
        "/v1/%2E%2e/admin",
    ],
)
def test_each_form_is_refused(path: str) -> None:
    assert forwarded_path(path.encode(), BASE) is None


@pytest.mark.parametrize(
    "path", ["/v1/pets/1", "/v1/pets/../pets/1", "/v1/pets;x=1", "/v1/a.b/..c", "/v1/x%20y"]
)
def test_ordinary_paths_still_go(path: str) -> None:
    assert forwarded_path(path.encode(), BASE) is not None


def test_the_recorder_answers_them_itself_and_forwards_nothing() -> None:
    targets = ["/v1/..;/admin", "/v1/%252e%252e/admin", "/v1/%c0%ae%c0%ae/admin"]
    with echo_upstream() as (upstream, echo), recorder(upstream.replace("/v1", "/api/v1")) as proxy:
        statuses = [
            request(proxy.url.rsplit("/v1", 1)[0], "GET", target).status for target in targets
        ]
    assert statuses == [404, 404, 404]
    assert echo.received == []
