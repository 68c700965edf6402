"""The limiter a scenario describes: how allowances are counted, and how answers announce them.

A scenario's ``ratelimit:`` section (and the older ``behaviour.ratelimit_*``,
``retry_after*`` settings, read into it when the scenario is built) becomes one
``Limits``: plain frozen values, nothing computed per request. Each plan has
two allowances, ``per_minute`` and ``per_day``; each is counted in its own
``Window``, whose length and algorithm the scenario chooses (the names stay
``minute`` and ``day`` whatever the lengths: they say which of the plan's two
figures the window counts).

``Limits.classic`` says whether mockstore's own fixed-window limiter and
header writer can serve the scenario as they always have (a clock minute and a
UTC day, or windows from a first request, whole-second headers): the one
branch between the optimised path and the general one (``mockstore.limiter``)
is taken once, when the scenario's state is built.
"""

from __future__ import annotations

from dataclasses import dataclass

from mockstore.limiter.refusals import NO_REFUSALS, Refusals

# The algorithms a window may count with, as the scenario names them.
FIXED = "fixed"
SLIDING_LOG = "sliding_log"
SLIDING_WINDOW = "sliding_window"
TOKEN_BUCKET = "token_bucket"
LEAKY_BUCKET = "leaky_bucket"
ALGORITHMS = (FIXED, SLIDING_LOG, SLIDING_WINDOW, TOKEN_BUCKET, LEAKY_BUCKET)
# Algorithms whose windows lie on the clock's grid (from each midnight of the time zone).
GRIDDED = (FIXED, SLIDING_WINDOW)
# The X-RateLimit-* figures a provider may send, in the order they are written.
FIGURES = ("limit", "remaining", "reset", "used", "resource")
DAY_SECONDS = 86_400


@dataclass(frozen=True, slots=True)
class Window:
    """One of a plan's two windows: its length in seconds and how requests are counted in it.

    ``align`` matters to ``fixed`` windows only: ``clock`` (on the clock's grid:
    from each midnight of the time zone, every ``seconds``) or ``first_request``
    (from a bucket's first request after the last window ended). A
    ``sliding_window`` counter always lies on the clock's grid; a sliding log
    and both buckets have no grid.
    """

    seconds: int
    algorithm: str = FIXED
    align: str = "clock"

    @property
    def gridded(self) -> bool:
        """Whether the window lies on the clock's grid (its starts come from the clock)."""
        return self.algorithm == SLIDING_WINDOW or (
            self.algorithm == FIXED and self.align == "clock"
        )


@dataclass(frozen=True, slots=True)
class SecondSet:
    """A second set of rate-limit headers, ``X-RateLimit-<name>-<Figure>``, describing
    ``window`` whatever ``X-RateLimit-*`` describe (Menagerie's ``X-RateLimit-Burst-*`` for
    the minute beside the day's): ``figures`` of limit, remaining, reset and used, the
    reset as ``epoch`` seconds, ``epoch-ms`` or ``delta`` (whole seconds, rounded up)."""

    name: str
    window: str
    figures: tuple[str, ...] = ("limit", "remaining", "reset")
    reset: str = "delta"

    def header(self, figure: str) -> str:
        """The header that states ``figure`` (``X-RateLimit-Burst-Limit``)."""
        return f"X-RateLimit-{self.name}-{figure.capitalize()}"


@dataclass(frozen=True, slots=True)
class Announcement:
    """What the headers of an answer say about the allowance, and in which form.

    ``figures``: the ``X-RateLimit-*`` headers sent, of ``FIGURES``
    (``resource`` states ``resource``). ``describes``: the window they describe
    on an admitted request (``tightest``: the one with fewer requests left);
    ``refusals``: on a refusal, the window that ``blocks`` or the ``described``
    one. ``per_window``: ``(window, suffix)`` for each window that also gets
    ``X-RateLimit-Limit-<suffix>`` and ``X-RateLimit-Remaining-<suffix>``.
    ``reset``: ``X-RateLimit-Reset`` as ``epoch`` seconds, ``epoch-ms`` or
    ``delta`` (seconds from now), with ``reset_decimals`` digits after the
    point. ``retry_after``: a refusal's ``Retry-After`` as whole ``seconds``,
    ``decimal`` seconds (``retry_after_decimals`` digits), an ``http-date`` or
    ``none``; ``retry_after_banned`` a banned key's (``same``: as a refusal's).
    Every figure is rounded up at its precision: no header names an instant
    before the one from which the client may really retry. ``draft``: the IETF
    draft ``RateLimit-Policy`` and ``RateLimit`` headers on ``none``, ``all``
    or ``success`` (2xx) answers, under ``policies`` ((window, name) pairs).
    ``uncounted``: what a caller the limiter does not count is told: ``none`` (no
    figures) or ``zero`` (an allowance of 0, the reset now). ``second``: a second set
    of headers describing one window (``SecondSet``), or None.
    """

    figures: tuple[str, ...] = ("limit", "remaining", "reset")
    resource: str = "core"
    describes: str = "tightest"
    refusals: str = "blocking"
    per_window: tuple[tuple[str, str], ...] = ()
    reset: str = "epoch"
    reset_decimals: int = 0
    retry_after: str = "seconds"
    retry_after_banned: str = "same"
    retry_after_decimals: int = 1
    draft: str = "none"
    policies: tuple[tuple[str, str], ...] = (("minute", "minute"), ("day", "day"))
    uncounted: str = "none"  # or "zero": a caller not counted is told an allowance of 0
    second: SecondSet | None = None  # X-RateLimit-<name>-* describing one window

    @property
    def classic(self) -> bool:
        """Whether mockstore's own header writer (``mockstore.headers``) says all of it."""
        return (
            self.figures == ("limit", "remaining", "reset")
            and not self.per_window
            and self.reset_decimals == 0
            and self.retry_after in ("seconds", "http-date")
            and self.retry_after_banned != "decimal"
            and self.draft in ("none", "all")
            and self.policies == (("minute", "minute"), ("day", "day"))
            and self.uncounted == "none"
            and self.second is None
        )

    def policy(self, window: str) -> str:
        """The draft headers' name of ``window``'s policy."""
        return dict(self.policies)[window]


def a_success(status: int) -> bool:
    """An answer the draft headers' ``success`` form is on: a 2xx, or a 304 (a revalidation
    that succeeded carries the headers its 200 would have, RFC 9110 section 15.4.5)."""
    return 200 <= status < 300 or status == 304


@dataclass(frozen=True, slots=True)
class Limits:
    """A scenario's limiter: both windows, the time zone, what counts, callers without a key.

    ``counts``: ``served`` (the requests the limiter admits, whatever their
    answer) or ``attempts`` (every request, refused ones too). ``anonymous``:
    ``per_address`` (callers without a valid key are counted per client address
    on the scenario's anonymous plan) or ``none`` (never counted: answered 401
    with no rate-limit headers). ``not_counted``: the statuses, and classes of
    them, whose answers give back what their request took. ``lengths_per_plan``:
    some plan counts a window over a length of its own (``Plan.minute_seconds``,
    ``day_seconds``), keeping the window's algorithm, alignment and time zone.
    ``refusals``: which window refuses a request several block, and each window's
    own status, code and ``Retry-After`` form (``mockstore.limiter.refusals``).
    """

    minute: Window = Window(60)
    day: Window = Window(DAY_SECONDS)
    time_zone: str = "UTC"
    counts: str = "served"
    anonymous: str = "per_address"
    headers: Announcement = Announcement()
    # Statuses (304) and classes of them ("5xx") whose answers give back what they took.
    not_counted: tuple[int | str, ...] = ()
    lengths_per_plan: bool = False
    # Which window refuses when several block, and how each refuses (``ratelimit.refusal``).
    refusals: Refusals = NO_REFUSALS

    def gives_back(self, status: int) -> bool:
        """Whether an answer of ``status`` gives back what its request took."""
        return status in self.not_counted or f"{status // 100}xx" in self.not_counted

    @property
    def windows(self) -> tuple[tuple[str, Window], ...]:
        return (("minute", self.minute), ("day", self.day))

    @property
    def classic_windows(self) -> str | None:
        """``clock`` or ``first_request`` when mockstore's own fixed-window limiter
        (``mockstore.ratelimit.RateLimiter``) counts exactly this; else None."""
        minute, day = self.minute, self.day
        if (
            minute.seconds == 60
            and day.seconds == DAY_SECONDS
            and minute.algorithm == day.algorithm == FIXED
            and minute.align == day.align
            and (self.time_zone == "UTC" or minute.align == "first_request")
            and self.counts == "served"
            and not self.not_counted
            # Callers not counted at all: the general limiter's script numbers their
            # requests in Redis without counting them (the classic one counts everyone).
            and self.anonymous == "per_address"
            and not self.lengths_per_plan
            and self.refusals == NO_REFUSALS
        ):
            return minute.align
        return None

    @property
    def classic(self) -> bool:
        """Whether the optimised limiter and header writer serve the scenario unchanged
        (callers without a key counted, as they always were)."""
        return self.classic_windows is not None and self.headers.classic


DEFAULT_LIMITS = Limits()
