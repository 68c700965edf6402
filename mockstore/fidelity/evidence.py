"""What a recording shows: each exchange's request, and the condition its answer stands for.

``mockstore calibrate --from`` learns a provider's settings from a recording,
and ``mockstore drift`` names the setting behind each difference: both need to
know, for each recorded answer, which of the spec's conditions it answers (a
missing key, a bad ``limit``, a spent allowance, a ban, ...). The request alone
says which conditions it meets (``conditions.classify``); the answer says which
one the provider chose; and some answers can only be told apart across the
recording: a ban is a run of refusals whose code (or status) changes while the
caller keeps sending.

``read`` turns a recording into ``Seen`` exchanges, each with its ``Facts``, its
bucket (the key's alias, or the client address for a caller without a valid
key) and the recorded ``condition`` (None for an answer that refuses nothing,
``unexplained`` for a refusal no rule explains). A condition is given only on
evidence of that condition: a ``429`` never stands for a missing key.

Pure functions of a recording: no HTTP, no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mockstore.fidelity.conditions import Facts, classify, json_of
from mockstore.fidelity.formats import http_date
from mockstore.fidelity.rebase import Base, base_of, own_base, relative_to_own
from mockstore.fidelity.recording import Recording
from mockstore.fidelity.replayer import bearer
from mockstore.keys import is_alias, key_alias
from mockstore.reports.har import Recorded
from mockstore.routing import Router
from mockstore.schemas import errors_of, operations, schema_validator

_ROUTER = Router(operations().values())
# Exchanges the upstream never answered (the recorder did, or the client left).
NOT_ANSWERED = frozenset(
    {
        "upstream_refused",
        "upstream_timeout",
        "upstream_tls_error",
        "upstream_error",
        "client_disconnected",
        "request_timeout",
        "upstream_broke",
        "aborted",
    }
)
AUTH_CONDITIONS = {
    "missing": "missing_key",
    "malformed": "malformed_authorization",
    "bearer": "unknown_key",
}
# Statuses a provider may give a banned key (the spec names none).
BAN_STATUSES = frozenset({403, 429, 503})
# Answers about the caller (its key, its allowance), not about what it asked.
CALLER_STATUSES = frozenset({401, *BAN_STATUSES})


@dataclass
class Seen:
    """One recorded exchange, classified."""

    index: int  # 0-based, in the recording
    item: Recorded
    path: str  # relative to the recording's base path
    facts: Facts
    bucket: str  # "key-xxxxxxxx" or "address 127.0.0.1"
    keyed: bool  # the caller sent a bearer token the upstream accepted (or may have)
    headers: dict[str, str] = field(default_factory=dict)  # lower-case, first value
    body: Any = None
    condition: str | None = None
    run_position: int = 0  # 1-based place in a run of refusals for the allowance
    # In a run: the allowance's refusals before the ban (None: the run ended unbanned).
    ban_after: int | None = None
    run_length: int = 0  # the refusals of the allowance in its run (before any ban)
    run_start: int = -1  # the index of its run's first refusal (-1: not in a run)
    label: str = "recorded"  # how a citation names it: "recorded #3", or "probe #3"

    @property
    def status(self) -> int:
        return self.item.status

    @property
    def header_offset(self) -> float:
        """Seconds this answer's instants (resets, dates) were written ahead of its service time.

        A real provider's service time is the wall's: 0. A recording of mockstore on a
        scenario clock has both times; its headers are on the wall clock
        (``clock.headers: wall``, the default) or on the scenario's, and its ``Date``
        tells which: the nearer of the two.
        """
        item = self.item
        offset = item.wall - item.time
        if not offset:
            return 0.0
        date = http_date(self.headers.get("date", ""))
        if date is not None and abs(date - item.time) < abs(date - item.wall):
            return 0.0
        return offset

    @property
    def operation(self) -> str | None:
        """The operation that answered: none for a method the provider does not serve
        (HEAD where it is refused), whatever operation the path names."""
        return None if self.condition == "method_not_allowed" else self.facts.operation

    @property
    def code(self) -> str | None:
        code = self.body.get("code") if isinstance(self.body, dict) else None
        return code if isinstance(code, str) else None

    @property
    def is_error(self) -> bool:
        """An Error body: code, message, and the HTTP status."""
        body = self.body
        return (
            isinstance(body, dict)
            and isinstance(body.get("code"), str)
            and isinstance(body.get("message"), str)
            and body.get("status") == self.status
        )

    def describe(self) -> str:
        item = self.item
        return f"#{self.index + 1} {item.method} {item.path}" + (
            f"?{item.query}" if item.query else ""
        )


# Headers whose URLs on the service's own address are read relative to it (``rebase``):
# a recording's upstream and a mock on any host and port then write the same. Location
# is read as sent: whether it is a path or a URL is a setting (behaviour.location).
RELATIVE_HEADERS = frozenset({"link", "content-location"})


def upstream_base(recording: Recording) -> Base | None:
    """Where the recorded service's own URLs start: the upstream ``mockstore record``
    recorded (``recorded_from``), or None for a recording made elsewhere."""
    recorded_from = recording.meta.get("recorded_from")
    return base_of(recorded_from) if isinstance(recorded_from, str) else None


def request_base(item: Recorded) -> Base | None:
    """The address the client of ``item`` called (its ``Host``): where a mock answering
    it writes its own URLs."""
    host = next((value for name, value in item.headers if name.lower() == "host"), None)
    return own_base("http", host)


def recorded_base(recording: Recording) -> str | None:
    """The base path the recording was made under: its own word, else what its paths show.

    None when no path of the recording names an operation under any prefix.
    """
    stated = recording.meta.get("base_path")
    if isinstance(stated, str) and stated.startswith("/"):
        stated = stated.rstrip("/")
        # Its word, where its paths bear it out (a recording rewritten since, or a tool's
        # default, says one base and shows another: the paths are what was sent).
        if any(item.path.startswith(stated + "/") for item in recording.exchanges):
            return stated
    prefixes: Counter[str] = Counter()
    for item in recording.exchanges:
        segments = item.path.split("/")
        for cut in range(1, len(segments)):
            prefix = "/".join(segments[:cut])
            if (
                _ROUTER.resolve("GET", item.path[len(prefix) :]).allow
                or _ROUTER.resolve(item.method, item.path[len(prefix) :]).operation
            ):
                prefixes[prefix] += 1
                break
    if not prefixes:
        return None
    return prefixes.most_common(1)[0][0]


def rebased(recording: Recording, base: str) -> tuple[list[str], list[str]]:
    """Each exchange's path as if recorded under ``base``, and the warning that says so.

    A recording made under another base path (``/api/v3/pets`` against a scenario's
    ``/v1``) is compared and replayed as if under the scenario's; one whose paths name
    no operation under any base path keeps its paths as they are.
    """
    found = recorded_base(recording) if recording.exchanges else base
    paths = [item.path for item in recording.exchanges]
    if found is None or found == base:
        return paths, []
    warning = (
        f"the recording was made under the base path {found or '/'}; its paths are "
        f"compared as if under the scenario's, {base or '/'}"
    )
    return [base + p[len(found) :] if p.startswith(found + "/") else p for p in paths], [warning]


def read(
    recording: Recording,
    base: str,
    known_keys: frozenset[str] = frozenset(),
    trusted: bool = False,
) -> list[Seen]:
    """Every answered exchange of ``recording`` (paths under ``base``), classified.

    ``known_keys`` are aliases known to be valid (the scenario's): a bearer token
    the upstream refused with 401 is otherwise an unknown key. ``trusted``: the
    recording is calibrate's own, whose exchanges may say what they meant
    (``calibrate_condition``: a body probe refused for its size).
    """
    seen: list[Seen] = []
    recorded_from = upstream_base(recording)
    for index, item in enumerate(recording.exchanges):
        if item.outcome != "response" or item.status == 0:
            continue
        relative = item.path[len(base) :] if item.path.startswith(base + "/") else item.path
        declared = _declared_size(item)
        facts = classify(item.method, relative, item.query, item.headers, item.body, declared)
        if (
            facts.operation is None
            and 200 <= item.status < 300
            and len(relative) > 1
            and relative.endswith("/")
        ):
            # A path with a trailing slash the provider served as without it
            # (http.trailing_slash: serve): the operation it answered.
            bare = classify(
                item.method, relative.rstrip("/"), item.query, item.headers, item.body, declared
            )
            if bare.operation is not None:
                facts = bare
        token = bearer(item.headers) if facts.auth == "bearer" else None
        alias = (token if is_alias(token) else key_alias(token)) if token else None
        headers: dict[str, str] = {}
        own = recorded_from or request_base(item)
        for name, value in item.response_headers:
            lowered = name.lower()
            if lowered in RELATIVE_HEADERS:
                value = relative_to_own(lowered, value, own)
            headers.setdefault(lowered, value)
        body = json_of(item.response_body) if item.response_body else None
        keyed = alias is not None and (alias in known_keys or item.status != 401)
        bucket = alias if keyed and alias else f"address {item.client}"
        seen.append(Seen(index, item, relative, facts, bucket, keyed, headers, body))
    _conditions(seen)
    if trusted:
        for s in seen:
            meant = s.item.extra.get("calibrate_condition")
            if isinstance(meant, str):
                s.condition = meant
    return seen


def pets_before(recorded: list[Recorded], operation_of: list[str | None]) -> dict[int, dict]:
    """Pets the recording shows existed before it: listed or fetched, never created in it."""
    created = set()
    for item, operation in zip(recorded, operation_of, strict=True):
        if operation == "createPet" and 200 <= item.status < 300:
            body = json_of(item.response_body)
            if isinstance(body, dict) and isinstance(body.get("id"), int):
                created.add(body["id"])
    validator = schema_validator("Pet")
    seen: dict[int, dict] = {}
    for item, operation in zip(recorded, operation_of, strict=True):
        if not 200 <= item.status < 300 or item.response_truncated:
            continue
        body = json_of(item.response_body)
        if operation == "listPets" and isinstance(body, list):
            found = body
        elif operation == "getPet" and isinstance(body, dict):
            found = [body]
        else:
            continue
        for pet in found:
            if not isinstance(pet, dict) or not isinstance(pet.get("id"), int):
                continue
            if pet["id"] in created or pet["id"] in seen:
                continue
            if next(errors_of(validator, pet), None) is None:
                seen[pet["id"]] = pet
    return seen


def _declared_size(item: Recorded) -> int | None:
    for name, value in item.headers:
        if name.lower() == "content-length" and value.strip().isdigit():
            return int(value)
    return None


def _conditions(seen: list[Seen]) -> None:
    """Each exchange's recorded condition (see the module's docstring)."""
    # Keys the upstream accepted somewhere (an answer about the request, not about the
    # caller): a 401 to them later is not "unknown key". A token only ever refused, for
    # its key or its allowance, is a caller without a valid key.
    accepted = {s.bucket for s in seen if s.keyed and s.status not in CALLER_STATUSES}
    for s in seen:
        s.keyed = s.keyed and s.bucket in accepted
        if not s.keyed and s.facts.auth == "bearer":
            s.bucket = f"address {s.item.client}"
    _rate_conditions(seen)
    fetched = frozenset(s.path for s in seen if s.item.method == "GET" and s.status == 200)
    for s in seen:
        if s.condition is not None:
            continue
        s.condition = _condition(s, fetched)
    _constraints(seen)
    _silent_maintenance(seen)


def _silent_maintenance(seen: list[Seen]) -> None:
    """A maintenance page that says nothing of its end (no ``Retry-After``): one 5xx Error,
    the same status and code, answered to requests of different methods on one path (a
    GET and an OPTIONS, say): a refusal of the path's state, not of what either asked."""
    pages: dict[tuple[str, int, str | None], set[str]] = {}
    for s in seen:
        if s.status >= 500 and s.is_error and "retry-after" not in s.headers:
            pages.setdefault((s.path, s.status, s.code), set()).add(s.item.method)
    for s in seen:
        if len(pages.get((s.path, s.status, s.code), ())) > 1:
            s.condition = "maintenance"


def _rate_conditions(seen: list[Seen]) -> None:
    """Refusals for the caller's allowance: 429s, and a ban's answers, bucket by bucket.

    In a run of refusals to one bucket (no admitted request between them), the
    first is the allowance's (``rate_limited``). Where the code or the status
    changes during the run, the caller was banned from there on, until the run
    ends: the ban is ``key_banned``, whatever status the provider gives it.
    """
    runs: dict[str, tuple[str | None, int] | None] = {}  # bucket -> (code, status) of the run
    banned: dict[str, bool] = {}
    length: dict[str, int] = {}
    starts: dict[str, int] = {}
    refused = refusal_status(seen)
    # The codes of refusals that can only be the allowance's (a request otherwise fine):
    # the same code on a request with a problem of its own is the allowance's too.
    codes = {s.code for s in seen if s.status == refused and _spent(s) and s.facts.problem is None}
    openers = _run_openers(seen, refused, codes)
    limits: dict[str, str | None] = {}  # bucket -> X-RateLimit-Limit of its run's opener
    for s in seen:
        run = runs.get(s.bucket)
        if not _rate_refusal(s, run, refused, codes):
            runs[s.bucket] = None
            banned[s.bucket] = False
            length[s.bucket] = 0
            continue
        length[s.bucket] = s.run_position = length.get(s.bucket, 0) + 1
        if s.run_position == 1:
            starts[s.bucket] = s.index
        s.run_start = starts[s.bucket]
        shape = (s.code, s.status)
        limit = s.headers.get("x-ratelimit-limit")
        if run is None:
            runs[s.bucket] = shape
            limits[s.bucket] = limit
            banned[s.bucket] = s.status != refused and shape not in openers
            s.condition = "key_banned" if banned[s.bucket] else "rate_limited"
            continue
        other_window = limit is not None and limits.get(s.bucket) not in (None, limit)
        if banned.get(s.bucket) or (shape != run and shape not in openers and not other_window):
            # A shape that opens a run somewhere, or whose figures describe another
            # window than the run's first refusal did, is a window's own refusal
            # (stacked limits: a burst's 503 beside a quota's 429), not a ban: a ban
            # comes only after refusals, and stays.
            banned[s.bucket] = True
            s.condition = "key_banned"
        else:
            s.condition = "rate_limited"
    _run_figures(seen)


def _run_openers(
    seen: list[Seen], refused: int, codes: set[str | None]
) -> frozenset[tuple[str | None, int]]:
    """The (code, status) shapes of refusals that open a run (a caller's first refusal,
    or the first after a request it let through): each a window's own refusal, where the
    provider stacks limits (a burst's 503 beside a quota's 429), never a ban's, which
    comes only after refusals."""
    openers: set[tuple[str | None, int]] = set()
    in_run: set[str] = set()
    for s in seen:
        if not _rate_refusal(s, (None, 0) if s.bucket in in_run else None, refused, codes):
            in_run.discard(s.bucket)
        elif s.bucket not in in_run:
            in_run.add(s.bucket)
            openers.add((s.code, s.status))
    return frozenset(openers)


def _run_figures(seen: list[Seen]) -> None:
    """Each run's length before its ban, and whether a ban ended it, on every member."""
    runs: dict[str, list[Seen]] = {}
    finished: list[list[Seen]] = []
    for s in seen:
        if s.run_position == 1 and s.bucket in runs:
            finished.append(runs.pop(s.bucket))
        if s.run_position:
            runs.setdefault(s.bucket, []).append(s)
        elif s.bucket in runs:
            finished.append(runs.pop(s.bucket))
    finished.extend(runs.values())
    for run in finished:
        limited = sum(1 for s in run if s.condition == "rate_limited")
        banned = any(s.condition == "key_banned" for s in run)
        for s in run:
            s.run_length = limited
            s.ban_after = limited if banned else None


def refusal_status(seen: list[Seen]) -> int:
    """The status the provider refuses a spent allowance with: the one that starts most
    callers' runs of refusals (a 429, or a 403 or 503 that says no request is left to a
    request otherwise fine: GitHub's secondary limits, nginx); the spec's 429 when none
    was refused."""
    # A run of refusals starts with the allowance's (a ban, if any, comes after it).
    first: dict[str, int] = {}
    for s in seen:
        if s.status == 429 or (s.status in BAN_STATUSES and _spent(s) and s.facts.problem is None):
            first.setdefault(s.bucket, s.status)
    spent = Counter(first.values())
    return spent.most_common(1)[0][0] if spent else 429


def _spent(s: Seen) -> bool:
    """An answer that says no request is left."""
    return s.headers.get("x-ratelimit-remaining", "").strip() == "0"


def _rate_refusal(
    s: Seen,
    run: tuple[str | None, int] | None,
    refused: int = 429,
    codes: frozenset[str | None] | set[str | None] = frozenset(),
) -> bool:
    """Whether ``s`` refuses its caller's allowance (or a ban) rather than the request."""
    if s.status == 429:
        return True
    # A 403 or 503 that says nothing is left: the allowance's, unless the request has a
    # problem of its own and the answer is not worded as the allowance's refusals are.
    worded = s.facts.problem is None or "retry-after" in s.headers or s.code in codes
    if s.status == refused and _spent(s) and worded:
        return True
    if s.status not in BAN_STATUSES or run is None:
        return False
    # A 403 or 503 during a run of 429s: the ban, unless the caller's window came back
    # (its answers then say requests are left) and this refuses the request itself.
    remaining = s.headers.get("x-ratelimit-remaining", "").strip()
    return remaining in ("", "0") or s.facts.problem is None


def _condition(s: Seen, fetched: frozenset[str] = frozenset()) -> str | None:
    facts, status = s.facts, s.status
    if s.item.method == "HEAD" and (
        status == 405
        or (status == 404 and (facts.operation in ("listPets", "listOrders") or s.path in fetched))
    ):
        # HEAD not served, answered 405 or as the provider answers a method it does not
        # serve: a path its GET answered is not missing.
        return "method_not_allowed"
    if status < 400:
        return None
    if status == 401:
        return AUTH_CONDITIONS[facts.auth] if not s.keyed else "unknown_key"
    if (
        s.item.method == "OPTIONS"
        and status in (400, 403)
        and s.is_error
        and any(name.lower() == "access-control-request-method" for name, _ in s.item.headers)
    ):
        return "cors_rejected"  # a preflight refused (http.cors.rejected_status)
    if status >= 500 and "retry-after" in s.headers and s.is_error:
        # A refusal of the service's own state, not of the request: a maintenance window
        # (scenario ``maintenance``; calibrate's ``learn_maintenance``).
        return "maintenance"
    if facts.route is not None:
        return facts.route
    if status == 413:
        return "payload_too_large"
    if facts.operation == "listOrders":
        return "not_implemented"
    if status == 507 and facts.operation == "createPet":
        return "store_full"
    problems = facts.problems
    if facts.operation == "getPet" and not problems and status in (404, 410):
        return "pet_not_found" if status == 404 else "gone"
    if problems:
        # Where the request meets several, mockstore's order is the best guess.
        return problems[0]
    if facts.operation == "listPets" and status in (400, 422):
        # A listing refused for nothing mockstore's query checks find: the position it
        # names, if it names one (a cursor or an offset the provider did not write).
        for name, condition in (("cursor", "bad_cursor"), ("offset", "bad_offset")):
            if name in facts.query:
                return condition
    if facts.operation == "createPet" and status in (400, 422) and facts.fractions:
        # 7.0 as an integer: valid by the schema, refused by a provider that reads
        # numbers strictly (collections.numbers.body).
        return "invalid_body"
    if facts.operation == "createPet" and status in (400, 413, 422):
        # A valid NewPet refused: its size, or one of the provider's own limits on its
        # fields (``_constraints`` tells them apart across the recording).
        return "payload_too_large"
    return "unexplained"


_SMALL_BODY = 512


def _constraints(seen: list[Seen]) -> None:
    """A valid NewPet refused not for its size but for a limit of the provider's on its
    fields (collections.constraints): a larger body was accepted, or the refusal differs
    (status or code) from the one the largest body refused got."""
    accepted = [
        s.facts.body_size
        for s in seen
        if s.facts.operation == "createPet" and 200 <= s.status < 300
    ]
    largest = max(accepted, default=-1)
    guessed = [s for s in seen if s.condition == "payload_too_large" and s.status != 413]
    sized = [s for s in seen if s.condition == "payload_too_large"]
    reference = max(sized, key=lambda s: s.facts.body_size, default=None)
    for s in guessed:
        unlike = reference is not None and (s.status, s.code) != (reference.status, reference.code)
        # With no body refused for its size to compare with (its answer lost to a reset
        # connection, say, or the largest refused a small one itself), a small one is taken
        # for a field's limit: no provider limits bodies to a few hundred bytes.
        small = (
            reference is None or reference.facts.body_size < _SMALL_BODY
        ) and s.facts.body_size < _SMALL_BODY
        if s.facts.body_size <= largest or unlike or small:
            s.condition = "field_constraint"
