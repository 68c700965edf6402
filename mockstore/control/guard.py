"""What keeps web pages out of the control API: the ``Host`` check and the cross-site check.

The control API has no key (a token is optional), so a page open in any browser
on the same machine or network could otherwise drive it:

* **Cross-site requests.** A browser says where every request it sends comes
  from: a state-changing request from a page carries ``Origin`` (and a modern
  browser ``Sec-Fetch-Site``). So a state-changing request whose ``Origin`` is
  not this server's own, or whose ``Sec-Fetch-Site`` is anything but
  ``same-origin`` (or ``none``, typed by the user), is refused. A request with
  neither comes from a non-browser client (curl, a script, a test) and is
  served: ``curl -X POST http://127.0.0.1:8080/__mockstore/reset`` works. As
  well, a POST with a body a page may send without a preflight (a form:
  ``application/x-www-form-urlencoded``, ``multipart/form-data``, or
  ``text/plain``) is refused unless it names its tool in ``X-Mockstore-Client``,
  which a page can only add after a preflight mockstore never answers: an old
  browser that sends no ``Origin`` on a form is kept out too. PUT and DELETE are
  never simple (a browser always preflights them), so ``curl -X PUT
  --data-binary @scenario.yaml`` keeps working.
* **DNS rebinding.** A page can make its own host name resolve to this server
  and then read it as same-origin; the request still says ``Host: its-name``.
  So every control request (``/health`` aside) must name the server: a
  loopback name (``localhost``, ``*.localhost``), an IP address (a rebinding
  page can only ever use a name), the host an in-process client addressed, or
  a name given with ``--allowed-host``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import Scope

from mockstore.errors import ApiError

CLIENT_HEADER = "X-Mockstore-Client"
_CLIENT_HEADER = CLIENT_HEADER.lower().encode()
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The body types a page may send cross-site without a preflight (CORS-safelisted).
_SIMPLE_TYPES = frozenset(
    {b"application/x-www-form-urlencoded", b"multipart/form-data", b"text/plain"}
)
_FETCH_SITE = b"sec-fetch-site"
# Sec-Fetch-Site values a page of this server (or the user) sends.
_OWN_SITES = frozenset({b"same-origin", b"none"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _split_host(value: str) -> tuple[str, int | None]:
    """``name:port`` (or ``[v6]:port``): the name, lower-case without a trailing dot, and port."""
    value = value.strip()
    port: int | None = None
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdigit():
            port = int(rest[1:])
    else:
        name, sep, tail = value.rpartition(":")
        if not sep or not tail.isdigit() or ":" in name:
            name = value  # no port (or a bare IPv6 address)
        else:
            port = int(tail)
    return name.lower().rstrip("."), port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _is_simple_type(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    return content_type.split(b";", 1)[0].strip().lower() in _SIMPLE_TYPES


def _host_not_allowed(host: str, host_name: str) -> ApiError:
    return ApiError(
        "host_not_allowed",
        f"Host {host!r} is not a name of this server, so the control API does not "
        "answer it (a DNS-rebinding page would come with such a name): use a loopback "
        f"name or an IP address, or start mockstore with --allowed-host {host_name} "
        "(MOCKSTORE_ALLOWED_HOSTS)",
        status=403,
    )


def is_remote_client(scope: Scope) -> bool:
    """True when the request came over the network from another machine.

    A loopback address is this machine; a client that is not an address at
    all (an in-process client such as Starlette's TestClient) is this process.
    """
    client = scope.get("client")
    if not client:
        return False
    host = client[0]
    if host in _LOOPBACK_CLIENTS:  # a test suite's every control call: no parse (issue 29)
        return False
    try:
        address = ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return not address.is_loopback


# The loopback addresses clients come from most: known without parsing them.
_LOOPBACK_CLIENTS = frozenset({"127.0.0.1", "::1"})


class ControlGuard:
    """Checks one control request; ``allowed_hosts`` are the names given with ``--allowed-host``."""

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        names = {name.strip().lower().rstrip(".") for name in allowed_hosts if name.strip()}
        self.any_host = "*" in names
        self.allowed_hosts = frozenset(names - {"*"})
        # The last Host name found to be an IP address: a client sends the same one on
        # every call, and parsing it is most of this check (one name: bounded memory).
        self._last_ip: str | None = None

    def host_allowed(self, name: str, scope: Scope) -> bool:
        if self.any_host or name in self.allowed_hosts or name == self._last_ip:
            return True
        if name == "localhost" or name.endswith(".localhost"):
            return True
        if _is_ip(name):
            self._last_ip = name
            return True
        # In-process (TestClient, httpx's ASGITransport), the server is the
        # host the client addressed: it names itself.
        server = scope.get("server")
        return bool(server) and str(server[0]).lower().rstrip(".") == name

    def check(self, scope: Scope, path: str) -> None:
        """Raise the ApiError (403) that refuses this request, if any."""
        host = origin = content_type = fetch_site = None
        named_client = False
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
            elif name == b"content-type":
                content_type = value
            elif name == _FETCH_SITE:
                fetch_site = value.strip().lower()
            elif name == _CLIENT_HEADER and value.strip():
                named_client = True
        host_name, host_port = _split_host(host) if host is not None else ("", None)
        if host is not None and path != "/health" and not self.host_allowed(host_name, scope):
            raise _host_not_allowed(host, host_name)
        method = scope["method"]
        if method not in STATE_CHANGING:
            return
        if origin is not None and not self._same_origin(origin, host_name, host_port, scope):
            raise ApiError(
                "cross_site_request",
                f"{method} from Origin {origin!r} refused: the control API takes "
                f"state-changing calls only from its own origin ({CLIENT_HEADER} or not)",
                status=403,
            )
        if fetch_site is not None and fetch_site not in _OWN_SITES:
            raise ApiError(
                "cross_site_request",
                f"{method} with Sec-Fetch-Site: {fetch_site.decode('latin-1')} refused: the "
                "control API takes state-changing calls from a browser only from its own "
                "origin (a tool that sends neither Origin nor Sec-Fetch-Site is served)",
                status=403,
            )
        if method == "POST" and not named_client and _is_simple_type(content_type):
            assert content_type is not None
            raise ApiError(
                "cross_site_request",
                f"POST with a form body (Content-Type: {content_type.decode('latin-1')}) looks "
                "like a cross-site form: send Content-Type: application/json (or a YAML type, "
                f"or no body), or the header {CLIENT_HEADER}: <your tool>",
                status=403,
            )

    def check_host(self, scope: Scope) -> None:
        """The ``Host`` check alone, for every path (raises the 403 ApiError that refuses it)."""
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1")
                host_name, _ = _split_host(host)
                if not self.host_allowed(host_name, scope):
                    raise _host_not_allowed(host, host_name)

    @staticmethod
    def _same_origin(origin: str, host: str, port: int | None, scope: Scope) -> bool:
        """True when ``Origin`` names the host and port the request was sent to."""
        try:
            parts = urlsplit(origin)
            origin_port = parts.port
        except ValueError:
            return False
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            return False  # "null" (a sandboxed page, a file), or no origin at all
        scheme = scope.get("scheme", "http")
        if not host:
            server = scope.get("server")
            if not server:
                return False
            host, port = str(server[0]).lower(), server[1]
        same_port = (origin_port or _DEFAULT_PORTS[parts.scheme]) == (
            port or _DEFAULT_PORTS.get(scheme, 80)
        )
        return parts.hostname.lower().rstrip(".") == host and same_port


def is_public_path(path: str) -> bool:
    """Paths (under the control prefix) served without the control token: the page only."""
    if path in ("/", "/ui", "/ui/"):
        return True
    name = path.removeprefix("/ui/")
    # One file name, nothing that could climb out of /ui (the router would 404 it anyway).
    return name != path and "/" not in name and ".." not in name
