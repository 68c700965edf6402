"""What a client's test suite sends to a Pet Store, for the fidelity tests to record.

``client_session`` is the traffic the record/calibrate/drift tests put through
``mockstore record``: every operation, each mistake a client makes (every refusal
a provider words in its own way), HEAD on each read, ``/store/orders``, and a
second key sent on after its first ``429`` until it is banned (or for a while, for
a provider that does not ban). The same session runs against every stand-in
(``tests/upstream/``), so what differs between two recordings is the provider.

A session never assumes how a provider answers a mistake: it sends the request
and moves on. It asserts only what the spec states (a created pet comes back
with an id; over the allowance is ``429``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from mockstore.fidelity.calibrate.learn_http import CLIENT_IDS
from mockstore.fidelity.listings import parse_links

WAIT = 30.0
# More 429s than any ban threshold the stand-ins use (kennel 5, menagerie 6, profiled 2-5).
SEND_ON = 8


@dataclass
class Session:
    """What one session saw: (method, target, status) per request, in order."""

    seen: list[tuple[str, str, int]]

    def statuses(self) -> list[int]:
        return [status for _, _, status in self.seen]


def client_session(
    api: str,
    key: str,
    tight: str | None = None,
    *,
    oversize: int = 70_000,
    anonymous: bool = True,
    send_on: int = SEND_ON,
    edges: bool = False,
    page_parameter: str = "page",
) -> Session:
    """Send the session to ``api`` (``…/v1``): ``key`` for the bulk, ``tight`` for the 429s.

    ``oversize`` is the size of the body meant to be refused for its size (over the
    provider's limit); ``anonymous`` sends the requests without a valid key. ``edges``
    adds what a client meets at the edges of a provider's forms (``_edges``), walking
    pages by number through ``page_parameter`` where the provider states the next one.
    """
    seen: list[tuple[str, str, int]] = []
    auth = {"Authorization": f"Bearer {key}"}
    json_type = {**auth, "Content-Type": "application/json"}

    def send(method: str, path: str, **kwargs: object) -> httpx.Response:
        response = http.request(method, path, **kwargs)  # type: ignore[arg-type]
        seen.append((method, path, response.status_code))
        return response

    with httpx.Client(base_url=api, timeout=WAIT, trust_env=False) as http:
        send("GET", "/pets?limit=2", headers=auth)
        send("GET", "/pets", headers=auth)
        created = send("POST", "/pets", json={"name": "Nala", "categoryId": 7}, headers=auth)
        assert created.status_code == 201, created.text
        pet_id = created.json()["id"]
        send("POST", "/pets", json={"name": "Max", "categoryId": 3, "status": "sold"}, headers=auth)
        send("POST", "/pets", json={"name": "Rex", "categoryId": 3, "nickname": "R"}, headers=auth)
        send("GET", f"/pets/{pet_id}", headers=auth)
        send("GET", "/pets/999999", headers=auth)
        send("GET", "/pets/abc", headers=auth)
        send("GET", "/pets?limit=0", headers=auth)
        send("GET", "/pets?limit=500", headers=auth)
        send("GET", "/pets?status=lost", headers=auth)
        send("GET", "/pets?status=sold&limit=5", headers=auth)
        # The collection: the pages a listing links to (followed through this client's
        # base, as a client does), a filter in capitals, numbers as strings and with a
        # fraction, a long name, a category below 1.
        page = send("GET", "/pets?limit=2", headers=auth)
        for _ in range(2):
            following = _link(page, "next", api)
            if following is None:
                break
            page = send("GET", following, headers=auth)
        previous = _link(page, "prev", api)
        if previous is not None:
            send("GET", previous, headers=auth)
        send("GET", "/pets?status=SOLD&limit=3", headers=auth)
        send("GET", "/pets?limit=2.0", headers=auth)
        send("POST", "/pets", json={"name": "Kiwi", "categoryId": "4"}, headers=auth)
        send("POST", "/pets", json={"name": "Pip", "categoryId": 4.0}, headers=auth)
        send("POST", "/pets", json={"name": "Sir Reginald Fluffington", "categoryId": 4},
             headers=auth)  # fmt: skip
        send("POST", "/pets", json={"name": "N" * 70, "categoryId": 4}, headers=auth)
        send("POST", "/pets", json={"name": "Neg", "categoryId": -1}, headers=auth)
        send("POST", "/pets", json={"name": 5}, headers=auth)
        send("POST", "/pets", content=b"{nope", headers=json_type)
        send("POST", "/pets", content=b"", headers=json_type)
        send(
            "POST",
            "/pets",
            content=b'{"name": "Tom", "categoryId": 1}',
            headers={**auth, "Content-Type": "text/plain"},
        )
        big = b'{"name": "' + b"a" * oversize + b'", "categoryId": 1}'
        try:
            send("POST", "/pets", content=big, headers=json_type)
        except httpx.TransportError:
            # A provider that answers before reading the body and closes may lose its
            # answer in the reset (RFC 9112 section 9.6): a client sees it broken.
            seen.append(("POST", "/pets", 0))
        if anonymous:
            send("GET", "/pets")
            send("GET", "/pets", headers={"Authorization": "Basic dXNlcjpwYXNz"})
            send("GET", "/pets", headers={"Authorization": "Bearer not-a-key-of-theirs"})
            send("GET", "/nowhere")
        send("GET", "/nowhere", headers=auth)
        send("DELETE", "/pets", headers=auth)
        send("HEAD", "/pets", headers=auth)
        send("HEAD", f"/pets/{pet_id}", headers=auth)
        send("GET", "/store/orders", headers=auth)
        send("GET", "/pets?limit=1", headers=auth)
        _http_semantics(send, auth, pet_id, anonymous)
        if edges:
            _edges(send, auth, pet_id, page_parameter)
        if tight is not None:
            _until_banned(send, {"Authorization": f"Bearer {tight}"}, send_on)
    return Session(seen)


APP = "https://app.example.com"
# The names a provider may carry a request id under: a client's own id goes under each.
ID_HEADERS = (
    "X-Request-Id", "Request-Id", "X-Correlation-Id", "X-Trace-Id", "X-Amzn-RequestId",
)  # fmt: skip


def _http_semantics(
    send: Callable[..., httpx.Response], auth: dict[str, str], pet_id: int, anonymous: bool
) -> None:
    """What a client meets of a provider's HTTP semantics (issue 25): conditional reads,
    content coding, CORS, OPTIONS, a trailing slash, its own request ids answered back."""
    fetched = send("GET", f"/pets/{pet_id}", headers=auth)
    send("GET", f"/pets/{pet_id}", headers={**auth, "If-None-Match": "*"})
    send("GET", "/pets?limit=3", headers={**auth, "If-None-Match": "*"})
    since = fetched.headers.get("last-modified") or fetched.headers.get("date")
    if since:
        send("GET", f"/pets/{pet_id}", headers={**auth, "If-Modified-Since": since})
    send("GET", "/pets?limit=30", headers={**auth, "Accept-Encoding": "gzip, deflate"})
    send("GET", "/pets?limit=1", headers={**auth, "Accept-Encoding": "identity"})
    preflight = {"Origin": APP, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}  # fmt: skip
    if anonymous:
        # A browser's preflight carries no key: whether one is answered tells the stage. (The
        # one request without a key added here: the callers without one share a small allowance.)
        send("OPTIONS", "/pets", headers=preflight)
    send("OPTIONS", "/pets", headers={**auth, **preflight})
    send("OPTIONS", "/pets", headers={
        **auth, "Origin": "https://evil.example", "Access-Control-Request-Method": "DELETE"
    })  # fmt: skip
    send("GET", "/pets?limit=1", headers={**auth, "Origin": APP})
    send("OPTIONS", "/pets", headers=auth)
    send("GET", "/pets/?limit=1", headers=auth)
    for client_id in CLIENT_IDS:
        send("GET", "/pets?limit=1", headers={**auth, **dict.fromkeys(ID_HEADERS, client_id)})


def _edges(
    send: Callable[..., httpx.Response], auth: dict[str, str], pet_id: int, page_parameter: str
) -> None:
    """The edges of a provider's forms a client meets: a create sent without Content-Type,
    names long in UTF-8 bytes but not in characters, a blank one and one of a letter, a
    large category, a limit given twice, a preflight and a cross-origin read of the orders,
    If-None-Match with the read's own tag in both its forms, pages walked by the number a
    page header states."""
    send("POST", "/pets", content=b'{"name": "Plain", "categoryId": 2}', headers=auth)
    for name in ("\u00e9" * 30, "\u00e9" * 45, "   ", "Q"):
        send("POST", "/pets", json={"name": name, "categoryId": 2}, headers=auth)
    send("POST", "/pets", json={"name": "Big", "categoryId": 100_000}, headers=auth)
    send("GET", "/pets?limit=2&limit=1", headers=auth)
    send("OPTIONS", "/store/orders", headers={
        **auth, "Origin": APP, "Access-Control-Request-Method": "GET"
    })  # fmt: skip
    send("GET", "/store/orders", headers={**auth, "Origin": APP})
    for target in (f"/pets/{pet_id}", "/pets?limit=2"):
        tag = send("GET", target, headers=auth).headers.get("etag")
        if tag:
            strong = tag.removeprefix("W/")
            for form in (tag, strong if tag.startswith("W/") else f"W/{tag}"):
                send("GET", target, headers={**auth, "If-None-Match": form})
    page = send("GET", "/pets?limit=2", headers=auth)
    for _ in range(2):
        following = next(
            (v for n, v in page.headers.items() if n.lower().endswith("next-page") and v), None
        )
        if page.status_code != 200 or following is None:
            break
        page = send("GET", f"/pets?limit=2&{page_parameter}={following}", headers=auth)


def _link(response: httpx.Response, rel: str, api: str) -> str | None:
    """The target of a listing's Link relation, as a path under ``api`` (whatever host it
    names: a client follows pages through its own base)."""
    if response.status_code != 200:
        return None
    found = dict(parse_links(response.headers.get("link", "")))
    target = found.get(rel)
    if target is None:
        return None
    parts = urlsplit(target)
    base = urlsplit(api).path.rstrip("/")
    path = parts.path[len(base) :] if parts.path.startswith(base + "/") else parts.path
    return path + (f"?{parts.query}" if parts.query else "")


def _until_banned(send: Callable[..., httpx.Response], auth: dict[str, str], send_on: int) -> None:
    """Spend ``auth``'s allowance to its first refusal, then send ``send_on`` more."""
    refused = 0
    for _ in range(200):
        if send("GET", "/pets?limit=1", headers=auth).status_code != 200:
            refused += 1
            if refused > send_on:
                return
    raise AssertionError("200 requests and no 429: the key's plan is not small")
