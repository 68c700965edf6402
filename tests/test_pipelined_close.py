"""A client that hangs up while its answer waits for it to read: nothing logged, nothing kept.

``bench/held_mix.py`` logged tracebacks (``RuntimeError: unable to perform
operation on <TCPTransport closed=True ...>; the handler is closed``, from an
answer's write) when its pipelining clients, which never read, hung up.
uvicorn's ``connection_lost`` marks only its *latest* cycle as disconnected:
with requests pipelined, that is the last one parsed, not the one being
answered. The answer under way was waiting for the client to read (its
writing paused); the hang-up resumed it, it wrote to the transport uvloop had
just closed, raised, and the app logged "unexpected error" with a traceback.
Every request of the connection is now told its client left
(``pipelining.Queue.close``): the answer under way ends quietly.

And the 128 KiB charged to the connections' share while an answer waits for
its client to read (``protocol.MAX_UNSENT_BYTES``) was given back only when
the client read or was dropped, never when it hung up: every slow reader that
left kept it for good, until the share was full and a well-behaved client's
40-byte create was answered 507 (the mix's "20 bytes left of 32 MiB").

Raw sockets against a real ``mockstore serve`` (uvloop, ``protocol.py``):
the steps wait on what the server says of its memory (the unsent bytes it
charges while a client does not read, given back when the connection is
gone), never on time.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import httpx
import pytest

from mockstore.protocol import MAX_UNSENT_BYTES
from tests.attacks import PUBLIC, big_journal, budget_env, create_big_pets
from tests.rawhttp import address
from tests.support import LiveServer, live_server

LISTING = "/v1/pets?limit=100"


def _connections_used(client: httpx.Client, server: LiveServer) -> int:
    return client.get(server.url + "/__mockstore/memory").json()["connections"]["used"]


def _wait_for(condition: object, server: LiveServer, since: int, deadline: float = 120.0) -> bool:
    """Poll ``condition()`` until it holds (True), a traceback is logged after line ``since``
    of the server's log, or time is up."""
    end = time.monotonic() + deadline
    while time.monotonic() < end and not _tracebacks(server, since):
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _tracebacks(server: LiveServer, since: int) -> str:
    logged = "\n".join(server.output[since:])
    return logged if "Traceback" in logged or "unexpected error" in logged else ""


@pytest.fixture(scope="module")
def stocked() -> Iterator[LiveServer]:
    """A server with an 8 MB listing, that never drops a client that does not read."""
    env = budget_env(
        256 * 2**20,
        MOCKSTORE_SCENARIO_YAML=big_journal(body_bytes=4096),
        MOCKSTORE_TIMEOUT_WRITE="600",
    )
    with live_server(env=env) as server:
        assert create_big_pets(server.api, 8) == [201] * 8
        yield server


def _hang_up_unread(server: LiveServer, then: str | None) -> tuple[bool, bool, str]:
    """Ask for the listing (and ``then``, pipelined behind it), never read, hang up once
    its writing is paused. Returns (it paused, its charges all came back, tracebacks)."""
    since = len(server.output)
    with httpx.Client(timeout=60) as client:
        size = len(client.get(server.url + LISTING, headers=PUBLIC).content)
        before = _connections_used(client, server)
        host, port = address(server.url)
        auth = PUBLIC["Authorization"]
        ask = f"GET {{}} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: {auth}\r\n\r\n"
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the answer backs up
        sock.connect((host, port))
        sock.sendall((ask.format(LISTING) + (ask.format(then) if then else "")).encode())
        # The listing is charged, and its writing paused on this client: the unsent bytes too.
        paused = _wait_for(
            lambda: _connections_used(client, server) >= before + size + MAX_UNSENT_BYTES,
            server,
            since,
        )
        # Hang up with a reset, as a client that closes with answers unread does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        gone = _wait_for(lambda: _connections_used(client, server) <= before, server, since)
        assert client.get(server.url + "/__mockstore/health").status_code == 200
    return paused, gone, _tracebacks(server, since)


def test_a_pipelining_client_that_hangs_up_unread_leaves_no_traceback(
    stocked: LiveServer,
) -> None:
    # The 8 MB listing, and behind it a small request uvicorn queues: its latest cycle.
    paused, gone, tracebacks = _hang_up_unread(stocked, "/v1/pets/1")
    assert paused, "the listing's writing never paused"
    assert not tracebacks, tracebacks
    assert gone


def test_a_reader_that_hangs_up_gives_back_what_its_unsent_answer_was_charged(
    stocked: LiveServer,
) -> None:
    paused, gone, tracebacks = _hang_up_unread(stocked, None)
    assert paused, "the listing's writing never paused"
    assert gone, "the connection's charges were never all given back"
    assert not tracebacks, tracebacks
