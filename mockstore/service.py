"""The Pet Store service apart from HTTP: who may call, and what each operation answers.

This is where a newcomer finds the rules of the service (moto keeps them in
``models.py``): the order of the checks before an operation (ban, allowance,
authentication), the operations themselves (``listPets``, ``createPet``,
``getPet`` with its sunset, ``listOrders``), and every refusal, raised as one
type, ``ApiError``. It reads every date and policy from the scenario and every
field and constraint from the OpenAPI document; it knows nothing of ASGI.
``api.py`` takes the request apart, calls in here, and writes the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode

from mockstore import schemas
from mockstore.clock import format_time
from mockstore.errors import CONDITIONS, ERROR_CODES, VALIDATION_CONDITIONS, ApiError, FieldProblem
from mockstore.intake import Intake
from mockstore.json_array import JsonArray, array_of
from mockstore.keys import MISSING, ApiKey, Credentials, client_bucket
from mockstore.memory import OverBudget
from mockstore.pages import Pager, integer_of
from mockstore.ratelimit import Decision, Plan
from mockstore.routing import Router
from mockstore.scenario.model import Scenario
from mockstore.state import MockState
from mockstore.status_filter import SeveralStatuses
from mockstore.store import PetStore, StoreFull, pet_json
from mockstore.validation import (
    QueryValidator,
    is_json_media_type,
    parse_json_body,
    path_parameters,
    validate_body,
)

OPERATIONS = schemas.operations()
# The route table: every path and operationId of the OpenAPI document.
ROUTER = Router(OPERATIONS.values())
# The same for a provider that does not serve HEAD (behaviour.serve_head: false).
ROUTER_WITHOUT_HEAD = Router(OPERATIONS.values(), head=False)
_GET_OPERATIONS = frozenset(op.operation_id for op in OPERATIONS.values() if op.method == "GET")


class WindowRefusal(ApiError):
    """A refusal by a window with a refusal of its own (``ratelimit.refusal.minute``,
    ``day``): its status and code are the window's, not restyled as ``rate_limited``'s."""

    __slots__ = ()

    def __init__(self, code: str, message: str, *, status: int) -> None:
        super().__init__(code, message, status=status, condition="rate_limited")


class Caller:
    """Who sent a request, as the limiter counted it.

    ``key`` is None for a caller without a valid key (counted per client
    address on the scenario's anonymous plan); ``decision`` is the limiter's
    verdict and the figures every header of the answer states.
    ``refused_until`` is that verdict as the journal keeps it: the instant the
    caller was refused until, 0.0 when it was admitted, -1.0 when the limiter
    did not decide (``uncounted``).
    """

    __slots__ = ("admitted", "credentials", "decision", "key", "plan", "refused_until")

    def __init__(
        self, credentials: Credentials, key: ApiKey | None, plan: Plan, decision: Decision
    ) -> None:
        self.credentials = credentials
        self.key = key
        self.plan = plan
        self.decision = decision
        # A valid key within its allowance: nothing to refuse (``refusal`` says why not).
        self.admitted = key is not None and decision.verdict == "allowed"
        self.refused_until = decision.retry_at

    @classmethod
    def uncounted(cls, credentials: Credentials, plan: Plan, decision: Decision) -> Caller:
        """A caller the limiter only looked at (``peek``): nothing was counted or decided.

        A ban it is under is a refusal all the same; an "allowed" says only that
        it is not banned, so the journal notes no decision.
        """
        caller = cls(credentials, None, plan, decision)
        if decision.verdict == "allowed":
            caller.refused_until = -1.0
        return caller


class Bystander(Caller):
    """A caller the limiter did not count: where it stands, for the answer's headers only
    (a request that failed before its caller was known, or the shared state out of reach)."""

    __slots__ = ()


class ShutOut(Caller):
    """A caller the limiter could not count: the memory budget had no room for its counters.

    Answered ``error`` (507 ``memory_budget``); ``decision`` says where it stood.
    """

    __slots__ = ("error",)

    def __init__(
        self,
        credentials: Credentials,
        key: ApiKey | None,
        plan: Plan,
        decision: Decision,
        error: ApiError,
    ) -> None:
        super().__init__(credentials, key, plan, decision)
        self.admitted = False
        self.error = error


# The decision for a caller the limiter does not count (ratelimit.anonymous: none): its
# answers state no rate-limit figures (a limit of 0 says so to the header writer).
UNCOUNTED = Decision("allowed", 0, 0, 0, 0, 0.0, "minute", 0, 0, 0, 0)


class Call(Protocol):
    """What an operation reads from one request, taken apart by the HTTP layer.

    A protocol, not a class: the HTTP layer's own record of the exchange
    serves as it, so no object is made for it per request.
    """

    now: float
    query: bytes  # the raw query string
    params: dict[str, str]  # path parameters as sent
    request_body: bytes
    content_type: bytes | None
    # Set by an operation: the headers its answer carries beyond the standard ones (a
    # page's Link and total), and the NewPet fields a create dropped (for the answer's
    # builder: an advisory header may name them).
    answer_headers: tuple[tuple[bytes, bytes], ...]
    dropped: tuple[str, ...]

    def link_path(self) -> str:
        """The path the client asked for, under the server's root (for a Link)."""

    def origin(self) -> str | None:
        """``scheme://host`` the client addressed (for an absolute Link)."""


# An operation's body: bytes, or a large listing not yet made (charged first: ``JsonArray``).
Handler = Callable[["PetStoreService", PetStore, Call], "bytes | JsonArray"]


def _error_styles(
    codes: tuple[tuple[str, str], ...],
    validation_status: int,
    statuses: tuple[tuple[str, int], ...] = (),
) -> dict[str, tuple[str, int | None]]:
    """The (code, status or None) of each condition the scenario words differently.

    Conditions the scenario leaves at mockstore's own code and status are not
    listed, so a refusal of theirs is sent as raised.
    """
    given = dict(statuses)
    styles: dict[str, tuple[str, int | None]] = {}
    for condition, code in codes:
        own = CONDITIONS[condition].code
        status = given.get(condition)
        if (
            status is None
            and condition in VALIDATION_CONDITIONS
            and validation_status != ERROR_CODES[own].status
        ):
            status = validation_status
        if status == ERROR_CODES[own].status:
            status = None
        if code != own or status is not None:
            styles[condition] = (code, status)
    return styles


def _challenges(
    challenges: tuple[tuple[str, str | None], ...],
) -> dict[str, tuple[tuple[bytes, bytes], ...]]:
    """Each 401 condition's ``WWW-Authenticate`` header (none where the scenario says null)."""
    return {
        condition: ((b"www-authenticate", value.encode("latin-1")),) if value is not None else ()
        for condition, value in challenges
    }


def _clamped(query: bytes) -> bytes:
    """``query`` with a ``limit`` above the maximum brought down to it (``clamp``)."""
    maximum = next(p for p in OPERATIONS["listPets"].parameters if p.name == "limit").schema[
        "maximum"
    ]
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    return urlencode(
        [(name, str(maximum) if name == "limit" else value) for name, value in pairs]
    ).encode("latin-1")


def _sunset_rule(operation: schemas.Operation, handler: Handler, sunset: float) -> Handler:
    """A deprecated operation's handler: 410 gone from the sunset on."""

    def until_sunset(service: PetStoreService, store: PetStore, call: Call) -> bytes | JsonArray:
        if call.now >= sunset:
            raise service._gone(operation)
        return handler(service, store, call)

    return until_sunset


def human_date(when: float) -> str:
    """``5 December 2030`` for a midnight UTC instant, else the RFC 3339 instant."""
    moment = datetime.fromtimestamp(when, UTC)
    if (moment.hour, moment.minute, moment.second, moment.microsecond) == (0, 0, 0, 0):
        return f"{moment.day} {moment:%B %Y}"
    return format_time(when)


class PetStoreService:
    """The Pet Store's rules under one scenario."""

    def __init__(self, scenario: Scenario) -> None:
        behaviour = scenario.behaviour
        self.scenario = scenario
        self.max_body_bytes = behaviour.max_body_bytes
        self._max_store_bytes = behaviour.max_store_bytes
        self._anonymous_plan = scenario.anonymous_plan
        # Callers without a valid key are counted per address, or not at all.
        self._anonymous_counted = scenario.ratelimit.anonymous == "per_address"
        self._ban_status = scenario.ban.status if scenario.ban else None
        # Each window's own refusal (ratelimit.refusal.minute/day), if the scenario has one.
        refusals = scenario.ratelimit.refusals
        self._refusals = {
            window: refusal
            for window in ("minute", "day")
            if (refusal := refusals.of(window)) is not None
        }
        collections = scenario.collections
        self._default_status = collections.default_status
        # The 201 is the pet as sent, later reads say the default (defaults.applied: read).
        self._default_on_read = (
            collections.default_status is not None and collections.default_applied == "read"
        )
        self._intake = Intake.of(collections)
        # Pages, a field's order, a total: None lists the first limit pets as mockstore does.
        self.pager = None if collections.plain_listing else Pager(collections, scenario.seed)
        self._lenient_query = collections.query_numbers == "lenient"
        self._any_case_status = collections.status_case == "insensitive"
        # status=available,pending read as either (None: refused, as the spec's PetStatus).
        self._several_statuses = (
            None
            if collections.several_statuses == "refuse"
            else SeveralStatuses(
                collections.several_statuses, self._any_case_status, collections.repeated_parameters
            )
        )
        self._sunset = behaviour.sunset
        self._gone_after_sunset = behaviour.after_sunset == "gone"
        self._removed_on = human_date(behaviour.sunset)
        self._new_pet_fields = schemas.object_fields("NewPet")
        self._new_pet_field_set = frozenset(self._new_pet_fields)
        self._integer_fields = schemas.integer_fields("NewPet")
        self._list_query = QueryValidator(OPERATIONS["listPets"], collections.repeated_parameters)
        # Scripted GET routes serve HEAD when every GET operation does.
        self.serve_head = behaviour.serve_head >= _GET_OPERATIONS
        if self.serve_head:
            self.router = ROUTER
        elif not behaviour.serve_head:
            self.router = ROUTER_WITHOUT_HEAD
        else:
            self.router = Router(OPERATIONS.values(), head=behaviour.serve_head)
        self._path_before_auth = behaviour.path_check == "before_auth"
        self._keep_unknown_fields = collections.unknown_fields == "keep"
        self._refuse_unknown_fields = collections.unknown_fields == "refuse"
        # A body without Content-Type read as JSON (behaviour.missing_content_type).
        self._json_without_type = behaviour.missing_content_type == "json"
        self._clamp_limit = behaviour.limit_above_maximum == "clamp"
        self._styles = _error_styles(
            behaviour.error_codes, behaviour.validation_status, behaviour.error_statuses
        )
        self._challenges = _challenges(behaviour.www_authenticate)
        operations: dict[str, Handler] = {
            "listPets": PetStoreService.list_pets,
            "createPet": PetStoreService.create_pet,
            "getPet": PetStoreService.get_pet,
            "listOrders": PetStoreService.list_orders,
        }
        # Each operation's handler, the sunset rule wrapped around deprecated ones:
        # ``handlers[name](service, store, call)``. Functions, not methods bound to
        # this service: a service holding its own bound methods is a reference
        # cycle, and a replaced scenario (or a deleted tenant) would wait for the
        # cyclic collector to be freed.
        self.handlers: dict[str, Handler] = {
            name: _sunset_rule(OPERATIONS[name], handler, self._sunset)
            if OPERATIONS[name].deprecated and self._gone_after_sunset
            else handler
            for name, handler in operations.items()
        }

    # -- who may call: ban, allowance, authentication, in that order -----------
    # ``identify`` counts the request; a caller not ``admitted`` is answered
    # with its ``refusal`` and nothing else happens.

    def identify(
        self, state: MockState, credentials: Credentials, client: str, now: float
    ) -> Caller:
        """Look the key up and count the request against its bucket (or its address's)."""
        key = state.keys.lookup(credentials.token) if credentials.kind == "bearer" else None
        if key is not None:
            plan = state.plans[key.plan]
            bucket = key.bucket
        else:
            plan = state.plans[self._anonymous_plan]
            if not self._anonymous_counted:
                return Caller(credentials, None, plan, UNCOUNTED)
            bucket = client_bucket(client)
        try:
            decision = state.limiter.check(bucket, plan, now)
        except OverBudget as over:  # a general limiter's counters (ratelimit:) have no room
            error = ApiError("memory_budget", f"{over}; nothing was counted")
            return ShutOut(credentials, key, plan, state.limiter.peek(bucket, plan, now), error)
        return Caller(credentials, key, plan, decision)

    def bystander(self, state: MockState, client: str, now: float) -> Caller:
        """The caller at ``client`` without a key, as the limiter stands: nothing is counted.

        For an answer to a request that failed before its caller was known.
        """
        plan = state.plans[self._anonymous_plan]
        if not self._anonymous_counted:
            return Bystander(MISSING, None, plan, UNCOUNTED)
        decision = state.limiter.peek(client_bucket(client), plan, now)
        return Bystander.uncounted(MISSING, plan, decision)

    @staticmethod
    def counted(caller: Caller) -> bool:
        """Whether the limiter counted ``caller``'s request (so an answer may give it back)."""
        return (
            type(caller) is Caller
            and caller.decision.verdict == "allowed"
            and bool(caller.decision.limit)
        )

    def refusal(self, caller: Caller, unrouted: ApiError | None = None) -> ApiError:
        """Why a caller that is not ``admitted`` is refused: 429 first, then 401.

        ``unrouted`` is the refusal of a request no operation serves (404/405):
        with ``behaviour.path_check: before_auth`` it comes before the 401.
        """
        if isinstance(caller, ShutOut):
            return caller.error
        decision = caller.decision
        if decision.verdict == "key_banned":
            return ApiError(
                "key_banned",
                f"this key is banned for {decision.retry_after} s after repeated 429s",
                status=self._ban_status,
            )
        if decision.verdict == "rate_limited":
            window = "per-day" if decision.window == "day" else "per-minute"
            error = ApiError(
                "rate_limited",
                f"{window} allowance of {decision.limit} requests used up; "
                f"retry after {decision.retry_after} s",
            )
            own = self._refusals.get(decision.blocking) if self._refusals else None
            if own is not None:  # the refusing window's own status and code, kept as worded
                return WindowRefusal(own.code, error.message, status=own.status)
            return error
        if unrouted is not None and self._path_before_auth:
            return unrouted
        assert caller.key is None, "an admitted caller has no refusal"
        kind = caller.credentials.kind
        if kind == "bearer":
            return ApiError(
                "invalid_token",
                "the API key is not valid",
                headers=self._challenges["unknown_key"],
                condition="unknown_key",
            )
        if kind == "missing":
            message = "an API key is required: send Authorization: Bearer <API_KEY>"
            condition = "missing_key"
        else:
            message = "the Authorization header must be 'Bearer <API_KEY>'"
            condition = "malformed_authorization"
        return ApiError(
            "unauthorized", message, headers=self._challenges[condition], condition=condition
        )

    def worded(self, error: ApiError) -> ApiError:
        """The refusal as this scenario's provider words it: its code and status.

        Only refusals pay for this (one lookup); the scenario's choices were
        resolved once, when the service was built.
        """
        style = self._styles.get(error.condition)
        if style is not None and type(error) is not WindowRefusal:
            error.code, status = style
            if status is not None:
                error.status = status
                if error.condition == "method_not_allowed" and status != 405:
                    # Allow belongs to a 405: a provider answering 404 lists no methods.
                    error.headers = tuple(h for h in error.headers if h[0] != b"allow")
        return error

    # -- what a request names -------------------------------------------------

    @staticmethod
    def no_operation(method: str, path: str, allow: str) -> ApiError:
        """The refusal for a path no operation or route serves: 405 if it has other methods."""
        if allow:
            return ApiError(
                "method_not_allowed",
                f"{method} is not allowed on {path}; allowed: {allow}",
                headers=((b"allow", allow.encode()),),
                value=method,
            )
        return ApiError("not_found", f"no such path: {path}", condition="unknown_path", value=path)

    def body_too_large(self) -> ApiError:
        # The rest of the body is never read, so the connection cannot carry on.
        return ApiError(
            "payload_too_large",
            f"the body is over the limit of {self.max_body_bytes} bytes",
            headers=((b"connection", b"close"),),
        )

    # -- the operations -------------------------------------------------------

    def list_pets(self, store: PetStore, call: Call) -> bytes | JsonArray:
        """The listing; a large one not yet made, for the caller to charge first (``JsonArray``)."""
        query = self.list_query(call)
        pager = self.pager
        if pager is None:
            return store.listing(query["limit"], query["status"])
        limit, status = query["limit"], query["status"]
        page, bodies = store.page(pager.position(call.query, status, limit), limit, status)
        call.answer_headers = pager.headers(
            page, call.query, status, limit, call.link_path(), call.origin()
        )
        return array_of(bodies)

    def list_query(self, call: Call) -> dict[str, Any]:
        """A listing's ``limit`` and ``status``, or the ApiError that refuses its query.

        A query the spec's rules refuse is read again as the scenario's provider reads
        it (a limit clamped, written ``7.0``, a status in capitals): only a refusal
        pays for that.
        """
        try:
            return self._list_query(call.query)
        except ApiError as refusal:
            if self._several_statuses is not None:
                # Any refusal: a lenient limit beside several statuses is refused for its limit.
                return self._several_statuses.read(call.query, refusal, self._read_list_query)
            return self._read_list_query(call.query, refusal)

    def _read_list_query(self, query: bytes, refusal: ApiError | None = None) -> dict[str, Any]:
        """``list_query`` of a query string; ``refusal``: the spec's, when already tried."""
        if refusal is None:
            try:
                return self._list_query(query)
            except ApiError as found:
                refusal = found
        condition = refusal.condition
        if condition == "limit_above_maximum" and self._clamp_limit:
            return self._list_query(_clamped(query))
        if condition in ("bad_limit", "limit_above_maximum", "bad_status_filter") and (
            self._lenient_query or self._any_case_status
        ):
            read = self._read_as_provider(query)
            if read != query:
                try:
                    return self._list_query(read)
                except ApiError as again:
                    if again.condition == "limit_above_maximum" and self._clamp_limit:
                        return self._list_query(_clamped(read))
        raise refusal

    def _read_as_provider(self, query: bytes) -> bytes:
        """``query`` with its limit and status as the provider reads them (``7.0``, ``SOLD``)."""
        pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
        read = []
        for name, value in pairs:
            if name == "limit" and self._lenient_query:
                number = integer_of(value, True)
                value = str(number) if number is not None and number >= 0 else value
            elif name == "status" and self._any_case_status:
                value = value.lower()
            read.append((name, value))
        return urlencode(read).encode("latin-1")

    def create_pet(self, store: PetStore, call: Call) -> bytes:
        try:
            pet, encoded = store.create(self.pet_to_create(call), self._max_store_bytes)
        except StoreFull as full:
            raise ApiError("store_full", str(full)) from None
        except OverBudget as over:
            raise ApiError("memory_budget", f"{over}; nothing was stored") from None
        if self._default_on_read and self._default_status is not None:
            sent = parse_json_body(call.request_body)
            if isinstance(sent, dict) and "status" not in sent:
                # The answer is the pet as sent: the default shows from the next read on.
                return pet_json({name: v for name, v in pet.items() if name != "status"})
        return encoded

    def pet_to_create(self, call: Call) -> dict[str, Any]:
        """The NewPet a create would store, or the ApiError that refuses its body."""
        if not call.request_body.strip():
            raise ApiError("missing_body", "a request body is required: a JSON NewPet object")
        if not is_json_media_type(call.content_type) and not (
            self._json_without_type and not call.content_type
        ):
            sent = call.content_type.decode("latin-1") if call.content_type else "none"
            raise ApiError(
                "unsupported_media_type",
                f"the body must be sent as application/json (Content-Type was {sent})",
                value=sent,
                parameter="Content-Type",
            )
        value = parse_json_body(call.request_body)
        intake = self._intake
        if intake is not None:
            value = intake.prepare(value)
        validate_body(OPERATIONS["createPet"], value)
        if self._refuse_unknown_fields:
            unknown = sorted(set(value) - set(self._new_pet_fields))
            if unknown:
                raise ApiError(
                    "unknown_field",
                    f"a NewPet has no field {', '.join(repr(name) for name in unknown[:5])}",
                    value=unknown[0],
                    parameter=unknown[0],
                    details=tuple(
                        FieldProblem(
                            "body",
                            (name,),
                            "additionalProperties",
                            f"a NewPet has no field {name!r}",
                            value[name],
                        )
                        for name in unknown
                    ),
                )
        pet = self.new_pet(value)
        if intake is not None:
            intake.check(pet)
        if not self._keep_unknown_fields and not value.keys() <= self._new_pet_field_set:
            # Fields the provider drops, for the answer's builder (an advisory header).
            call.dropped = tuple(sorted(value.keys() - self._new_pet_field_set))
        return pet

    def new_pet(self, value: dict[str, Any]) -> dict[str, Any]:
        """A valid NewPet as stored: its own fields (and others, if kept), the default status."""
        if self._keep_unknown_fields:
            pet = dict(value)  # the store puts the document's fields first
        else:
            pet = {name: value[name] for name in self._new_pet_fields if name in value}
        schemas.as_integers(pet, self._integer_fields)
        if "status" not in pet and self._default_status is not None:
            pet["status"] = self._default_status
        return pet

    def get_pet(self, store: PetStore, call: Call) -> bytes:
        pet_id = path_parameters(OPERATIONS["getPet"], call.params)["petId"]
        found = store.get_json(pet_id)
        if found is None:
            raise ApiError(
                "not_found",
                f"no pet with id {pet_id}",
                condition="pet_not_found",
                value=call.params.get("petId", str(pet_id)),
                parameter="petId",
            )
        return found

    def list_orders(self, store: PetStore, call: Call) -> bytes:
        # Named by the spec, never described: a scenario scripts it with a route.
        raise ApiError(
            "not_implemented",
            "GET /store/orders is named by the spec but not described; script it with a route",
        )

    def _gone(self, operation: schemas.Operation) -> ApiError:
        replacement = operation.replacement
        use = f"; use {replacement['description']}" if replacement else ""
        return ApiError(
            "gone", f"{operation.method} {operation.path} was removed on {self._removed_on}{use}"
        )
