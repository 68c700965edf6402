"""``mockstore calibrate --from FILE.har``: every setting a recording shows, learned from it.

A recording of a client against the real service already answers most of the
questions calibrate would ask, without sending anything. Each exchange is
classified first (``evidence``: the conditions its request meets and the one
its answer stands for), and each setting is then learned only from the answers
of its own condition: a ``429`` teaches the allowance and ``Retry-After``,
never the code of a missing key; a ban is told from a rate limit by the run of
refusals it ends. Every setting cites the exchanges that settled it
(``recorded #12: GET /v1/pets?limit=0 (key-31872a58) -> 422, code "..."``).

What the recording shows but the scenario format cannot express is noted;
what it does not show stays open, for the probes (``--target``) to settle.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from mockstore.errors import CONDITIONS, ERROR_CODES, VALIDATION_CONDITIONS
from mockstore.fidelity import attribution
from mockstore.fidelity.calibrate.collections import learn_collections, page_refusals
from mockstore.fidelity.calibrate.learn_errors import computed_field, learn_messages
from mockstore.fidelity.calibrate.learn_http import HttpLearner
from mockstore.fidelity.calibrate.learn_latency import learn_latency
from mockstore.fidelity.calibrate.learn_maintenance import learn_maintenance
from mockstore.fidelity.calibrate.learn_refusals import learn_refusals
from mockstore.fidelity.calibrate.limiter import learn_limiter
from mockstore.fidelity.calibrate.rate_figures import allowances_shown, other_allowance
from mockstore.fidelity.calibrate.result import Calibration, Key, Setting
from mockstore.fidelity.compare import INFRASTRUCTURE_HEADERS, TRANSPORT_HEADERS, is_infrastructure
from mockstore.fidelity.conditions import json_of
from mockstore.fidelity.evidence import AUTH_CONDITIONS, Seen, pets_before, read, recorded_base
from mockstore.fidelity.formats import (
    deprecation_instant,
    deprecation_kind,
    http_date,
    id_form,
    id_length,
    is_id,
    reset_kind,
    retry_after_kind,
    trace_of,
)
from mockstore.fidelity.recording import InputError, Recording
from mockstore.profile import ETAG_DIGESTS
from mockstore.ratelimit import BUILTIN_PLANS
from mockstore.routing import Router
from mockstore.scenario import scenario_schema
from mockstore.scenario.model import HEAD_OPERATIONS
from mockstore.schemas import object_fields, operations

_ROUTER = Router(operations().values())
_PET_FIELDS = frozenset(object_fields("Pet"))
_NEW_PET_FIELDS = frozenset(object_fields("NewPet"))
_SCHEMA = scenario_schema()
_BEHAVIOUR = _SCHEMA["properties"]["behaviour"]["properties"]
_ID_NAME = re.compile(r"(request|trace|correlation|span)[-_]?id|-id$")
# Answers that refuse the caller's allowance (or a ban) rather than the request.
_RATE = frozenset({"rate_limited", "key_banned"})


def cite(s: Seen, *headers: str, code: bool = True, note: str = "") -> str:
    """``recorded #12: GET /v1/pets?limit=0 (key-31872a58) -> 422, code "..."``."""
    who = (
        s.bucket
        if s.keyed
        else {"missing": "no key", "malformed": "malformed key"}.get(s.facts.auth, "unknown key")
    )
    answer = str(s.status)
    shown = [f"{h}: {s.headers[h.lower()]}" for h in headers if h.lower() in s.headers]
    if shown:
        answer += ", " + ", ".join(shown)
    if code and s.code is not None:
        answer += f', code "{s.code}"'
    text = f"{s.label} {s.describe()} ({who}) -> {answer}"
    return text + (f"; {note}" if note else "")


def learn(
    recording: Recording,
    names: dict[str, str] | None = None,
    label: str = "recorded",
    trusted: bool = False,
) -> Calibration:
    """Everything ``recording`` shows, as settings citing their evidence.

    ``names`` maps a key's alias to the name the scenario gives it (``--key KEY=NAME``);
    ``label`` is how a citation names an exchange (``recorded``, or ``probe`` for the
    answers to calibrate's own probes). Raises ``InputError`` for a recording with no
    exchange of the Pet Store. ``trusted``: the recording is calibrate's own probes.
    """
    base = recorded_base(recording)
    if base is None or not recording.exchanges:
        raise InputError(
            f"{recording.source}: no exchange of it names an operation of the Pet Store: "
            "nothing to learn from"
        )
    seen = read(recording, base, trusted=trusted)
    if not seen:
        raise InputError(
            f"none of the {len(recording.exchanges)} exchange(s) of {recording.source} was "
            "answered by the upstream: nothing to learn from"
        )
    for s in seen:
        s.label = label
    page_refusals(seen)
    target = str(recording.meta.get("upstream") or recording.source)
    result = Calibration(target)
    # Issue 25's sections, each learned by a module of its own (the headers they manage
    # are theirs, not constant headers'); what calibrate's own probes leave open is not
    # noted twice.
    http = HttpLearner(seen, result, base, cite, notes=not trusted)
    learner = _Learner(seen, result, base, names or {}, handled=http.handled_headers())
    learner.run()
    learn_collections(seen, result, cite)
    operations = [_operation(item, base) for item in recording.exchanges]
    learner.store(pets_before(recording.exchanges, operations))
    result.created = {
        s.body["id"]
        for s in seen
        if s.facts.operation == "createPet" and 200 <= s.status < 300
        and isinstance(s.body, dict) and isinstance(s.body.get("id"), int)
    }  # fmt: skip
    http.run()
    learn_maintenance(seen, result, cite)
    if not trusted:
        learn_latency(seen, result, cite)
    learn_messages(seen, result, cite, learner.request_id_names())
    return result


def _operation(item: Any, base: str) -> str | None:
    path = item.path[len(base) :] if item.path.startswith(base + "/") else item.path
    resolved = _ROUTER.resolve(item.method, path)
    return resolved.operation.operation_id if resolved.operation is not None else None


class _Learner:
    def __init__(
        self,
        seen: list[Seen],
        result: Calibration,
        base: str,
        names: dict[str, str],
        handled: frozenset[str] = frozenset(),
    ) -> None:
        self.seen = seen
        self.result = result
        self.base = base
        self.names = names
        self.handled = handled  # response headers another learner settles (learn_http)
        self._day_learned = False  # some bucket's day allowance was shown
        self._described_example: Seen | None = None

    def run(self) -> None:
        self.rate_headers()
        self.plans()
        self.bans()
        # The limiter's windows and forms (its own module): after the plans it replays.
        learn_limiter(self.seen, self.result, cite)
        self.refusals()
        # Stacked limits' own refusals: after refusals(), whose scenario-wide ones they replace.
        learn_refusals(self.seen, self.result, cite)
        self.headers()
        self.deprecation()
        self.semantics()

    # -- rate limits ---------------------------------------------------------

    def _window(self, s: Seen) -> tuple[str, float, int] | None:
        """(minute | day, the window's end, its limit) that an answer's headers state."""
        limit = s.headers.get("x-ratelimit-limit", "")
        reset = s.headers.get("x-ratelimit-reset", "")
        kind = reset_kind(reset)
        if not limit.isdigit() or kind == "invalid":
            return None
        # The recorded instant (to the millisecond), not Date (to the second): the service's
        # time, which a recording of mockstore on a scenario clock keeps apart from the wall's.
        now = s.item.time
        value = float(reset)
        # An instant on the headers' clock, brought back to the service's.
        offset = s.header_offset
        end = {"epoch": value - offset, "epoch-ms": value / 1000 - offset, "delta": now + value}[
            kind
        ]
        left = end - now
        # A minute ends within a minute (two for a sliding counter, and rounding); a day's
        # end is far off but near midnight, which no recording of a minute's traffic
        # tells apart: a minute.
        return ("minute" if left <= 125 else "day"), end, int(limit)

    def rate_headers(self) -> None:
        result = self.result
        resets = [
            (s, reset_kind(s.headers["x-ratelimit-reset"]))
            for s in self.seen
            if "x-ratelimit-reset" in s.headers
        ]
        kinds = Counter(kind for _, kind in resets if kind != "invalid")
        if kinds:
            kind, _ = kinds.most_common(1)[0]
            first = next(s for s, k in resets if k == kind)
            result.set(
                "behaviour.ratelimit_reset",
                kind,
                cite(
                    first,
                    "X-RateLimit-Reset",
                    code=False,
                    note=f"{kind}, in {kinds[kind]} answer(s)",
                ),
            )
        if any(k == "invalid" for _, k in resets):
            bad = next(s for s, k in resets if k == "invalid")
            result.cannot(
                "X-RateLimit-Reset is neither a Unix time nor seconds: "
                + cite(bad, "X-RateLimit-Reset", code=False)
            )
        draft = [s for s in self.seen if "ratelimit-policy" in s.headers]
        if self.seen:
            shown = draft[0] if draft else self.seen[0]
            result.set(
                "behaviour.ratelimit_draft_headers",
                bool(draft),
                cite(
                    shown,
                    "RateLimit-Policy",
                    code=False,
                    note="" if draft else "no RateLimit-Policy",
                ),
            )
        # Windows: aligned to the clock, or from each bucket's first request.
        unaligned = None
        aligned = None
        for s in self.seen:
            if s.condition in _RATE:
                continue
            window = self._window(s)
            if window is None:
                continue
            name, end, _ = window
            length = 60 if name == "minute" else 86_400
            tolerance = 1.0 if kinds.get("delta") else 0.001
            offset = end % length
            if min(offset, length - offset) > tolerance:
                unaligned = unaligned or (s, name)
            else:
                aligned = aligned or (s, name)
        if unaligned is not None:
            s, name = unaligned
            result.set(
                "behaviour.ratelimit_windows",
                "first_request",
                cite(s, "X-RateLimit-Reset", "Date", code=False,
                     note=f"the {name} ends at no multiple of its length"),
            )  # fmt: skip
        elif aligned is not None:
            s, name = aligned
            result.set(
                "behaviour.ratelimit_windows",
                "clock",
                cite(s, "X-RateLimit-Reset", code=False, note=f"the {name} ends on the clock's"),
            )
        retry = [
            s for s in self.seen if s.condition == "rate_limited" and "retry-after" in s.headers
        ]
        if retry:
            kind = retry_after_kind(retry[0].headers["retry-after"])
            if kind == "invalid":
                result.cannot("Retry-After is unreadable: " + cite(retry[0], "Retry-After"))
            elif kind != "decimal":  # a decimal is ratelimit.headers' (learn_limiter)
                result.set("behaviour.retry_after", kind, cite(retry[0], "Retry-After"))
        banned = [s for s in self.seen if s.condition == "key_banned"]
        if banned:
            value = banned[0].headers.get("retry-after")
            kind = retry_after_kind(value) if value is not None else "none"
            if kind == "invalid":
                result.cannot(
                    "a ban's Retry-After is unreadable: " + cite(banned[0], "Retry-After")
                )
            elif kind != "decimal":
                same = kind == result.value("behaviour.retry_after", "seconds")
                result.set(
                    "behaviour.retry_after_banned",
                    "same" if same else kind,
                    cite(banned[0], "Retry-After", note="no Retry-After" if value is None else ""),
                )

    def plans(self) -> None:
        result = self.result
        buckets: dict[str, list[Seen]] = {}
        for s in self.seen:
            buckets.setdefault(s.bucket, []).append(s)
        # Per bucket that has a day allowance: the windows its admitted answers show.
        verdicts: dict[str, Seen] = {}
        for bucket, members in buckets.items():
            shown: dict[str, Seen] = {}
            figures = self._plan_of(members, shown)
            if figures is None:
                continue
            (minute, day), evidence = figures
            plan = _plan_value(minute, day)
            if members[0].keyed:
                name = self.names.get(bucket, bucket)
                result.keys.append(Key(name, bucket, plan, evidence))
            elif result.anonymous is None:
                result.anonymous = Setting(plan, evidence)
            if day is not None and shown:
                verdict = "tightest" if len(shown) > 1 else next(iter(shown))
                verdicts.setdefault(verdict, next(iter(shown.values())))
        for alias, name in self.names.items():
            if result.key(alias) is None:
                result.open(f"{name} ({alias}): the recording has no answer to this key")
        # A plan without a day shows its minute whatever the setting: the others decide.
        if "tightest" in verdicts or len(verdicts) > 1:
            describes = "tightest"
        else:
            describes = next(iter(verdicts), None)
        refusals = [
            s for s in self.seen
            if s.condition == "rate_limited"
            and s.headers.get("x-ratelimit-remaining", "0").strip() not in ("0", "")
        ]  # fmt: skip
        if refusals and describes in ("minute", "day"):
            result.set(
                "behaviour.ratelimit_describes_refusals",
                "described",
                cite(refusals[0], "X-RateLimit-Remaining", code=False,
                     note="a 429 that says requests are left describes another window than "
                     "the one that blocks"),
            )  # fmt: skip
        if describes is not None:
            example = verdicts.get(describes) or next(iter(verdicts.values()))
            result.set(
                "behaviour.ratelimit_describes",
                describes,
                cite(example, "X-RateLimit-Limit", "X-RateLimit-Reset", code=False,
                     note=f"X-RateLimit-* describe the {describes} window"),
            )  # fmt: skip

    def _plan_of(
        self, members: list[Seen], shown: dict[str, Seen]
    ) -> tuple[tuple[int, int | None], list[str]] | None:
        """A bucket's (per_minute, per_day or None) as its answers show them, and how.

        ``shown`` gets the windows its admitted answers describe (one example each).
        """
        minute = day = None
        evidence: list[str] = []
        # The draft headers' policies, and Kong's per-window headers, name both allowances.
        shown_by = allowances_shown(members)
        if shown_by is not None:
            (minute, day), example = shown_by
            evidence.append(
                cite(example, "RateLimit-Policy", *_per_window_names(example), code=False)
            )
        for s in members:
            if s.condition == "key_banned":
                continue
            window = self._window(s)
            if window is None:
                continue
            name, _, limit = window
            if s.condition not in _RATE:
                shown.setdefault(name, s)
            if name == "minute" and minute is None:
                minute = limit
                evidence.append(cite(s, "X-RateLimit-Limit", "X-RateLimit-Reset", code=False))
            elif name == "day" and day is None:
                day = limit
                evidence.append(
                    cite(s, "X-RateLimit-Limit", "X-RateLimit-Reset", code=False,
                         note="the day's allowance")
                )  # fmt: skip
        if day is None and minute is not None:  # Kong's per-window limit of another window
            day, shown_by = other_allowance(members, minute)
            evidence.extend([shown_by] if shown_by else [])
        if minute is None and day is not None:
            found = self._minute_from_refusal(members)
            if found is not None:
                minute, shown_by = found
                evidence.append(shown_by)
            else:
                minute = day
                self.result.open(
                    f"{_who(members[0])}: the minute's allowance is never shown nor reached; "
                    f"written as the day's ({day})"
                )
        if minute is None:
            return None
        if day is None:
            self.result.open(
                f"{_who(members[0])}: no day allowance is shown; written as none (per_day absent)"
            )
        return (int(minute), day), evidence

    def _minute_from_refusal(self, members: list[Seen]) -> tuple[int, str] | None:
        """The minute's allowance of a provider that shows only the day: the requests
        admitted in the minute that ended in its first refusal."""
        for index, s in enumerate(members):
            if s.condition != "rate_limited":
                continue
            start = s.item.time - 60
            admitted = [
                m for m in members[:index] if m.item.time > start and m.condition not in _RATE
            ]
            if admitted:
                return len(admitted), cite(
                    s, "Retry-After", note=f"{len(admitted)} admitted in the minute before it"
                )
        return None

    def bans(self) -> None:
        result = self.result
        runs = [s for s in self.seen if s.run_position == 1]
        banned = [s for s in runs if s.ban_after is not None]
        unbanned = [s for s in runs if s.ban_after is None]
        if banned:
            first = banned[0]
            ban = next(s for s in self.seen if s.bucket == first.bucket and s.condition ==
                       "key_banned" and s.index > first.index)  # fmt: skip
            in_a_row = f"banned after {first.ban_after} refusal(s) for the allowance in a row"
            result.set("ban.after_rejections", first.ban_after, cite(ban, note=in_a_row))
            if ban.status != _BAN_DEFAULT_STATUS:
                result.set("ban.status", ban.status, cite(ban))
            duration = self._ban_duration(ban)
            if duration is not None:
                result.set("ban.duration_seconds", duration[0], duration[1])
            unbanned_window = self._unbanned_window(first.ban_after)
            if unbanned_window is not None:
                result.set(
                    "ban.trigger",
                    "consecutive",
                    cite(unbanned_window, note=f"{first.ban_after} refusals within "
                         f"{_BAN_DEFAULT_WITHIN:g} s, across runs, and no ban: only refusals "
                         "in a row ban"),
                )  # fmt: skip
            else:
                result.open(
                    "ban.trigger: within (no refusals across runs in the recording tell "
                    "'within a window' from 'in a row')"
                )
        elif unbanned:
            longest = max(unbanned, key=lambda s: s.run_length)
            if longest.run_length >= _BAN_DEFAULT_AFTER:
                result.set(
                    "ban.after_rejections",
                    longest.run_length + 1,
                    cite(longest, note=f"{longest.run_length} refusals in a row, no ban"),
                )
            result.open("ban: none was seen, so its status and duration keep mockstore's")

    def _unbanned_window(self, threshold: int) -> Seen | None:
        """A refusal that ends ``threshold`` refusals within the default window, across runs
        of one bucket, with no ban after it: the provider counts refusals in a row."""
        by_bucket: dict[str, list[Seen]] = {}
        for s in self.seen:
            by_bucket.setdefault(s.bucket, []).append(s)
        for members in by_bucket.values():
            refusals = [s for s in members if s.condition == "rate_limited"]
            for index, s in enumerate(refusals):
                window = [
                    r for r in refusals[: index + 1]
                    if r.item.time > s.item.time - _BAN_DEFAULT_WITHIN
                ]  # fmt: skip
                runs = {r.run_start for r in window}
                if len(window) < threshold or len(runs) < 2:
                    continue
                after = [m for m in members if m.index > s.index]
                if after and after[0].condition != "key_banned":
                    return s
        return None

    def _ban_duration(self, ban: Seen) -> tuple[int, str] | None:
        """How long a ban lasts: from its start (the refusal before it) to the end it states."""
        previous = [s for s in self.seen if s.bucket == ban.bucket and s.index < ban.index]
        start = previous[-1].item.time if previous else ban.item.time
        value = ban.headers.get("retry-after")
        end = None
        if value is not None and retry_after_kind(value) == "seconds":
            end = ban.item.time + int(value)
        elif value is not None and http_date(value) is not None:
            # An HTTP-date names an instant on the headers' clock: brought back to the service's.
            end = (http_date(value) or 0.0) - ban.header_offset
        window = self._window(ban)
        if window is not None and (
            end is None
            # A reset in milliseconds states the end finer than a Retry-After in whole
            # seconds or an HTTP-date does (each rounded its own way): the finer, where
            # the two tell of the same end.
            or (reset_kind(ban.headers.get("x-ratelimit-reset", "")) == "epoch-ms"
                and abs(window[1] - end) <= 1.0)
        ):  # fmt: skip
            end = window[1]
        if end is None:
            return None
        seconds = max(1, round(end - start))
        return seconds, cite(
            ban, "Retry-After", "X-RateLimit-Reset", note=f"a ban of about {seconds} s"
        )

    # -- refusals ------------------------------------------------------------

    def refusals(self) -> None:
        result = self.result
        by_condition: dict[str, list[Seen]] = {}
        for s in self.seen:
            if s.condition is None or s.condition == "unexplained":
                continue
            if s.item.method == "HEAD":
                continue  # no body, and HEAD's 405 says whether HEAD is served
            by_condition.setdefault(s.condition, []).append(s)
        for s in self.seen:
            if s.condition == "unexplained":
                result.cannot("an answer no rule of calibrate's explains: " + cite(s))
        validation: Counter[int] = Counter()
        for condition, members in by_condition.items():
            if condition in VALIDATION_CONDITIONS:
                validation.update(s.status for s in members)
        chosen_validation = None
        if validation:
            statuses = [status for status in validation if status in (400, 422)]
            if statuses:
                chosen_validation = max(statuses, key=lambda status: (validation[status], status))
                example = next(
                    s for members in by_condition.values() for s in members
                    if s.condition in VALIDATION_CONDITIONS and s.status == chosen_validation
                )  # fmt: skip
                result.set("behaviour.validation_status", chosen_validation, cite(example))
        for condition, members in by_condition.items():
            errors = [s for s in members if s.is_error]
            codes = Counter(s.code for s in errors)
            if not errors:
                result.cannot(f"{condition}: the answer has no Error body: " + cite(members[0]))
            else:
                code, _ = codes.most_common(1)[0]
                first = next(s for s in errors if s.code == code)
                if condition in attribution.ERROR_CODE:
                    result.set(f"behaviour.error_codes.{condition}", code, cite(first))
                if len(codes) > 1:
                    result.cannot(
                        f"{condition} is answered with {len(codes)} codes "
                        f"({', '.join(sorted(str(c) for c in codes))}): "
                        + "; ".join(cite(s) for s in errors[:2])
                    )
            statuses = Counter(s.status for s in members)
            status, _ = statuses.most_common(1)[0]
            first = next(s for s in members if s.status == status)
            if len(statuses) > 1:
                result.cannot(
                    f"{condition} is answered with {len(statuses)} statuses: "
                    + "; ".join(cite(s) for s in members[:2])
                )
            if condition == "key_banned":
                continue  # ban.status
            if condition in VALIDATION_CONDITIONS and chosen_validation:
                own: int | None = chosen_validation
            elif condition in CONDITIONS:
                own = ERROR_CODES[CONDITIONS[condition].code].status
            else:
                own = None
            if condition in attribution.ERROR_STATUS:
                if status != own:
                    result.set(f"behaviour.error_statuses.{condition}", status, cite(first))
                else:
                    result.confirm(f"behaviour.error_statuses.{condition}")
        self._routing(by_condition)
        self._challenges(by_condition)
        self._error_fields()

    def _routing(self, by_condition: dict[str, list[Seen]]) -> None:
        for s in self.seen:
            if s.facts.route is None or (s.facts.auth == "bearer" and s.keyed):
                continue
            if s.condition in _RATE:
                continue
            if s.status == 401:
                self.result.set("behaviour.path_check", "after_auth", cite(s))
                return
            if s.status in (404, 405) or s.condition in ("unknown_path", "method_not_allowed"):
                self.result.set("behaviour.path_check", "before_auth", cite(s))
                return

    def _challenges(self, by_condition: dict[str, list[Seen]]) -> None:
        for condition in AUTH_CONDITIONS.values():
            members = [s for s in by_condition.get(condition, []) if s.status == 401]
            if not members:
                continue
            values = Counter(s.headers.get("www-authenticate") for s in members)
            value, _ = values.most_common(1)[0]
            default = dict(_DEFAULT_CHALLENGES)[condition]
            if value != default:
                self.result.set(
                    f"behaviour.www_authenticate.{condition}",
                    value,
                    cite(
                        members[0], "WWW-Authenticate", note="" if value else "no WWW-Authenticate"
                    ),
                )

    def _error_fields(self) -> None:
        errors = [s for s in self.seen if s.is_error and s.condition not in (None, "unexplained")]
        if not errors:
            return
        conditions_seen = {s.condition for s in errors}
        names: dict[str, list[Seen]] = {}
        for s in errors:
            for name in s.body:
                if name not in ("code", "message", "status"):
                    names.setdefault(name, []).append(s)
        ids = self.request_id_names()
        for name, members in names.items():
            carried = {s.condition for s in members}
            value = members[0].body[name]
            item: dict[str, Any] = {"name": name}
            request_id = next((members[0].headers[h] for h in ids if h in members[0].headers), None)
            if isinstance(value, str) and value == request_id:
                item["generate"] = "request_id"
            elif isinstance(value, str) and request_id and value == trace_of(request_id):
                item["generate"] = "trace_id"
            elif isinstance(value, str) and id_form(value) == ("", "uuid"):
                item["generate"] = "uuid"
            elif isinstance(value, str) and re.fullmatch(
                r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", value
            ):
                item["generate"] = "timestamp"
            elif (computed := computed_field(name, members, ids)) is not None:
                # A value of the answer's own (the wait, the offending value, every invalid
                # field): computed per answer, never one answer's constant.
                item = computed
            elif self._error_field_per_condition(name, members, ids):
                continue
            else:
                by_condition: dict[str, set[str]] = {}
                for s in members:
                    by_condition.setdefault(str(s.condition), set()).add(_json(s.body[name]))
                if len({_json(s.body[name]) for s in members}) > 1 and all(
                    len(v) == 1 for v in by_condition.values()
                ):
                    # A constant per condition (a link to the code's documentation, say).
                    for condition in sorted(by_condition, key=_condition_order):
                        shown = next(s for s in members if s.condition == condition)
                        self.result.set(
                            "behaviour.error_fields",
                            {"name": name, "value": shown.body[name], "conditions": [condition]},
                            cite(shown),
                        )
                    continue
                item["value"] = value
                if len({_json(s.body[name]) for s in members}) > 1:
                    self.result.cannot(
                        f"the Error field {name!r} changes from answer to answer: written as "
                        f"the first value, {value!r}: " + cite(members[0])
                    )
            if carried != conditions_seen:
                item["conditions"] = sorted(carried, key=_condition_order)
            self.result.set("behaviour.error_fields", item, cite(members[0]))

    def _error_field_per_condition(self, name: str, members: list[Seen], ids: list[str]) -> bool:
        """Field ``name`` set per condition when no one rule covers every condition but each
        condition has its own: a constant (``Authorization`` on every 401) or a value
        computed from the answer (the parameter of each bad query). A provider that names
        the field at fault this way says ``limit`` for one refusal and ``categoryId`` for
        another; the first answer's value for all would be wrong for every other condition.
        False (nothing set) when some condition varies in a way nothing computes."""
        by_condition: dict[str, list[Seen]] = {}
        for s in members:
            by_condition.setdefault(str(s.condition), []).append(s)
        if len(by_condition) < 2 or len({_json(s.body[name]) for s in members}) == 1:
            return False
        # One entry per rule, naming every condition it holds for (the scenario allows 20).
        items: dict[str, tuple[dict[str, Any], Seen]] = {}
        backing: Counter[str] = Counter()  # the answers each rule reproduces
        unsettled: list[Seen] = []
        for condition in sorted(by_condition, key=_condition_order):
            group = by_condition[condition]
            rule = computed_field(name, group, ids)
            if rule is None:
                rule = {"name": name, "value": group[0].body[name]}
                if len({_json(s.body[name]) for s in group}) > 1:
                    unsettled.append(group[0])
            entry = items.setdefault(_json(rule), ({**rule, "conditions": []}, group[0]))
            entry[0]["conditions"].append(condition)
            backing[_json(rule)] += len(group)
        if any("value" in items[k][0] and backing[k] < 2 for k in items):
            return False  # a value seen once (a random id, say) is no condition's constant
        if not unsettled and all("value" in item for item, _ in items.values()):
            return False  # constants per condition: the caller's own rule writes those
        for item, shown in items.values():
            self.result.set("behaviour.error_fields", item, cite(shown))
        for shown in unsettled:
            self.result.cannot(
                f"the Error field {name!r} of {shown.condition} changes from answer to answer: "
                f"written as the first value, {shown.body[name]!r}: " + cite(shown)
            )
        return True

    # -- headers -------------------------------------------------------------

    def request_id_names(self) -> list[str]:
        values: dict[str, set[str]] = {}
        for s in self.seen:
            sent = {name.lower(): value for name, value in s.item.headers}
            for name, value in s.item.response_headers:
                if sent.get(name.lower()) == value:
                    continue  # the client's own id answered back: any text a client sends
                values.setdefault(name.lower(), set()).add(value)
        return [
            name
            for name, found in values.items()
            if all(is_id(value) for value in found)
            and (len(found) > 1 or _ID_NAME.search(name))
            and name not in attribution.MANAGED
            # A limiter's figure (a second set's epoch reset, say) counts up as ids do.
            and not attribution.rate_header(name)
        ]

    def headers(self) -> None:
        result = self.result
        bodies = [s for s in self.seen if s.item.response_body and "content-type" in s.headers]
        types = Counter(s.headers["content-type"] for s in bodies)
        if types:
            value, _ = types.most_common(1)[0]
            example = next(s for s in bodies if s.headers["content-type"] == value)
            pattern = _BEHAVIOUR["content_type"]["pattern"]
            if re.fullmatch(pattern, value):
                result.set(
                    "behaviour.content_type", value, cite(example, "Content-Type", code=False)
                )
            else:
                result.cannot(
                    "the Content-Type is not application/json: " + cite(example, "Content-Type")
                )
        ids = self.request_id_names()
        if ids:
            name = ids[0]
            shown = next(
                header for s in self.seen for header, _ in s.item.response_headers
                if header.lower() == name
            )  # fmt: skip
            example = next(s for s in self.seen if name in s.headers)
            prefix, kind = id_form(example.headers[name])
            result.set("behaviour.request_id.header", shown, cite(example, shown, code=False))
            if kind is not None:
                result.set("behaviour.request_id.format", kind, cite(example, shown, code=False))
                result.set("behaviour.request_id.prefix", prefix, cite(example, shown, code=False))
            if kind == "alphanumeric":
                result.set(
                    "behaviour.request_id.length",
                    id_length(example.headers[name]),
                    cite(example, shown, code=False),
                )
        elif self.seen:
            result.set(
                "behaviour.request_id.header",
                None,
                cite(self.seen[0], code=False, note="no header carries a request id"),
            )
        skip = (
            set(ids)
            | attribution.MANAGED
            | TRANSPORT_HEADERS
            | INFRASTRUCTURE_HEADERS
            | self.handled
        )
        names = {name for s in self.seen for name in s.headers} - skip
        for name in sorted(names):
            if is_infrastructure(name) or attribution.rate_header(name):
                continue
            rules = attribution.header_rules(name, self.seen)
            if rules is None:
                result.varying.add(name)
                example = next(s for s in self.seen if name in s.headers)
                result.cannot(
                    f"the header {name} changes from answer to answer (or is on some answers of "
                    f"an operation and status and not on others): "
                    + cite(example, name, code=False)
                )
                continue
            for where, rule in rules.items():
                example = next(
                    s for s in self.seen if (s.operation, s.status) == where and name in s.headers
                )
                value = rule.get("value")
                if isinstance(value, str) and not _HEADER_VALUE.fullmatch(value):
                    # An empty value (X-Prev-Page on a first page), or one a scenario's
                    # constant header cannot state: left out, said so (never a file that
                    # does not validate).
                    result.cannot(
                        f"the header {name} has a value no constant header can state "
                        f"({value[:40]!r}): " + cite(example, name, code=False)
                    )
                    continue
                result.set("behaviour.headers", rule, cite(example, name, code=False))
        created = [s for s in self.seen if s.facts.operation == "createPet" and s.status == 201]
        if created:
            location = created[0].headers.get("location")
            form = (
                "none"
                if location is None
                else ("url" if re.match(r"https?://", location) else "path")
            )
            result.set("behaviour.location", form, cite(created[0], "Location", code=False))
        tagged: list[Seen] = []
        for operation in ("listPets", "getPet", "listOrders"):
            reads = [s for s in self.seen if s.facts.operation == operation and s.status == 200
                     and s.item.method == "GET"]  # fmt: skip
            if not reads:
                continue
            tag = reads[0].headers.get("etag")
            if tag is not None:
                kind = "weak" if tag.strip().startswith("W/") else "strong"
                result.set(f"behaviour.etag.{operation}", kind, cite(reads[0], "ETag", code=False))
                tagged.extend(s for s in reads if "etag" in s.headers)
        self._etag_form(tagged)

    def _etag_form(self, tagged: list[Seen]) -> None:
        """``behaviour.etag_digest`` and ``etag_digits``: the digest whose first hex digits
        give every recorded tag from its body (sha256 tried first: mockstore's own); else,
        when every tag is hex of one length, that many digits of SHA-256 of some other bytes
        (an estimate: the tag's form is what a client sees)."""
        if not tagged:
            return
        opaque = [s.headers["etag"].strip().removeprefix("W/").strip('"') for s in tagged]
        lengths = {len(value) for value in opaque}
        digits = lengths.pop() if len(lengths) == 1 else 0
        if not 8 <= digits <= 64 or not all(re.fullmatch(r"[0-9a-fA-F]+", v) for v in opaque):
            self.result.open(
                "behaviour.etag_digits: the recorded ETags are not hex tags of one length "
                "(8 to 64 digits)"
            )
            return
        proof = cite(tagged[0], "ETag", code=False, note=f"{digits} hex digits")
        for name, digest in ETAG_DIGESTS.items():
            if len(digest(b"")) >= digits and all(
                digest(s.item.response_body)[:digits] == value
                for s, value in zip(tagged, opaque, strict=True)
            ):
                if name != "sha256":
                    named = cite(tagged[0], "ETag", code=False, note=f"the {name} of the body")
                    self.result.set("behaviour.etag_digest", name, named)
                self.result.set("behaviour.etag_digits", digits, proof)
                return
        self.result.set("behaviour.etag_digits", digits, proof)
        self.result.estimate(
            "behaviour.etag_digits",
            f"behaviour.etag_digits: the tags are {digits} hex digits, but no digest of the "
            "recorded bodies: the mock's tags (SHA-256's first digits) take their form",
        )

    def deprecation(self) -> None:
        result = self.result
        answers = [
            s for s in self.seen if s.facts.operation == "getPet" and s.item.method != "HEAD"
        ]
        carrying = [
            s
            for s in answers
            if "deprecation" in s.headers or "sunset" in s.headers or "link" in s.headers
        ]
        if not answers:
            return
        if not carrying:
            success = [s for s in answers if 200 <= s.status < 300]
            refusals = [s for s in answers if s.keyed and s.status >= 400]
            if success:
                note = "no Deprecation, Sunset or Link on a getPet answer"
                result.set(
                    "behaviour.deprecation_format", "none", cite(success[0], code=False, note=note)
                )
                result.set(
                    "behaviour.sunset_header", False, cite(success[0], code=False, note=note)
                )
                result.set(
                    "behaviour.deprecation_link", None, cite(success[0], code=False, note=note)
                )
            elif refusals:
                result.set(
                    "behaviour.deprecation_on",
                    "success",
                    cite(refusals[0], code=False, note="no Deprecation on a refusal"),
                )
                result.open(
                    "the deprecation headers: no getPet answer succeeded in the recording, so "
                    "their form is mockstore's"
                )
            return
        first = carrying[0]
        # Dates announced: the calendar's, whatever clock the answer's waits were on.
        value = first.headers.get("deprecation")
        if value is None:
            result.set(
                "behaviour.deprecation_format",
                "none",
                cite(first, "Sunset", code=False, note="no Deprecation"),
            )
        else:
            kind = deprecation_kind(value)
            if kind == "invalid":
                result.cannot("getPet's Deprecation is unreadable: " + cite(first, "Deprecation"))
            else:
                result.set(
                    "behaviour.deprecation_format", kind, cite(first, "Deprecation", code=False)
                )
            instant = deprecation_instant(value)
            if instant is not None:
                result.set(
                    "behaviour.deprecated_since",
                    attribution.announced(instant),
                    cite(first, "Deprecation", code=False),
                )
        sunset = first.headers.get("sunset")
        if sunset is None:
            result.set("behaviour.sunset_header", False, cite(first, code=False, note="no Sunset"))
        elif http_date(sunset) is not None:
            result.set(
                "behaviour.sunset",
                attribution.announced(http_date(sunset)),
                cite(first, "Sunset", code=False),
            )  # type: ignore[arg-type]
        link = first.headers.get("link")
        default = _BEHAVIOUR["deprecation_link"]["default"].replace(
            "{successor}", self.base + "/pets"
        )
        if link is None:
            result.set("behaviour.deprecation_link", None, cite(first, code=False, note="no Link"))
        elif "".join(link.split()) != "".join(default.split()):
            result.set("behaviour.deprecation_link", link, cite(first, "Link", code=False))
        # Which answers announce it.
        unauthenticated = [s for s in carrying if not s.keyed]
        refused = [s for s in answers if s.keyed and s.status >= 400]
        if unauthenticated:
            result.set(
                "behaviour.deprecation_on",
                "all",
                cite(unauthenticated[0], "Deprecation", code=False),
            )
        elif refused and all(s not in carrying for s in refused):
            result.set(
                "behaviour.deprecation_on",
                "success",
                cite(refused[0], code=False, note="no Deprecation on a refusal"),
            )
        elif refused:
            shown = next(s for s in refused if s in carrying)
            result.set(
                "behaviour.deprecation_on", "authenticated", cite(shown, "Deprecation", code=False)
            )

    # -- semantics -----------------------------------------------------------

    def semantics(self) -> None:
        result = self.result
        for s in self.seen:
            if s.facts.operation != "createPet" or s.status != 201 or not isinstance(s.body, dict):
                continue
            sent = json_of(s.item.body)
            if (
                isinstance(sent, dict)
                and "status" not in sent
                and not result.settled("behaviour.default_status")
            ):
                status = s.body.get("status")
                value = status if isinstance(status, str) else "omit"
                result.set(
                    "behaviour.default_status",
                    value,
                    cite(s, code=False, note=f"sent no status, got {value}"),
                )
            if s.facts.unknown_fields and not result.settled("behaviour.unknown_fields"):
                kept = all(name in s.body for name in s.facts.unknown_fields if name != "id")
                result.set(
                    "behaviour.unknown_fields",
                    "keep" if kept else "drop",
                    cite(s, code=False, note=f"sent {', '.join(s.facts.unknown_fields)}, "
                         f"{'kept' if kept else 'dropped'}"),
                )  # fmt: skip
        refused = next((s for s in self.seen if s.condition == "unknown_field"), None)
        if refused is not None:
            result.set("behaviour.unknown_fields", "refuse", cite(refused))
        for s in self.seen:
            limit = s.facts.query.get("limit", [""])[-1]
            if s.facts.operation != "listPets" or not (limit.isdigit() and int(limit) > 100):
                continue
            if s.status == 200:
                result.set("behaviour.limit_above_maximum", "clamp", cite(s, code=False))
            elif s.condition == "limit_above_maximum":
                result.set("behaviour.limit_above_maximum", "refuse", cite(s))
        orders: Counter[str] = Counter()
        example: dict[str, Seen] = {}
        for s in self.seen:
            if s.facts.operation == "listPets" and s.status == 200 and isinstance(s.body, list):
                order = _order(s.body)
                if order is not None:
                    orders[order] += 1
                    example.setdefault(order, s)
        if orders:
            # Insertion order explains any listing (ids in order or not); the others, theirs.
            order = "insertion" if len(orders) > 1 or "insertion" in orders else next(iter(orders))
            if len(orders) > 1 and "insertion" not in orders:
                result.cannot(f"listings come in both id orders: {dict(orders)}")
            result.set(
                "behaviour.list_order",
                order,
                cite(example[order] if order in example else next(iter(example.values())),
                     code=False, note=f"listings in {', '.join(sorted(orders))} order"),
            )  # fmt: skip
        served: dict[str, Seen] = {}
        refused_head: dict[str, Seen] = {}
        for s in self.seen:
            if s.item.method != "HEAD":
                continue
            resolved = _ROUTER.resolve("GET", s.path)
            if resolved.operation is None:
                continue
            name = resolved.operation.operation_id
            if s.condition == "method_not_allowed":
                refused_head.setdefault(name, s)
            elif s.status < 500 and s.condition not in _RATE and s.status != 401:
                served.setdefault(name, s)
        if served or refused_head:
            head = [op for op in HEAD_OPERATIONS if op in served or op not in refused_head]
            value: Any = True if len(head) == len(HEAD_OPERATIONS) else (head or False)
            shown = [*served.values(), *refused_head.values()]
            result.set(
                "behaviour.serve_head", value, *(cite(s, "Allow", code=False) for s in shown)
            )
            for op in HEAD_OPERATIONS:
                if op not in served and op not in refused_head and value is not True:
                    result.open(
                        f"behaviour.serve_head: HEAD on {op} is not in the recording (served)"
                    )
        self._body_limit()

    def _body_limit(self) -> None:
        creates = [
            s for s in self.seen if s.facts.operation == "createPet" and s.item.method == "POST"
        ]
        accepted = [
            s
            for s in creates
            if s.condition not in ("payload_too_large", *_RATE) and s.status != 401
        ]
        refused = [s for s in creates if s.condition == "payload_too_large"]
        if not refused:
            return
        smallest = min(refused, key=lambda s: s.facts.body_size)
        largest = max((s.facts.body_size for s in accepted), default=0)
        upper = smallest.facts.body_size - 1
        if upper < largest:
            self.result.cannot(
                f"a body of {smallest.facts.body_size} bytes was refused for its size and one of "
                f"{largest} was not: " + cite(smallest)
            )
            return
        value = _round_within(largest, upper)
        self.result.set(
            "behaviour.max_body_bytes",
            value,
            cite(smallest, note=f"{largest} bytes read, {smallest.facts.body_size} refused for "
                 f"their size: between the two, {value} is the roundest"),
        )  # fmt: skip
        if value != upper:
            self.result.estimate(
                "behaviour.max_body_bytes",
                f"behaviour.max_body_bytes is {largest} to {upper} bytes: written as {value} "
                "(calibrate --target --allow-writes finds it to the byte)",
            )

    # -- the store -----------------------------------------------------------

    def store(self, pets: dict[int, dict[str, Any]]) -> None:
        result = self.result
        if pets:
            listed = list(pets.values())
            if result.value("behaviour.list_order", "ascending") != "insertion":
                listed.sort(key=lambda pet: pet["id"])
            result.pets = _pets_setting(listed)
        for s in self.seen:
            if s.facts.operation != "listOrders" or s.item.method != "GET" or s.status >= 400:
                continue
            if s.condition in _RATE:
                continue
            respond: dict[str, Any] = {"status": s.status}
            if s.item.response_body:
                body = json_of(s.item.response_body)
                if body is None:
                    respond["body"] = s.item.response_body.decode("utf-8", "replace")
                    respond["raw"] = True
                else:
                    respond["body"] = body
            result.routes.append(
                Setting({"operation": "listOrders", "respond": respond}, [cite(s, code=False)])
            )
            break


def _per_window_names(s: Seen) -> list[str]:
    return [name for name in s.headers if name.startswith("x-ratelimit-limit-")]


def _who(s: Seen) -> str:
    return s.bucket if s.keyed else "callers without a valid key"


# What behaviour.headers[].value accepts (the scenario schema's pattern).
_HEADER_VALUE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _condition_order(condition: str | None) -> int:
    names = list(CONDITIONS)
    return names.index(condition) if condition in names else len(names)


def _pets_setting(pets: list[dict[str, Any]]) -> Setting:
    return Setting(
        pets,
        [
            f"{len(pets)} pet(s) the recording shows existed before it (listed or fetched, "
            "never created in it)"
        ],
    )


def _order(pets: list[Any]) -> str | None:
    ids = [pet.get("id") for pet in pets if isinstance(pet, dict)]
    if len(ids) < 2 or not all(isinstance(i, int) for i in ids):
        return None
    if ids == sorted(ids):
        return "ascending"
    if ids == sorted(ids, reverse=True):
        return "descending"
    return "insertion"


def _round_within(low: int, high: int) -> int:
    """The roundest number of bytes from ``low`` to ``high``: a power of two, or of ten."""
    for size in sorted(
        [2**k for k in range(6, 31)] + [10**k * m for k in range(2, 9) for m in (1, 2, 5)],
        reverse=True,
    ):
        if low <= size <= high:
            return size
    return high


def _plan_value(minute: int, day: int | None) -> Any:
    for plan in BUILTIN_PLANS.values():
        if (plan.per_minute, plan.per_day) == (minute, day):
            return plan.name
    if day is None:
        return {"per_minute": minute}  # no day allowance
    return {"per_minute": minute, "per_day": day}


_BAN_DEFAULT_AFTER = _SCHEMA["properties"]["ban"]["properties"]["after_rejections"]["default"]
_BAN_DEFAULT_STATUS = _SCHEMA["properties"]["ban"]["properties"]["status"]["default"]
_BAN_DEFAULT_WITHIN = _SCHEMA["properties"]["ban"]["properties"]["within_seconds"]["default"]
_DEFAULT_CHALLENGES = tuple(
    (name, spec["default"]) for name, spec in _BEHAVIOUR["www_authenticate"]["properties"].items()
)
