"""What one server allows a client: sizes, timeouts and connections, in one place.

These are the serving limits (``mockstore serve`` options, the docs' Security
page); what a scenario may set (journal, bodies, pets) has its
bounds in the scenario schema instead. Nothing here imports uvicorn: the app,
the control API and the CLI all read it.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass, replace

from mockstore.memory import DEFAULT_MEMORY_BUDGET

# A scenario (a PUT body, a file, MOCKSTORE_SCENARIO_YAML) larger than this is
# refused before it is parsed: YAML is parsed in pure Python, at about a
# megabyte a second, and 8 MiB already holds 10,000 listed pets many times over.
MAX_SCENARIO_BYTES = 8 * 1024 * 1024

# The most of an answer handed to a connection at once: a larger body is sent in
# pieces of this size, and the server waits for the client to read between them
# (asyncio copies whatever the socket does not take into the connection's
# buffer, so a 16 MB answer to a client that never reads would stay there whole).
WRITE_CHUNK = 64 * 1024

# The scope key under which mockstore's protocol (protocol.py) gives the app
# the size of each request's head, as it counted it anyway: the journal needs
# it for its byte budget and need not count the headers again.
HEAD_BYTES = "mockstore.head_bytes"

# An ASGI extension of mockstore's protocol (protocol.py), named in each
# request's ``scope["extensions"]``: the app may answer with one message of
# this type, ``{"type": RESPONSE, "status": int, "head": bytes, "body": bytes}``,
# where ``head`` holds the header lines as sent (each ending CRLF), instead of
# ``http.response.start`` and ``http.response.body``. One system call instead of two,
# and no second pass over headers the app built itself (see api.py).
RESPONSE = "mockstore.http.response"

# File descriptors kept free for what is not a client connection (the
# listening socket, the event loop, log files, scenario files, worker threads).
_RESERVED_FDS = 64


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits one server applies to its clients.

    * ``max_header_bytes``: the request line and headers together, as sent;
      over it a request is answered 431 before the app sees it (Node's default).
    * ``keep_alive_timeout``: how long a connection may wait with no request
      under way (a new one, or one whose last answer went out) before it is closed.
    * ``header_timeout``: from a request's first byte, how long its line and
      headers may take (408).
    * ``body_timeout``: from the end of its head, how long a request's body may
      take (408 when the server is waiting for it).
    * ``max_connections``: open client connections; past it, the one that has
      waited longest on its client is closed to make room (503 when none waits).
    * ``max_control_body_bytes``: a control API request body, a scenario included (413).
    * ``write_timeout``: how long an answer may wait for its client to read
      (to take bytes off a full send buffer) before the connection is dropped.
    * ``memory_budget``: every byte the process holds for its callers, in one
      budget (``mockstore.memory``); past it, 507.
    """

    max_header_bytes: int = 16 * 1024
    keep_alive_timeout: float = 5.0
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 4096
    max_control_body_bytes: int = MAX_SCENARIO_BYTES
    write_timeout: float = 15.0
    memory_budget: int = DEFAULT_MEMORY_BUDGET

    def within_descriptors(self) -> tuple[Limits, str | None]:
        """These limits with ``max_connections`` fitted to the process's file descriptors.

        Raises the soft limit on open files toward the hard one first (most
        systems start processes at a soft 1,024), so that the connection limit,
        not the kernel, decides what happens to a flood; returns a warning when
        even the hard limit is too low for ``max_connections``.
        """
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = self.max_connections + _RESERVED_FDS
        if soft != resource.RLIM_INFINITY and soft < wanted:
            target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (ValueError, OSError):
                pass
        if soft == resource.RLIM_INFINITY or soft >= wanted:
            return self, None
        fitted = max(1, soft - _RESERVED_FDS)
        warning = (
            f"only {soft} open files are allowed (ulimit -n): serving at most {fitted} "
            f"connections, not {self.max_connections}"
        )
        return replace(self, max_connections=fitted), warning
