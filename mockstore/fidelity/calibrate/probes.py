"""The probes of ``mockstore calibrate --target``: what a recording leaves open, asked live.

Calibrate learns first from a recording (``--from``, see ``learn``); the probes
ask the live service only what is still unsettled, and their answers are read
by the same learner, as a recording calibrate made itself. So a probe is just a
request chosen for the condition it meets: ``?limit=0`` for a bad limit,
``/pets/not-a-number`` for a bad id, an unknown path without a key for the
order of the checks, ``HEAD`` on each read.

Safe by default:

- without ``allow_writes`` no POST, PUT, PATCH or DELETE is sent at all (the
  refusals of createPet stay open unless the recording shows them);
- without ``allow_rate_limit`` no allowance is spent to its end: a key (or the
  anonymous allowance) with one request left is not used again (``prober``);
- a key whose allowance was already spent when calibration began (its first
  probe is answered 429) is waited for, up to ``wait`` seconds, or left out and
  reported;
- with an opt-in, its probes go first, within the budget: the writes, then (on
  the key with the least left, the other keys keeping theirs) one minute spent
  to its first 429, the budget for it kept aside.

What the format cannot express and what stays open is listed with the reason.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import KeyOption, Options
from mockstore.fidelity.calibrate.prober import Probe, Prober
from mockstore.fidelity.calibrate.probes_http import probe_http
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.conditions import json_of
from mockstore.fidelity.formats import http_date, retry_after_kind
from mockstore.fidelity.listings import parse_links
from mockstore.fidelity.recording import InputError, Recording
from mockstore.fidelity.upstream import UpstreamError, parse_upstream
from mockstore.keys import is_alias, key_alias

UNKNOWN_PET = 2**63 - 1  # the largest int64: no store that counts up from 1 has it
BODY_SEARCH_START = 1024
BODY_SEARCH_CAP = 16 * 1024 * 1024
# Tries per body size: each is a body no service stores (a NewPet without categoryId).
BODY_SEND_TRIES = 3


def _next_page(probe: Probe | None, base: str) -> str | None:
    """The path (under ``base``) of a listing probe's rel="next" Link, if it has one."""
    if probe is None or probe.exchange is None or probe.status != 200:
        return None
    links = dict(parse_links(probe.header("link") or ""))
    if "next" not in links:
        return None
    target = urlsplit(links["next"])
    path = target.path[len(base) :] if target.path.startswith(base + "/") else target.path
    return path + (f"?{target.query}" if target.query else "")


def check_key(key: str) -> None:
    if not key or not all("!" <= char <= "~" for char in key):
        # Never echo it: it is a secret, even when mistyped.
        raise UpstreamError("--key must be a bearer token: printable ASCII, no spaces")


class Calibrator:
    """Probes a live service for what ``known`` (learned from a recording) leaves open."""

    def __init__(self, options: Options, known: Calibration | None = None) -> None:
        assert options.target is not None
        self.options = options
        for option in options.keys:
            check_key(option.key)
        upstream = parse_upstream(options.target)
        self.base = upstream.base_path
        self.shown = upstream.shown
        self.known = known or Calibration(upstream.shown)
        self.prober = Prober(
            options.target, options.budget, options.timeout, allow_writes=options.allow_writes
        )
        # Keys that can be sent (an alias from a recording cannot).
        self.keys: list[str] = [
            option.key for option in dict.fromkeys(options.keys) if not is_alias(option.key)
        ]
        self.usable: list[str] = []
        self.notes: list[str] = []
        self.pet_id: int | None = None
        self._spent_key: str | None = None  # the key whose minute the rate-limit probe spends
        self.left_out: set[int] = set()  # probes that show a state, not the provider

    def open(self, path: str) -> bool:
        """Whether ``path`` is still unsettled (by the recording and the probes so far)."""
        return not self.known.settled(path)

    def run(self) -> Calibration:
        """Probe, and what the probes settled (read by the learner, as a recording)."""
        try:
            self._keys()
            if self.usable and self.known.pets is None:
                # Read-only, and before any write: the pets the scenario starts with.
                self._send("the listed pets", "GET", "/pets?limit=100", key=self.key)
            if self.usable:
                self._opt_ins()
            self._without_key()
            if self.usable:
                self._refusals()
                self._reads()
                header = self.known.value("behaviour.request_id.header")
                probe_http(self.open, self._send, self.key, self.pet_id, header)
            if self.usable and self.options.allow_rate_limit:
                self._spend_a_minute()
        finally:
            self.prober.close()
        exchanges = [
            p.exchange
            for p in self.prober.probes
            if p.exchange is not None and p.number not in self.left_out
        ]
        names = {key_alias(o.key): o.name or key_alias(o.key) for o in self.options.keys}
        if exchanges:
            try:
                result = learn(
                    Recording(self.shown, exchanges, {"base_path": self.base}),
                    names,
                    "probe",
                    trusted=True,
                )
            except InputError:
                result = Calibration(self.shown)
        else:
            result = Calibration(self.shown)
        result.unsettled.extend(self.notes)
        result.unsettled.extend(self.prober.refused)
        return result

    # -- the keys ------------------------------------------------------------

    def _keys(self) -> None:
        """Each key once (its plan, what it has left); a key already spent is waited for."""
        for key in self.keys:
            probe = self.prober.send("plan", "GET", "/pets?limit=1", key=key)
            if probe is None or probe.error is not None:
                continue
            if probe.status in (403, 429, 503):
                # Spent (or banned) before calibration began: not what the key is like.
                self.left_out.add(probe.number)
                probe = self._wait_out(key, probe)
            if probe is None or probe.status in (401, 403, 429, 503) or probe.status >= 500:
                if probe is not None and probe.status == 401:
                    self.notes.append(f"{key_alias(key)}: the target refused the key (401)")
                if probe is not None:
                    self.left_out.add(probe.number)
                continue
            self.usable.append(key)
            body = probe.exchange.response_body if probe.exchange else b""
            pets = json_of(body)
            if isinstance(pets, list) and pets and isinstance(pets[0], dict):
                pet_id = pets[0].get("id")
                self.pet_id = pet_id if isinstance(pet_id, int) else self.pet_id

    def _wait_out(self, key: str, probe: Probe) -> Probe | None:
        """A key refused at its first probe: its allowance was spent before calibration."""
        alias = key_alias(key)
        wait = _seconds(probe.header("retry-after"))
        if wait is None or wait > self.options.wait:
            self.notes.append(
                f"{alias}: its allowance was spent (or it was banned) when calibration began "
                f"({probe.status} at its first probe; Retry-After "
                f"{probe.header('retry-after')}): left out, not waited for "
                f"(--wait {self.options.wait:g})"
            )
            return None
        self.notes.append(
            f"{alias}: its allowance was spent when calibration began: waited {wait:g} s"
        )
        time.sleep(wait)
        self.prober.remaining.pop(alias, None)
        return self.prober.send("plan, after the wait", "GET", "/pets?limit=1", key=key)

    @property
    def key(self) -> str:
        """The key the probes use: the one with the most left (the rate-limit probe's aside)."""
        spare = [k for k in self.usable if k != self._spent_key] or self.usable
        return max(spare, key=lambda k: self.prober.remaining.get(key_alias(k), 10**9))

    # -- with the opt-ins, first ----------------------------------------------

    def _opt_ins(self) -> None:
        if self.options.allow_rate_limit:
            # The key with the least left spends its minute, last; its budget is kept aside.
            candidates = [k for k in self.usable if key_alias(k) in self.prober.remaining]
            if candidates:
                self._spent_key = min(candidates, key=lambda k: self.prober.remaining[key_alias(k)])
        if not self.options.allow_writes:
            for setting in (
                "behaviour.default_status",
                "behaviour.unknown_fields",
                "behaviour.max_body_bytes",
                "behaviour.error_codes.invalid_body",
            ):
                if self.open(setting):
                    self.notes.append(f"{setting}: needs --allow-writes (a POST)")
            return
        self._writes()

    def _reserve(self) -> int:
        """Budget kept aside for the rate-limit probe."""
        if self._spent_key is None:
            return 0
        return self.prober.remaining.get(key_alias(self._spent_key), 0) + 1

    def _send(self, what: str, method: str, path: str, **kwargs: Any) -> Probe | None:
        reserve = self._reserve()
        if reserve and self.prober.left - reserve <= 0 and not kwargs.get("spend"):
            self.prober.refused.append(
                f"{what}: not sent, the rest of the budget is kept for the rate-limit probe"
            )
            return None
        return self.prober.send(what, method, path, **kwargs)

    def _writes(self) -> None:
        key = self.key
        json_type = "application/json"
        if self.open("behaviour.default_status") or self.open("behaviour.location"):
            self._send(
                "create a pet", "POST", "/pets", key=key, content_type=json_type,
                body=json.dumps({"name": "mockstore-calibrate", "categoryId": 1}).encode(),
            )  # fmt: skip
        if self.open("behaviour.unknown_fields"):
            self._send(
                "create a pet with an unknown field", "POST", "/pets", key=key,
                content_type=json_type,
                body=json.dumps(
                    {"name": "mockstore-calibrate", "categoryId": 1, "calibrationProbe": True}
                ).encode(),
            )  # fmt: skip
        for condition, body, media in (
            ("invalid_body", b'{"name": 7}', json_type),
            ("malformed_json", b'{"name": ', json_type),
            ("missing_body", b"", json_type),
            ("unsupported_media_type", b'{"name": "x", "categoryId": 1}', "text/plain"),
        ):
            if self.open(f"behaviour.error_codes.{condition}"):
                self._send(
                    condition.replace("_", " "), "POST", "/pets", key=key, body=body,
                    content_type=media,
                )  # fmt: skip
        if self.open("behaviour.max_body_bytes") or "behaviour.max_body_bytes" in (
            self.known.estimated
        ):
            # Settled by a guess within what the recording shows: measured to the byte.
            self._largest_body(key)

    def _largest_body(self, key: str) -> None:
        """The largest body read: bodies no service can store (a NewPet without its
        categoryId), growing, then bisected. One answered like the invalid-body probe
        was read whole; any other refusal (413, or the provider's own) is for its size."""
        invalid = next(
            (p for p in self.prober.probes if p.what == "invalid body" and p.exchange), None
        )
        if invalid is None:
            invalid = self._send(
                "invalid body", "POST", "/pets", key=key, body=b'{"name": 7}',
                content_type="application/json",
            )  # fmt: skip
        if invalid is None or invalid.exchange is None or not 400 <= invalid.status < 500:
            self.notes.append("behaviour.max_body_bytes: no invalid-body answer to compare with")
            return
        read_whole = (invalid.status, _code(invalid))

        def body_of(size: int) -> Probe | None:
            filler = b"a" * max(0, size - len(b'{"name":""}'))
            for _ in range(BODY_SEND_TRIES):
                probe = self._send(
                    f"body of {size} bytes", "POST", "/pets", key=key,
                    content_type="application/json", body=b'{"name":"' + filler + b'"}',
                )  # fmt: skip
                # A server that answers a body too large before reading it may close
                # the connection while the body is still being sent: the answer is
                # lost to a reset (seen: ReadError, connection reset by peer, on a
                # 64 KiB body at load 15), a race the next try usually wins.
                if probe is None or probe.error is None:
                    break
            if probe is not None and probe.exchange is not None:
                whole = (probe.status, _code(probe)) == read_whole
                # What calibrate knows its own probe meant, for the learner.
                probe.exchange.extra["calibrate_condition"] = (
                    "invalid_body" if whole else "payload_too_large"
                )
            return probe

        def too_large(probe: Probe) -> bool:
            return probe.exchange is not None and (
                probe.exchange.extra.get("calibrate_condition") == "payload_too_large"
            )

        accepted, refused_at = 0, None
        size = BODY_SEARCH_START
        while size <= BODY_SEARCH_CAP:
            probe = body_of(size)
            if probe is None or probe.error is not None:
                return
            if too_large(probe):
                refused_at = size
                break
            accepted = size
            size *= 4
        while refused_at is not None and refused_at - accepted > 1:
            middle = (accepted + refused_at) // 2
            probe = body_of(middle)
            if probe is None or probe.error is not None:
                return
            if too_large(probe):
                refused_at = middle
            else:
                accepted = middle

    # -- without a key -------------------------------------------------------

    def _without_key(self) -> None:
        """The probes without a valid key, while the anonymous allowance is not refused."""
        probes: list[tuple[str, str, str | None]] = []
        if self.open("behaviour.error_codes.missing_key") or self.known.anonymous is None:
            probes.append(("missing key", "/pets", None))
        if self.open("behaviour.path_check"):
            probes.append(("unknown path, no key", "/mockstore-calibrate-nowhere", None))
        if self.open("behaviour.error_codes.malformed_authorization"):
            probes.append(("malformed Authorization", "/pets", "Basic Y2FsaWJyYXRlOm1l"))
        if self.open("behaviour.error_codes.unknown_key"):
            token = f"Bearer mockstore-calibrate-{secrets.token_hex(8)}"
            probes.append(("unknown key", "/pets", token))
        for what, path, authorization in probes:
            probe = self._send(what, "GET", path, authorization=authorization)
            if (
                probe is not None
                and probe.status in (403, 429, 503)
                and (probe.header("x-ratelimit-remaining") in (None, "0"))
            ):
                # Spent or banned before calibration began (a recorded session's doing):
                # what it answers now says nothing of its refusals.
                self.left_out.add(probe.number)
                self.notes.append(
                    "callers without a key: their allowance was spent (or they were banned) "
                    f"when calibration began ({probe.status}); their refusals are not probed"
                )
                return

    # -- refusals and reads, with a key ---------------------------------------

    def _refusals(self) -> None:
        key = self.key
        for condition, path in (
            ("bad_limit", "/pets?limit=0"),
            ("limit_above_maximum", "/pets?limit=101"),
            ("bad_status_filter", "/pets?status=mockstore-calibrate"),
            ("bad_pet_id", "/pets/not-a-number"),
            ("pet_not_found", f"/pets/{UNKNOWN_PET}"),
            ("unknown_path", "/mockstore-calibrate-nowhere"),
        ):
            setting = (
                "behaviour.limit_above_maximum"
                if condition == "limit_above_maximum"
                else f"behaviour.error_codes.{condition}"
            )
            if self.open(setting):
                self._send(condition.replace("_", " "), "GET", path, key=key)

    def _reads(self) -> None:
        key = self.key
        if self.pet_id is not None and (
            self.open("behaviour.deprecation_format") or self.open("behaviour.deprecated_since")
        ):
            self._send("deprecated getPet", "GET", f"/pets/{self.pet_id}", key=key)
        if self.open("behaviour.serve_head"):
            self._send("HEAD listPets", "HEAD", "/pets?limit=1", key=key)
            if self.pet_id is not None:
                self._send("HEAD getPet", "HEAD", f"/pets/{self.pet_id}", key=key)
            self._send("HEAD listOrders", "HEAD", "/store/orders", key=key)
        if not self.known.routes and self.open("behaviour.error_codes.not_implemented"):
            self._send("listOrders", "GET", "/store/orders", key=key)
        self._collection(key)

    def _collection(self, key: str) -> None:
        """Read-only: a listing's pages (two in a row, by its own Link), a filter in
        capitals, a limit written 1.0; what the recording leaves open of ``collections``."""
        if self.open("collections.pagination.style") and self.open(
            "collections.pagination.total_header"
        ):
            first = self._send("a page of one", "GET", "/pets?limit=1", key=key)
            for step in ("the page after it", "the page after that"):
                following = _next_page(first, self.base)
                if following is None:
                    break
                first = self._send(step, "GET", following, key=key)
        if self.open("collections.filters.status_case"):
            self._send("a status filter in capitals", "GET", "/pets?status=SOLD&limit=1", key=key)
        if self.open("collections.numbers.query"):
            self._send("a limit written 1.0", "GET", "/pets?limit=1.0", key=key)

    def _spend_a_minute(self) -> None:
        """Spend the minute of the key with the least left; its first 429 ends it."""
        if not self.open("behaviour.error_codes.rate_limited") and not self.open(
            "behaviour.retry_after"
        ):
            return
        key = self._spent_key
        if key is None:
            self.notes.append("the 429: no key reported its remaining allowance")
            return
        alias = key_alias(key)
        left = self.prober.remaining.get(alias, 0)
        if left + 1 > self.prober.left:
            self.notes.append(
                f"the 429: {alias} has {left} requests left this window, more than the "
                f"{self.prober.left} left of the budget (raise --budget)"
            )
            return
        for _ in range(left + 2):
            probe = self.prober.send(
                "spend the allowance", "GET", "/pets?limit=1", key=key, spend=True
            )
            if probe is None or probe.error is not None or probe.status == 429:
                return
            if probe.status != 200:
                return


def _code(probe: Probe) -> str | None:
    body = json_of(probe.exchange.response_body) if probe.exchange else None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None


def _seconds(value: str | None) -> float | None:
    """A Retry-After as seconds from now."""
    if value is None:
        return None
    if retry_after_kind(value) == "seconds":
        return float(value.strip())
    instant = http_date(value)
    return max(0.0, instant - time.time()) if instant is not None else None


def key_names(options: tuple[KeyOption, ...]) -> dict[str, str]:
    """Each key's alias and the name the scenario gives it (its alias when none)."""
    names = {}
    for option in options:
        alias = option.key if is_alias(option.key) else key_alias(option.key)
        names[alias] = option.name or alias
    return names
