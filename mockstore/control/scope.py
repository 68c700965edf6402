"""What ``ControlAPI`` puts in a control request's scope for its endpoints to read.

Apart from ``http.py`` (Starlette's requests and responses) so that the control
API's front door, which sets them on every call, imports no more than it needs
before its first call (the control API is mounted on first use: issue 29).
"""

from __future__ import annotations

# The scope key under which ``ControlAPI`` gives its endpoints the connections'
# share of the memory budget: what a large answer is charged while a client
# takes its time reading it.
HOLDS = "mockstore.holds"
# The scope key under which ``ControlAPI`` says whether this caller may see
# clients' keys whole: a holder of the token, or a caller on this machine (the
# same callers who may have a HAR with raw keys).
RAW_KEYS = "mockstore.raw_keys"
