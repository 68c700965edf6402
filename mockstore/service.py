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
from typing import Any

from mockstore import schemas
from mockstore.clock import format_time
from mockstore.errors import ApiError
from mockstore.keys import MISSING, ApiKey, Credentials, client_bucket, key_bucket
from mockstore.ratelimit import Decision, Plan
from mockstore.routing import Router
from mockstore.scenario.model import Scenario
from mockstore.state import MockState
from mockstore.store import PetStore, StoreFull
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

_WWW_MISSING = ((b"www-authenticate", b'Bearer realm="petstore"'),)
_WWW_INVALID = ((b"www-authenticate", b'Bearer realm="petstore", error="invalid_token"'),)


class Caller:
    """Who sent a request, as the limiter counted it.

    ``key`` is None for a caller without a valid key (counted per client
    address on the scenario's anonymous plan); ``decision`` is the limiter's
    verdict and the figures every header of the answer states.
    """

    __slots__ = ("credentials", "decision", "key", "plan")

    def __init__(
        self, credentials: Credentials, key: ApiKey | None, plan: Plan, decision: Decision
    ) -> None:
        self.credentials = credentials
        self.key = key
        self.plan = plan
        self.decision = decision


class Call:
    """What an operation reads from one request, taken apart by the HTTP layer."""

    __slots__ = ("body", "content_type", "now", "params", "query")

    def __init__(
        self,
        now: float,
        query: bytes = b"",
        params: dict[str, str] | None = None,
        body: bytes = b"",
        content_type: bytes | None = None,
    ) -> None:
        self.now = now
        self.query = query
        self.params = params or {}
        self.body = body
        self.content_type = content_type


Handler = Callable[[PetStore, Call], bytes]


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
        self._ban_status = scenario.ban.status if scenario.ban else None
        self._default_status = behaviour.default_status
        self._sunset = behaviour.sunset
        self._gone_after_sunset = behaviour.after_sunset == "gone"
        self._removed_on = human_date(behaviour.sunset)
        self._new_pet_fields = schemas.object_fields("NewPet")
        self._integer_fields = schemas.integer_fields("NewPet")
        self._list_query = QueryValidator(OPERATIONS["listPets"])
        self.handlers: dict[str, Handler] = {
            "listPets": self.list_pets,
            "createPet": self.create_pet,
            "getPet": self.get_pet,
            "listOrders": self.list_orders,
        }

    # -- who may call: ban, allowance, authentication, in that order -----------

    def identify(
        self, state: MockState, credentials: Credentials, client: str, now: float
    ) -> Caller:
        """Look the key up and count the request against its bucket (or its address's)."""
        key = state.keys.lookup(credentials.token) if credentials.kind == "bearer" else None
        if key is not None:
            plan = state.plans[key.plan]
            bucket = key_bucket(key.key)
        else:
            plan = state.plans[self._anonymous_plan]
            bucket = client_bucket(client)
        return Caller(credentials, key, plan, state.limiter.check(bucket, plan, now))

    def bystander(self, state: MockState, client: str, now: float) -> Caller:
        """The caller at ``client`` without a key, as the limiter stands: nothing is counted.

        For an answer to a request that failed before its caller was known.
        """
        plan = state.plans[self._anonymous_plan]
        decision = state.limiter.peek(client_bucket(client), plan, now)
        return Caller(MISSING, None, plan, decision)

    def authorize(self, caller: Caller) -> None:
        """Raise the refusal a caller gets before any operation: 429 first, then 401."""
        decision = caller.decision
        if decision.verdict == "key_banned":
            raise ApiError(
                "key_banned",
                f"this key is banned for {decision.retry_after} s after repeated 429s",
                status=self._ban_status,
            )
        if decision.verdict == "rate_limited":
            window = "per-day" if decision.window == "day" else "per-minute"
            raise ApiError(
                "rate_limited",
                f"{window} allowance of {decision.limit} requests used up; "
                f"retry after {decision.retry_after} s",
            )
        if caller.key is not None:
            return
        kind = caller.credentials.kind
        if kind == "bearer":
            raise ApiError("invalid_token", "the API key is not valid", headers=_WWW_INVALID)
        if kind == "missing":
            message = "an API key is required: send Authorization: Bearer <API_KEY>"
        else:
            message = "the Authorization header must be 'Bearer <API_KEY>'"
        raise ApiError("unauthorized", message, headers=_WWW_MISSING)

    # -- what a request names -------------------------------------------------

    @staticmethod
    def no_operation(method: str, path: str, allow: str) -> ApiError:
        """The refusal for a path no operation or route serves: 405 if it has other methods."""
        if allow:
            return ApiError(
                "method_not_allowed",
                f"{method} is not allowed on {path}; allowed: {allow}",
                headers=((b"allow", allow.encode()),),
            )
        return ApiError("not_found", f"no such path: {path}")

    def body_too_large(self) -> ApiError:
        # The rest of the body is never read, so the connection cannot carry on.
        return ApiError(
            "payload_too_large",
            f"the body is over the limit of {self.max_body_bytes} bytes",
            headers=((b"connection", b"close"),),
        )

    # -- the operations -------------------------------------------------------

    def call(self, operation: schemas.Operation, store: PetStore, call: Call) -> bytes:
        """Run an operation: its JSON answer (the status is the operation's), or ApiError."""
        if operation.deprecated and self._gone_after_sunset and call.now >= self._sunset:
            raise self._gone(operation)
        return self.handlers[operation.operation_id](store, call)

    def list_pets(self, store: PetStore, call: Call) -> bytes:
        query = self._list_query(call.query)
        return store.list_json(query["limit"], query["status"])

    def create_pet(self, store: PetStore, call: Call) -> bytes:
        if not call.body.strip():
            raise ApiError("missing_body", "a request body is required: a JSON NewPet object")
        if not is_json_media_type(call.content_type):
            sent = call.content_type.decode("latin-1") if call.content_type else "none"
            raise ApiError(
                "unsupported_media_type",
                f"the body must be sent as application/json (Content-Type was {sent})",
            )
        value = parse_json_body(call.body)
        validate_body(OPERATIONS["createPet"], value)
        try:
            _, encoded = store.create(self.new_pet(value), self._max_store_bytes)
        except StoreFull as full:
            raise ApiError("store_full", str(full)) from None
        return encoded

    def new_pet(self, value: dict[str, Any]) -> dict[str, Any]:
        """A valid NewPet as stored: its own fields only, integers as ints, the default status."""
        pet = {name: value[name] for name in self._new_pet_fields if name in value}
        schemas.as_integers(pet, self._integer_fields)
        if "status" not in pet and self._default_status is not None:
            pet["status"] = self._default_status
        return pet

    def get_pet(self, store: PetStore, call: Call) -> bytes:
        pet_id = path_parameters(OPERATIONS["getPet"], call.params)["petId"]
        found = store.get_json(pet_id)
        if found is None:
            raise ApiError("not_found", f"no pet with id {pet_id}")
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
