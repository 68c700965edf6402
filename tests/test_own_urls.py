"""Issue 25, point 7: URLs a provider writes to itself never lead a client past the recorder.

On main the recorder passed an upstream's absolute ``Location``, ``Content-Location``
and ``Link`` on unchanged (it forwards ``Host`` as the upstream's), so a client that
followed ``rel="next"`` or a redirect left the recording for the upstream. The
recorder now writes them on its own address, as a reverse proxy's reverse mapping
does, and journals what the upstream sent. Checked over real HTTP with ``mockstore
record`` in front of the echo upstream and of two stand-ins (Corral's absolute
``Link`` pages, Aviary's absolute redirects); the mapping itself for all inputs.
``drift`` and ``calibrate`` read such URLs relative to the service's own base: on
main calibrate wrote a recorded upstream's host and port into ``deprecation_link``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from hypothesis import given
from hypothesis import strategies as st

from mockstore.fidelity.drift import drift
from mockstore.fidelity.rebase import Base, base_of, origin_of, own_base, rebase, relative_to_own
from mockstore.fidelity.recording import read_recording
from mockstore.scenario import load_scenario
from tests.fidelity_support import AUTH, BASE, record_mock
from tests.upstream import new_key, origin, provider, recorder
from tests.upstream.echo import echo_upstream


def _journal(proxy_url: str) -> list[dict]:
    return httpx.get(origin(proxy_url) + "/__mockstore/requests", timeout=30).json()["entries"]


def _links(header: str) -> dict[str, str]:
    found = {}
    for part in header.split(","):
        target, _, params = part.partition(";")
        found[params.split('rel="')[1].rstrip('"')] = target.strip().strip("<>")
    return found


def test_urls_to_the_upstream_are_written_on_the_recorders_address() -> None:
    with echo_upstream() as (upstream, _echo), recorder(upstream) as proxy:
        answer = httpx.get(proxy.url + "/links", timeout=30)
        entries = _journal(proxy.url)
    mine, theirs = origin(proxy.url), origin(upstream)
    assert answer.headers["location"] == f"{mine}/v1/pets/7"
    assert answer.headers["content-location"] == f"{mine}/v1/pets?limit=2"
    links = _links(answer.headers["link"])
    assert links["next"] == f"{mine}/v1/pets?limit=2&cursor=b2Zmc2V0OjI"
    assert links["help"] == "https://docs.example/guide?x=1"  # another host: as sent
    assert links["first"] == "/v1/pets?limit=2"  # a path: as sent
    # The journal keeps what the upstream sent.
    journaled = {name: value for name, value in entries[0]["response"]["headers"]}
    assert journaled["location"] == f"{theirs}/v1/pets/7"
    assert f"<{theirs}/v1/pets?limit=2&cursor=b2Zmc2V0OjI>" in journaled["link"]


def test_an_upstream_under_a_prefix_is_mapped_without_it_and_its_other_paths_kept() -> None:
    with (
        echo_upstream() as (upstream, _echo),
        recorder(upstream.replace("/v1", "/api/v1")) as proxy,
    ):
        answer = httpx.get(proxy.url + "/links", timeout=30)
    mine, theirs = origin(proxy.url), origin(upstream)
    assert answer.headers["location"] == f"{mine}/v1/pets/7"
    links = _links(answer.headers["link"])
    assert links["next"].startswith(f"{mine}/v1/pets?")
    # On the upstream's host but outside what the recorder serves: not its to map.
    assert links["service"] == f"{theirs}/status"


def test_a_client_following_next_pages_stays_on_the_recorder() -> None:
    key = new_key()
    with (
        provider("corral", {key: "pro"}, "--pets", "12") as upstream,
        recorder(upstream.url) as proxy,
    ):
        seen: list[str] = []
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
            url: str | None = proxy.url + "/pets?limit=5"
            while url is not None:
                answer = client.get(url)
                assert answer.status_code == 200, answer.text
                seen.append(str(answer.request.url))
                url = _links(answer.headers["link"]).get("next")
        entries = _journal(proxy.url)
    assert len(seen) == 3
    assert {urlsplit(url).netloc for url in seen} == {urlsplit(proxy.url).netloc}
    assert len(entries) == 3  # every page went through the recorder, and is recorded
    # The journal keeps what the upstream sent: its own address.
    journaled = {name: value for name, value in entries[0]["response"]["headers"]}
    assert f"<{upstream.url}/pets?limit=5&offset=5>" in journaled["link"]


def test_a_redirect_to_an_absolute_url_keeps_the_client_on_the_recorder() -> None:
    key = new_key()
    with provider("aviary", {key: "pro"}) as upstream, recorder(upstream.url) as proxy:
        with httpx.Client(
            headers={"Authorization": f"Bearer {key}"}, timeout=30, follow_redirects=True
        ) as client:
            answer = client.get(proxy.url + "/pets/", params={"limit": 2})
        entries = _journal(proxy.url)
    assert answer.status_code == 200 and len(answer.json()) == 2
    assert [str(r.url) for r in answer.history] == [proxy.url + "/pets/?limit=2"]
    assert answer.url == httpx.URL(proxy.url + "/pets?limit=2")
    assert [e["response"]["status"] for e in entries] == [301, 200]


# -- the mapping, for all inputs ----------------------------------------------------------

hosts = st.sampled_from(["127.0.0.1", "10.0.0.7", "api.example.com", "[::1]", "localhost"])
ports = st.one_of(st.none(), st.integers(1, 65535))
segments = st.lists(st.from_regex(r"[a-z0-9_.~-]{1,8}", fullmatch=True), max_size=4)
queries = st.one_of(st.just(""), st.from_regex(r"\?[a-z]{1,5}=[A-Za-z0-9%]{0,8}", fullmatch=True))


def _origin(host: str, port: int | None) -> str:
    return f"http://{host}" + (f":{port}" if port is not None else "")


@given(hosts, ports, hosts, ports, st.sampled_from(["", "/api", "/a/b"]), segments, queries)
def test_a_url_under_the_source_base_moves_under_the_target_and_back(
    host: str, port: int | None, other: str, other_port: int | None, prefix: str,
    path: list[str], query: str,
) -> None:  # fmt: skip
    source = base_of(_origin(host, port) + prefix + "/v1")
    target = base_of(_origin(other, other_port) + "/v1")
    assert source is not None and target is not None
    rest = "/v1" + "".join("/" + s for s in path) + query
    url = source.origin + prefix + rest
    moved = rebase("Location", url, source, target)
    assert moved == target.origin + rest
    back = Base(source.origin, prefix)
    if source.origin != target.origin:
        assert rebase("Location", moved, target, back) == url
    # Written relative to its own base, it is the path and query under it.
    assert relative_to_own("Content-Location", url, source) == rest


@given(hosts, ports, segments, queries)
def test_a_url_on_another_origin_or_a_path_is_never_moved(
    host: str, port: int | None, path: list[str], query: str
) -> None:
    source = Base("http://upstream.invalid:9")
    target = Base("http://127.0.0.1:8080")
    url = _origin(host, port) + "/v1" + "".join("/" + s for s in path) + query
    assert rebase("Location", url, source, target) == url
    assert rebase("Location", "/v1/pets" + query, source, target) == "/v1/pets" + query


@given(
    st.lists(
        st.tuples(st.booleans(), segments, st.sampled_from(["next", "prev", "last"])),
        min_size=1,
        max_size=4,
    )
)
def test_each_link_target_is_moved_and_its_parameters_kept(
    entries: list[tuple[bool, list[str], str]],
) -> None:
    source = Base("http://10.0.0.7:9000")
    target = Base("http://127.0.0.1:8080")
    parts, expected = [], []
    for own, path, rel in entries:
        where = "/v1" + "".join("/" + s for s in path)
        url = (source.origin if own else "https://docs.example") + where
        parts.append(f'<{url}>; rel="{rel}"; title="a, b"')
        shown = (target.origin if own else "https://docs.example") + where
        expected.append(f'<{shown}>; rel="{rel}"; title="a, b"')
    assert rebase("Link", ", ".join(parts), source, target) == ", ".join(expected)


@given(st.text(max_size=200), st.sampled_from(["Link", "Location", "Content-Location"]))
def test_any_header_value_is_read_without_an_error(value: str, name: str) -> None:
    # A recording is input: whatever a HAR holds, drift and calibrate read it.
    own = Base("http://127.0.0.1:8080")
    assert isinstance(relative_to_own(name, value, own), str)
    assert isinstance(rebase(name, value, own, Base("http://10.0.0.1:9")), str)
    assert origin_of(value) is None or origin_of(value).startswith("http")


def test_origins_are_compared_as_a_client_reaches_them() -> None:
    assert origin_of("HTTP://API.Example.com:80/v1") == "http://api.example.com"
    assert origin_of("https://api.example.com:443") == "https://api.example.com"
    assert origin_of("ftp://x/v1") is None and origin_of("/v1/pets") is None
    assert origin_of("http://x:99999/") is None  # no such port
    assert own_base("http", "127.0.0.1:8080") == Base("http://127.0.0.1:8080", "")
    assert own_base("http", "evil.example/path") is None  # not a host
    assert own_base("http", None) is None


# -- drift and calibrate read them relative to the service's own base ---------------------

UPSTREAM = "http://10.9.8.7:9999"
OWN_LINK = f'<{UPSTREAM}/v1/pets>; rel="successor-version"'


def _recording_with_own_links(tmp_path: Path) -> Path:
    """A recording of a provider whose getPet Link names its own collection absolutely."""
    scenario = BASE + f"behaviour: {{deprecation_link: '{OWN_LINK}'}}\n"
    host = [("host", "127.0.0.1:8123")]  # the recorder the client called
    steps = [
        ("GET", "/v1/pets/1", "", [*AUTH, *host], b"", 0.0),
        ("GET", "/v1/pets/2", "", [*AUTH, *host], b"", 1.0),
    ]
    har = record_mock(scenario, steps)
    har["log"]["_mockstore"]["recorded_from"] = f"{UPSTREAM}/v1"
    path = tmp_path / "own-links.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    return path


def test_calibrate_writes_no_recorded_host_and_drift_compares_relative(tmp_path: Path) -> None:
    har = _recording_with_own_links(tmp_path)
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(har), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "10.9.8.7" not in text and "9999" not in text, text
    report = drift(read_recording(str(har)), load_scenario(text))
    assert [d.to_dict() for d in report.differences if "link" in d.where] == []
    assert ("own-address", "header link (URLs on the service's own address)") in report.ignored


def test_drift_suggests_a_link_relative_to_the_base(tmp_path: Path) -> None:
    har = _recording_with_own_links(tmp_path)
    other = BASE + "behaviour: {deprecation_link: '</v1/elsewhere>; rel=\"successor-version\"'}\n"
    report = drift(read_recording(str(har)), load_scenario(other))
    links = [d for d in report.differences if d.where == "header link"]
    assert links and {d.set_to for d in links} == {'</v1/pets>; rel="successor-version"'}
