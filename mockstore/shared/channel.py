"""The request script's own lean line to Redis: RESP written by hand, replies read by hiredis.

Every API request makes one call of ``scripts.REQUEST``. Through redis-py each
call built a command object, encoded its arguments one by one, took a
connection from the pool under a timeout and went through the reply
machinery: most of a Redis-backed process's extra time per request
(``bench/shared_state.py``), not Redis's. A ``ScriptChannel`` does only what
that one call needs:

- one connection per event loop, pipelined: the calls of one turn of the loop
  are written together, and Redis answers a connection's commands in order, so
  each reply goes to the oldest call still waiting (first in, first out);
- the ``EVALSHA`` head written once (``*N``, the command, the script's SHA1),
  each call adding only its keys and arguments;
- replies parsed by ``hiredis.Reader`` (Redis's C parser, which redis-py uses
  too): the same bytes, ints and nested lists as redis-py with hiredis gives;
- ``NOSCRIPT`` (Redis restarted, or its script cache flushed): ``SCRIPT LOAD``,
  then the call again;
- the connection lost, or no reply for ``reply_timeout`` seconds while calls
  wait: every waiting call fails with ``ConnectionError`` or ``TimeoutError``
  (so the request is answered 503) and the next call connects again.

redis-py keeps every other call (control calls, the journal, ``/health``). The
URL is read as redis-py reads it (``redis.connection.parse_url``): host and
port, or a Unix socket path, the database (``SELECT``) and the user and
password (``AUTH``). A URL asking for more (TLS: ``rediss://``; options in
its query string) is left to redis-py: ``channel_for`` gives None.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from collections.abc import Sequence
from typing import Any

# How long connecting may take, and the longest a waiting call goes without a
# byte from Redis, as the redis-py client is configured (backend.SharedState).
CONNECT_TIMEOUT = 2.0
REPLY_TIMEOUT = 5.0
# How many arguments' RESP a channel keeps (then it starts again: one call's
# instants never repeat, and a new epoch's keys replace the old ones).
KNOWN = 1024
# The channel's connection's name in Redis (``CLIENT LIST``).
NAME = "mockstore-requests"


class ReplyError(Exception):
    """Redis answered a call with an error (the script failed, Redis refused it)."""


def channel_for(url: str, script: str) -> ScriptChannel | None:
    """A channel for ``script`` at ``url``, or None when only redis-py can honour the URL."""
    try:
        import hiredis  # noqa: F401  (the `redis` extra installs it)
        from redis.connection import SSLConnection, parse_url
    except ImportError:
        return None
    options = parse_url(url)
    if options.get("connection_class") is SSLConnection:
        return None
    options.pop("connection_class", None)
    if set(options) - {"host", "port", "path", "db", "username", "password"}:
        return None  # options from the query string: redis-py's to apply
    return ScriptChannel(script, **options)


def command(*parts: bytes | str) -> bytes:
    """One command in RESP (an array of bulk strings)."""
    encoded = [p.encode() if isinstance(p, str) else p for p in parts]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in encoded)


class ScriptChannel:
    """Calls of one Lua script (``call(keys, args) -> reply``) on one pipelined connection.

    Made in the event loop that uses it (``backend.SharedState.client``); not
    shared across loops.
    """

    def __init__(
        self,
        script: str,
        host: str = "localhost",
        port: int = 6379,
        path: str | None = None,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        reply_timeout: float = REPLY_TIMEOUT,
    ) -> None:
        self.sha = hashlib.sha1(script.encode()).hexdigest()
        self.host, self.port, self.path = host, int(port), path
        self.connect_timeout = connect_timeout
        self.reply_timeout = reply_timeout
        self._load = command("SCRIPT", "LOAD", script)
        # What a connection says first: who it is, which database it uses, and its
        # name (CLIENT LIST shows the line every API request takes).
        self._hello: list[bytes] = []
        if password is not None:
            auth = (username, password) if username is not None else (password,)
            self._hello.append(command("AUTH", *auth))
        if int(db):
            self._hello.append(command("SELECT", str(int(db))))
        self._hello.append(command("CLIENT", "SETNAME", NAME))
        # Every call: '*N', then the command and the SHA1 (the same for all), then
        # the number of keys, the keys and the arguments.
        self._after_count = b"\r\n$7\r\nEVALSHA\r\n$40\r\n" + self.sha.encode() + b"\r\n"
        self._known: dict[str | int, bytes] = {}  # argument -> its RESP (_frame)
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None
        self._loading: asyncio.Future[None] | None = None

    @property
    def where(self) -> str:
        return self.path or f"{self.host}:{self.port}"

    async def call(self, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """The script's reply to ``keys`` and ``args`` (str, bytes, int or float each).

        ``ConnectionError`` or ``TimeoutError`` when Redis cannot be reached or
        stopped answering, ``ReplyError`` when it answered with an error.
        """
        frame = self._frame(keys, args)
        connection = self._connection
        if connection is None or connection.closed:
            connection = await self._connect()
        reply = await connection.send(frame)
        if type(reply) is not list and isinstance(reply, Exception):
            if str(reply).startswith("NOSCRIPT"):
                await self._load_script(connection)
                reply = await connection.send(frame)
            if isinstance(reply, Exception):
                raise ReplyError(str(reply))
        return reply

    def _frame(self, keys: Sequence[str], args: Sequence[Any]) -> bytes:
        items = (*keys, *args)
        parts = [b"*%d" % (len(items) + 3), self._after_count, _NUMBER[len(keys)]]
        append = parts.append
        known = self._known
        for value in items:
            # Most keys and arguments repeat from call to call (the generation, the
            # caller's keys, the plan): their RESP is looked up, not written again.
            segment = known.get(value)
            if segment is None or (type(value) is not str and type(value) is not int):
                segment = _bulk(value)  # (1.0 == 1 == True: only a str or an int is known)
                if type(value) is str or type(value) is int:
                    if len(known) >= KNOWN:
                        known.clear()
                    known[value] = segment
            append(segment)
        return b"".join(parts)

    async def _load_script(self, connection: _Connection) -> None:
        """``SCRIPT LOAD`` once for every call that met ``NOSCRIPT`` at the same time."""
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_future()
            loading = self._loading
            try:
                reply = await connection.send(self._load)
                if isinstance(reply, Exception):
                    raise ReplyError(str(reply))
            except Exception as exc:
                loading.set_exception(exc)
                loading.exception()  # retrieved: the calls waiting on it see it too
                raise
            except BaseException:
                loading.cancel()
                raise
            else:
                loading.set_result(None)
            finally:
                self._loading = None
        else:
            await asyncio.shield(self._loading)

    async def _connect(self) -> _Connection:
        """This loop's connection: one attempt at a time, shared by every call that waits."""
        if self._connecting is None:
            loop = asyncio.get_running_loop()
            self._connecting = loop.create_task(self._open())
            self._connecting.add_done_callback(self._connected)
        return await asyncio.shield(self._connecting)

    def _connected(self, attempt: asyncio.Future[_Connection]) -> None:
        self._connecting = None
        if not attempt.cancelled() and attempt.exception() is None:
            self._connection = attempt.result()

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        old, self._connection = self._connection, None
        if old is not None:
            old.close()
        connection = _Connection(self.reply_timeout)
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.path:
                    await loop.create_unix_connection(lambda: connection, self.path)
                else:
                    await loop.create_connection(lambda: connection, self.host, self.port)
        except TimeoutError:
            raise TimeoutError(
                f"no connection to {self.where} within {self.connect_timeout:g} s"
            ) from None
        for hello in self._hello:
            reply = await connection.send(hello)
            if isinstance(reply, Exception):
                connection.close()
                raise ConnectionError(f"Redis at {self.where} refused the connection: {reply}")
        return connection

    def close(self) -> None:
        """Close the connection; calls still waiting fail with ``ConnectionError``."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def _bulk(value: str | bytes | int | float) -> bytes:
    """One argument as a RESP bulk string, written as redis-py writes it."""
    kind = type(value)
    if kind is str:
        raw = value.encode()  # type: ignore[union-attr]
    elif kind is int or kind is float:
        raw = repr(value).encode()
    elif kind is bytes:
        raw = value  # type: ignore[assignment]
    else:
        raise TypeError(f"a script argument must be str, bytes, int or float: {value!r}")
    return b"$%d\r\n%s\r\n" % (len(raw), raw)


# '$1\r\n3\r\n': the number of keys, as a bulk string (a script takes a few).
_NUMBER = [b"$%d\r\n%d\r\n" % (len(str(n)), n) for n in range(64)]


class _Connection(asyncio.Protocol):
    """One connection: frames out in order, each reply to the oldest waiting call."""

    def __init__(self, reply_timeout: float) -> None:
        import hiredis

        self.reply_timeout = reply_timeout
        self.closed = False
        self._reader = hiredis.Reader()
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._waiting: deque[asyncio.Future[Any]] = deque()
        self._out: list[bytes] = []
        self._heard = 0.0  # when Redis last sent a byte, or a call began to wait
        self._watch: asyncio.TimerHandle | None = None

    def send(self, frame: bytes) -> asyncio.Future[Any]:
        """A future for ``frame``'s reply; frames of one loop turn go out in one write."""
        if self.closed:
            raise ConnectionError("the connection to Redis is closed")
        future = self._loop.create_future()
        if not self._waiting:
            self._heard = self._loop.time()
            if self._watch is None:
                self._watch = self._loop.call_later(self.reply_timeout, self._check)
        self._waiting.append(future)
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(frame)
        return future

    def _flush(self) -> None:
        out, self._out = self._out, []
        if not self.closed and self._transport is not None:
            self._transport.write(b"".join(out))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._heard = self._loop.time()
        reader = self._reader
        reader.feed(data)
        waiting = self._waiting
        try:
            while (reply := reader.gets()) is not False:
                future = waiting.popleft()  # IndexError: a reply nobody asked for
                if not future.done():  # its caller may have been cancelled
                    future.set_result(reply)
        except Exception as exc:  # hiredis.ProtocolError, IndexError: the stream is lost
            self._fail(ConnectionError(f"the connection to Redis broke: {exc!r}"))

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f": {exc}" if exc else ""
        self._fail(ConnectionError(f"the connection to Redis was lost{reason}"))

    def _check(self) -> None:
        """No reply for ``reply_timeout`` while calls wait: Redis is as good as gone."""
        self._watch = None
        if not self._waiting or self.closed:
            return
        silent = self._loop.time() - self._heard
        if silent >= self.reply_timeout:
            self._fail(TimeoutError(f"Redis sent no reply for {self.reply_timeout:g} s"))
        else:
            self._watch = self._loop.call_later(self.reply_timeout - silent, self._check)

    def close(self) -> None:
        self._fail(ConnectionError("the connection to Redis was closed"))

    def _fail(self, exc: Exception) -> None:
        """Close, and fail every waiting call with ``exc``."""
        self.closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._transport is not None:
            self._transport.abort()
        waiting, self._waiting = self._waiting, deque()
        for future in waiting:
            if not future.done():
                future.set_exception(exc)
