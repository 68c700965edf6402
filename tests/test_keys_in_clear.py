"""Issue 27, finding 4: keys are never in clear, wherever a client put them.

On main the recorder aliased a key only in headers and query parameters whose
names it knew (``Authorization``, ``?api_key=``) and in URLs after it had seen
the key in one of those: a key sent only in a path, in ``?x-api-key=``, in an
``api-key`` or ``x-auth-token`` header or only in a body was journaled,
exported, logged and written to ``--out`` in clear. ``GET /__mockstore/keys``
gave every key whole to a caller from another machine on a server without a
token. ``mockstore record`` runs as a subprocess in front of the echo upstream.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore import create_app
from mockstore.fidelity.aliases import KeyRing, Scrubber, read_keys_file
from mockstore.keys import key_alias
from tests.support import examples
from tests.upstream import origin, recorder
from tests.upstream.echo import echo_upstream

# Keys as real services issue them, each only ever sent in one place.
IN_PATH = "pk_path_5d0c8e1f2a7b4c39"
IN_QUERY = "qk_query_9a8b7c6d5e4f3a2b"
IN_API_KEY = "hk_apikey_1f2e3d4c5b6a7980"
IN_AUTH_TOKEN = "hk_token_0a1b2c3d4e5f6789"
IN_JSON = "bk_json_6f5e4d3c2b1a0987"
IN_FORM = "bk_form_13579bdf2468ace0"
SECRETS = (IN_PATH, IN_QUERY, IN_API_KEY, IN_AUTH_TOKEN, IN_JSON, IN_FORM)


def test_a_key_anywhere_the_upstream_got_it_is_never_journaled_logged_or_written(
    tmp_path: Path,
) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(f"# the clients' keys\n{IN_PATH}\n", encoding="utf-8")
    out = tmp_path / "recording.har"
    with (
        echo_upstream() as (upstream, echo),
        recorder(
            upstream, "--keys-file", str(keys_file), "--out", str(out), "--log-level", "info"
        ) as proxy,
        httpx.Client(timeout=30) as client,
    ):
        client.get(f"{proxy.url}/echo/{IN_PATH}")  # only in a path: a given key
        client.get(f"{proxy.url}/echo", params={"x-api-key": IN_QUERY})
        client.get(f"{proxy.url}/echo", headers={"api-key": IN_API_KEY})
        client.get(f"{proxy.url}/echo", headers={"x-auth-token": IN_AUTH_TOKEN})
        client.post(f"{proxy.url}/echo", json={"name": "Rex", "apiKey": IN_JSON})
        client.post(f"{proxy.url}/echo", data={"name": "Rex", "access_token": IN_FORM})
        # Later, a key learnt in a header shows up in a path, a query under any
        # name, another header and a body: aliased there too.
        client.post(
            f"{proxy.url}/echo/{IN_API_KEY}",
            params={"q": IN_AUTH_TOKEN},
            headers={"x-note": IN_QUERY},
            content=f"free text {IN_JSON} and {IN_FORM}".encode(),
        )
        control = origin(proxy.url) + "/__mockstore"
        listing = httpx.get(control + "/requests", timeout=30).text
        har = httpx.get(control + "/requests.har", timeout=30).text
        report = httpx.get(control + "/report", timeout=30).text
        proxy.stop()
        log = proxy.log()
    written = out.read_text(encoding="utf-8")
    # The upstream got every key as sent (the echo upstream notes bodies by size).
    received = json.dumps(echo.received)
    for secret in (IN_PATH, IN_QUERY, IN_API_KEY, IN_AUTH_TOKEN):
        assert secret in received, secret
    for where, text in (
        ("request list", listing),
        ("HAR", har),
        ("report", report),
        ("log", log),
        ("--out", written),
    ):
        for secret in SECRETS:
            assert secret not in text, f"{secret} in clear in the {where}"
    entries = json.loads(listing)["entries"]
    assert entries[0]["request"]["path"] == f"/v1/echo/{key_alias(IN_PATH)}"
    assert key_alias(IN_QUERY) in entries[1]["request"]["query_string"]
    assert entries[-1]["request"]["path"] == f"/v1/echo/{key_alias(IN_API_KEY)}"


def test_a_keys_file_with_a_key_too_short_is_refused_with_its_place(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text("long-enough-key-1\n\n   short\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"keys\.txt:3:4: a key of 5 characters"):
        read_keys_file(str(keys_file))


words = st.from_regex(r"[A-Za-z0-9_.~-]{8,40}", fullmatch=True)
others = st.from_regex(r"[A-Za-z0-9+/]{6,30}=?=?", fullmatch=True).filter(
    lambda key: len(key) >= 8 and any(c in key for c in "+/=")
)
separators = st.sampled_from([" ", "/", "?q=", '"', "&", "\n", ":", "=", ",", "\t"])


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(words | others, min_size=1, max_size=6, unique=True),
    st.lists(st.tuples(st.integers(min_value=0, max_value=5), separators, st.booleans())),
    st.text(alphabet=' abc{}[]",:', max_size=40),
)
def test_a_learnt_key_is_found_wherever_it_stands_in_a_later_text(
    keys: list[str], placements: list[tuple[int, str, bool]], filler: str
) -> None:
    ring = KeyRing()
    for key in keys:
        Scrubber(ring).add(key.encode())  # learnt in one exchange
    parts = [filler]
    placed = set()
    for which, separator, escaped in placements:
        key = keys[which % len(keys)]
        parts += [separator, quote(key, safe="") if escaped else key, separator]
        placed.add(key)
    text = "".join(parts).encode()
    scrubbed = Scrubber(ring)(text)  # a later exchange
    for key in placed:
        assert key.encode() not in scrubbed
        assert key_alias(key).encode() in scrubbed


def _keys(client_address: str, token: str | None) -> httpx.Response:
    """``GET /__mockstore/keys`` from an in-process server, as a client at ``client_address``."""
    app = create_app("default", control_token=token)

    async def ask() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=(client_address, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://10.0.0.1") as client:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return await client.get("/__mockstore/keys", headers=headers)

    return asyncio.run(ask())


def test_keys_are_masked_to_a_caller_who_could_not_read_raw_keys() -> None:
    answer = _keys("203.0.113.9", None)
    assert answer.status_code == 200
    assert "free-key" not in answer.text
    shown = {entry["key"] for entry in answer.json()}
    assert f"free*** ({key_alias('free-key')})" in shown


@pytest.mark.parametrize(("address", "token"), [("127.0.0.1", None), ("203.0.113.9", "t0ken")])
def test_keys_are_whole_for_a_local_caller_or_a_token_holder(
    address: str, token: str | None
) -> None:
    answer = _keys(address, token)
    assert answer.status_code == 200
    assert "free-key" in {entry["key"] for entry in answer.json()}
