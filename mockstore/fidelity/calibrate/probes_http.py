"""The probes of HTTP semantics: what a recording leaves open of ``http`` and the echo, asked live.

Each is a read a client might send (a ``GET`` with ``If-None-Match: *``, with
``Accept-Encoding``, with a trailing slash, with a request id of its own; an
``OPTIONS``, as a browser's preflight or plain), sent only for what the recording
and the probes so far leave unsettled, within the budget and without spending an
allowance's last request (``prober``). None writes. Their answers are read by the
same learner (``learn_http``), as a recording calibrate made itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockstore.fidelity.calibrate.learn_http import CLIENT_IDS

APP = "https://app.example.com"
OTHER = "https://other.example.org"
# The names providers carry a request id under.
ID_HEADERS = ("X-Request-Id", "Request-Id", "X-Correlation-Id", "X-Trace-Id", "X-Amzn-RequestId")


def probe_http(
    unsettled: Callable[[str], bool],
    send: Callable[..., Any],
    key: str,
    pet_id: int | None,
    request_id: str | None,
) -> None:
    """Send the probes of what is ``unsettled`` (by a setting's path) with ``send``."""
    if unsettled("http.conditional.operations"):
        send("conditional listPets", "GET", "/pets?limit=1", key=key,
             extra={"If-None-Match": "*"})  # fmt: skip
        if pet_id is not None:
            send("conditional getPet", "GET", f"/pets/{pet_id}", key=key,
                 extra={"If-None-Match": "*"})  # fmt: skip
    if unsettled("http.compression.encodings"):
        send("content coding", "GET", "/pets?limit=100", key=key,
             extra={"Accept-Encoding": "gzip, deflate"})  # fmt: skip
    if unsettled("http.cors"):
        preflight = {"Origin": APP, "Access-Control-Request-Method": "GET"}
        send("CORS preflight without a key", "OPTIONS", "/pets", extra=preflight)
        # From a second origin too, without a key as a browser sends it: a provider that
        # names back any origin shows it (one origin allowed says nothing of the others).
        other = {**preflight, "Origin": OTHER}
        send("CORS preflight from another origin", "OPTIONS", "/pets", extra=other)
        send("CORS preflight", "OPTIONS", "/pets", key=key, extra=preflight)
    if unsettled("http.options.serve"):
        send("OPTIONS", "OPTIONS", "/pets", key=key)
    if unsettled("http.trailing_slash.answer"):
        send("a trailing slash", "GET", "/pets/?limit=1", key=key)
    if unsettled("behaviour.request_id.echo"):
        # Under the header the recording shows, else under each name providers use.
        names = [request_id] if request_id else list(ID_HEADERS)
        for client_id in CLIENT_IDS:
            send("a request id of the client's", "GET", "/pets?limit=1", key=key,
                 extra=dict.fromkeys(names, client_id))  # fmt: skip


__all__ = ["probe_http"]
