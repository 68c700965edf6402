"""Malformed scenarios are refused with every problem, each as file:line:column: path: message.

Each case is something a user could plausibly write; the expected lines are the
whole output, so a vaguer message, a wrong position or a missing problem fails.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mockstore.scenario import (
    ScenarioError,
    bundled_names,
    load_scenario,
    load_scenario_file,
    scenario_schema,
)
from tests.support import examples

FILE = "bad.yaml"


def problems(text: str) -> list[str]:
    """The problems of a scenario text, as ``validate`` prints them."""
    with pytest.raises(ScenarioError) as caught:
        load_scenario(textwrap.dedent(text).lstrip("\n"), FILE)
    found = [str(p) for p in caught.value.problems]
    assert str(caught.value) == "\n".join(found)
    return found


CASES = {
    "wrong types": (
        """
        version: 1
        seed: seven
        isolation: per-key
        clock: {start: 2026-03-01T12:00:00Z, mode: frozen}
        keys:
          - {key: a, plan: 5}
        generate: {pets: many}
        """,
        [
            "bad.yaml:2:7: $.seed: must be an integer, got string 'seven'",
            'bad.yaml:3:12: $.isolation: must be one of "shared", "per_key", got "per-key"'
            " (did you mean 'per_key'?)",
            'bad.yaml:4:44: $.clock.mode: must be one of "running", "manual", got "frozen"',
            "bad.yaml:6:20: $.keys[0].plan: must be a mapping or a string, got integer 5",
            "bad.yaml:7:18: $.generate.pets: must be an integer, got string 'many'",
        ],
    ),
    "a number where a string is expected": (
        """
        version: 1
        faults:
          - match: {operation: listPets, query: {limit: 5}}
            respond: {status: 200, body: [], headers: {Retry-After: 2}}
        """,
        [
            "bad.yaml:3:49: $.faults[0].match.query.limit: must be a string, got integer 5"
            " (quote it: '5')",
            "bad.yaml:4:61: $.faults[0].respond.headers.Retry-After: must be a string,"
            " got integer 2 (quote it: '2')",
        ],
    ),
    "a YAML boolean where a string is expected": (
        """
        version: 1
        keys:
          - {key: yes, plan: free}
        """,
        [
            "bad.yaml:3:11: $.keys[0].key: must be a string, got boolean true"
            " (YAML reads yes/no/on/off/true/false as booleans: quote it)",
        ],
    ),
    "an integer written as a float": (
        """
        version: 1
        plans:
          gold: {per_minute: 60.0, per_day: 1000}
        """,
        ["bad.yaml:3:22: $.plans.gold.per_minute: must be an integer, got number 60.0"],
    ),
    "unknown plan name": (
        """
        version: 1
        keys:
          - {key: a, plan: gold}
          - {key: b, plan: Pro}
        anonymous_plan: platinum
        """,
        [
            "bad.yaml:3:20: $.keys[0].plan: unknown plan 'gold'"
            " (known: business, enterprise, free, pro)",
            "bad.yaml:4:20: $.keys[1].plan: unknown plan 'Pro' (did you mean 'pro'?)"
            " (known: business, enterprise, free, pro)",
            "bad.yaml:5:17: $.anonymous_plan: unknown plan 'platinum'"
            " (known: business, enterprise, free, pro)",
        ],
    ),
    "a plan defined in the file is known": (
        """
        version: 1
        plans:
          gold: {per_minute: 0, per_day: 10}
        keys:
          - {key: a, plan: gold}
          - {key: b, plan: golde}
        """,
        [
            "bad.yaml:3:22: $.plans.gold.per_minute: must be at least 1, got 0",
            "bad.yaml:6:20: $.keys[1].plan: unknown plan 'golde' (did you mean 'gold'?)"
            " (known: business, enterprise, free, gold, pro)",
        ],
    ),
    "key defined twice": (
        """
        version: 1
        keys:
          - {key: ci-key, plan: free}
          - {key: other, plan: pro}
          - {key: ci-key, plan: pro}
        """,
        ["bad.yaml:5:11: $.keys[2].key: key 'ci-key' is defined twice (first on line 3)"],
    ),
    "used allowance beyond the plan": (
        """
        version: 1
        keys:
          - {key: a, plan: free, used: {minute: 61, day: 1001}}
          - {key: b, plan: free, used: {minute: 30, day: 10}}
        """,
        [
            "bad.yaml:3:41: $.keys[0].used.minute: 61 is more than the plan's per_minute"
            " allowance (60)",
            "bad.yaml:3:50: $.keys[0].used.day: 1001 is more than the plan's per_day"
            " allowance (1000)",
            "bad.yaml:4:32: $.keys[1].used: minute (30) cannot exceed day (10)",
        ],
    ),
    "fault with both respond and fault": (
        """
        version: 1
        faults:
          - match: {operation: getPet}
            respond: {status: 200, body: {}}
            fault: connection_reset
        """,
        ["bad.yaml:3:5: $.faults[0]: a fault rule has either respond or fault, not both"],
    ),
    "fault without an action, and without a match": (
        """
        version: 1
        faults:
          - match: {operation: getPet}
          - respond: {status: 200, body: {}}
        """,
        [
            "bad.yaml:3:5: $.faults[0]: a fault rule needs respond, fault or delay",
            "bad.yaml:4:5: $.faults[1]: 'match' is required",
        ],
    ),
    "probability outside 0..1": (
        """
        version: 1
        faults:
          - match: {operation: getPet, probability: 1.5}
            fault: connection_reset
          - match: {operation: getPet, probability: -0.1}
            fault: connection_reset
          - match: {operation: getPet, probability: 10%}
            fault: connection_reset
        """,
        [
            "bad.yaml:3:45: $.faults[0].match.probability: must be at most 1, got 1.5",
            "bad.yaml:5:45: $.faults[1].match.probability: must be at least 0, got -0.1",
            "bad.yaml:7:45: $.faults[2].match.probability: must be a number, got string '10%'",
        ],
    ),
    "calls not positive integers": (
        """
        version: 1
        faults:
          - match: {operation: createPet, calls: [0, 2.5, third]}
            fault: empty_response
          - match: {operation: createPet, calls: 3}
            fault: empty_response
          - match: {operation: createPet, calls: []}
            fault: empty_response
          - match: {operation: createPet, from_call: 5, until_call: 2, every: 0}
            fault: empty_response
        """,
        [
            "bad.yaml:3:43: $.faults[0].match.calls[0]: must be at least 1, got 0",
            "bad.yaml:3:46: $.faults[0].match.calls[1]: must be an integer, got number 2.5",
            "bad.yaml:3:51: $.faults[0].match.calls[2]: must be an integer, got string 'third'",
            "bad.yaml:5:42: $.faults[1].match.calls: must be a list, got integer 3",
            "bad.yaml:7:42: $.faults[2].match.calls: must have at least 1 item(s), got 0",
            "bad.yaml:9:46: $.faults[3].match.from_call: from_call must not be after until_call",
            "bad.yaml:9:71: $.faults[3].match.every: must be at least 1, got 0",
        ],
    ),
    "from_call after until_call": (
        """
        version: 1
        faults:
          - match: {operation: createPet, from_call: 5, until_call: 2}
            fault: empty_response
          - match: {operation: createPet, between_seconds: [90, 30]}
            fault: empty_response
        """,
        [
            "bad.yaml:3:46: $.faults[0].match.from_call: from_call must not be after until_call",
            "bad.yaml:5:52: $.faults[1].match.between_seconds: the start must be before the end",
        ],
    ),
    "clock start that is not a time": (
        """
        version: 1
        clock: {start: tomorrow}
        behaviour:
          deprecated_since: 2026-01-01
          sunset: 2030-13-45T00:00:00Z
        """,
        [
            "bad.yaml:2:16: $.clock.start: not a date-time: 'tomorrow'; write an RFC 3339"
            " instant such as 2026-03-01T12:00:00Z",
            "bad.yaml:4:21: $.behaviour.deprecated_since: not a date-time: '2026-01-01';"
            " write an RFC 3339 instant such as 2026-03-01T12:00:00Z",
            "bad.yaml:5:11: $.behaviour.sunset: not a valid date-time: '2030-13-45T00:00:00Z'"
            " (month must be in 1..12)",
        ],
    ),
    "pets with duplicate ids or invalid fields": (
        """
        version: 1
        pets:
          - {id: 1, name: Rex, categoryId: 1}
          - {id: 1, name: Twin, categoryId: 1}
          - {id: 2, name: 5, categoryId: dogs, status: lost}
          - {id: 3, categoryId: 1}
          - {id: 4, name: Max, categoryID: 1}
          - {id: 9223372036854775808, name: Huge, categoryId: 1}
          - Rex
        """,
        [
            "bad.yaml:4:10: $.pets[1].id: pet id 1 is used twice (first on line 3)",
            "bad.yaml:5:19: $.pets[2].name: not a valid Pet: name must be of type string,"
            " got integer",
            "bad.yaml:5:34: $.pets[2].categoryId: not a valid Pet: categoryId must be of type"
            " integer, got string",
            "bad.yaml:5:48: $.pets[2].status: not a valid Pet: status must be one of:"
            ' available, pending, sold (got "lost")',
            "bad.yaml:6:5: $.pets[3]: not a valid Pet: name is required",
            "bad.yaml:7:5: $.pets[4]: not a valid Pet: categoryId is required",
            "bad.yaml:7:24: $.pets[4].categoryID: unknown Pet field 'categoryID'"
            " (did you mean 'categoryId'?) (a Pet has categoryId, id, name, status)",
            "bad.yaml:8:10: $.pets[5].id: not a valid Pet: id is out of the int64 range"
            " (got 9223372036854775808)",
            "bad.yaml:9:5: $.pets[6]: must be a mapping, got string 'Rex'",
        ],
    ),
    "YAML syntax error: unclosed flow mapping": (
        """
        version: 1
        keys:
          - {key: a, plan: free
        name: broken
        """,
        [
            "bad.yaml:4:5: $: YAML syntax error: expected ',' or '}', but got ':'"
            " (while parsing a flow mapping that starts at line 3, column 5)",
        ],
    ),
    "YAML syntax error: bad indentation": (
        """
        version: 1
        name: x
          seed: 3
        """,
        [
            "bad.yaml:3:7: $: YAML syntax error: mapping values are not allowed here;"
            " check the indentation, or quote a value that holds ': '",
        ],
    ),
    "YAML syntax error: a tab": (
        "version: 1\nclock:\n\tmode: manual\n",
        [
            "bad.yaml:3:1: $: YAML syntax error: found character '\\t' that cannot start"
            " any token; indent with spaces: YAML does not allow tabs",
        ],
    ),
    "YAML syntax error: unterminated quote": (
        """
        version: 1
        name: 'flaky
        """,
        [
            "bad.yaml:3:1: $: YAML syntax error: found the end of the file"
            " (while scanning a quoted value that starts at line 2, column 7)",
        ],
    ),
    "two documents in one file": (
        """
        version: 1
        ---
        version: 1
        """,
        ["bad.yaml:2:1: $: a scenario file holds one YAML document; a second starts here"],
    ),
    "unknown key typo probabilty": (
        """
        version: 1
        faults:
          - match: {operation: listPets, probabilty: 0.1}
            delay: {fixed_ms: 5}
        """,
        [
            "bad.yaml:3:34: $.faults[0].match.probabilty: unknown key 'probabilty'"
            " (did you mean 'probability'?)",
        ],
    ),
    "unknown keys at several levels": (
        """
        version: 1
        fault: []
        behavior: {}
        clock: {start: 2026-03-01T12:00:00Z, timezone: UTC}
        """,
        [
            "bad.yaml:2:1: $.fault: unknown key 'fault' (did you mean 'faults'?)",
            "bad.yaml:3:1: $.behavior: unknown key 'behavior' (did you mean 'behaviour'?)",
            "bad.yaml:4:38: $.clock.timezone: unknown key 'timezone'",
        ],
    ),
    "unsafe tag refused": (
        """
        version: 1
        name: !!python/object/apply:os.system ['echo pwned']
        description: !!python/name:os.system
        seed: !!binary aGVsbG8=
        pets: !!set {a, b}
        """,
        [
            "bad.yaml:2:7: $.name: the tag '!!python/object/apply:os.system' is not allowed:"
            " a scenario holds plain YAML data only (mappings, lists, strings, numbers,"
            " booleans, null)",
            "bad.yaml:3:14: $.description: the tag '!!python/name:os.system' is not allowed:"
            " a scenario holds plain YAML data only (mappings, lists, strings, numbers,"
            " booleans, null)",
            "bad.yaml:4:7: $.seed: the tag '!!binary' is not allowed: a scenario holds plain"
            " YAML data only (mappings, lists, strings, numbers, booleans, null)",
            "bad.yaml:5:7: $.pets: the tag '!!set' is not allowed: a scenario holds plain"
            " YAML data only (mappings, lists, strings, numbers, booleans, null)",
        ],
    ),
    "duplicate YAML keys": (
        """
        version: 1
        name: first
        seed: 1
        name: second
        keys:
          - {key: a, plan: free, plan: pro}
        """,
        [
            "bad.yaml:4:1: $.name: duplicate key 'name' (first given on line 2)",
            "bad.yaml:6:26: $.keys[0].plan: duplicate key 'plan' (first given on line 6)",
        ],
    ),
    "recursive alias": (
        """
        version: 1
        x-loop: &loop [*loop]
        """,
        ["bad.yaml:2:9: $.x-loop[0]: this alias refers to a node that contains it"],
    ),
    "empty file": (
        "",
        ["bad.yaml:1:1: $: the file is empty: a scenario needs at least 'version: 1'"],
    ),
    "only comments": (
        "# yaml-language-server: $schema=https://mockstore.dev/schema/scenario-v1.json\n",
        ["bad.yaml:1:1: $: the file is empty: a scenario needs at least 'version: 1'"],
    ),
    "not a mapping": (
        "- version: 1\n",
        [
            "bad.yaml:1:1: $: not a scenario: the file holds a list of 1 item, "
            "where a scenario is a mapping that starts with version: 1"
        ],
    ),
    "no version": (
        "name: x\n",
        ["bad.yaml:1:1: $: 'version' is required: start the file with version: 1"],
    ),
    "a future version": ("version: 2\n", ["bad.yaml:1:10: $.version: must be 1, got 2"]),
    "error status reply without an Error body": (
        """
        version: 1
        faults:
          - match: {operation: getPet}
            respond: {status: 503}
          - match: {operation: listPets}
            respond: {status: 500, body: {message: boom}}
          - match: {operation: createPet}
            respond: {status: 503, body: {code: down, message: later, status: 500}}
        routes:
          - operation: listOrders
            respond: {status: 404, body: nothing here}
        """,
        [
            "bad.yaml:4:14: $.faults[0].respond: an error status (503) needs an Error body"
            " {code, message, status: 503} (or raw: true)",
            "bad.yaml:6:34: $.faults[1].respond.body: not an Error: code is required",
            "bad.yaml:6:34: $.faults[1].respond.body: not an Error: status is required",
            "bad.yaml:8:71: $.faults[2].respond.body.status: Error status 500 differs from"
            " the response status 503",
            "bad.yaml:11:34: $.routes[0].respond.body: not an Error: body must be of type"
            " object, got string",
        ],
    ),
    "a fault naming a key or plan that does not exist": (
        """
        version: 1
        keys:
          - {key: pro-key, plan: pro}
        faults:
          - match: {key: pro_key, plan: gold}
            fault: connection_reset
        """,
        [
            "bad.yaml:5:18: $.faults[0].match.key: key 'pro_key' is not defined under keys"
            " (did you mean 'pro-key'?)",
            "bad.yaml:5:33: $.faults[0].match.plan: unknown plan 'gold'"
            " (known: business, enterprise, free, pro)",
        ],
    ),
    "operation and method+path together; a path under the base path": (
        """
        version: 1
        faults:
          - match: {operation: getPet, method: GET, path: "/pets/{petId}"}
            fault: connection_reset
          - match: {method: get, path: /v1/pets}
            fault: connection_reset
        routes:
          - {operation: listOrders, method: GET, path: /store/orders, respond: {status: 200}}
          - {method: GET, respond: {status: 200}}
        """,
        [
            "bad.yaml:3:12: $.faults[0].match: use operation, or method and path, not both",
            "bad.yaml:5:21: $.faults[1].match.method: must be an upper-case HTTP method such"
            " as GET or POST",
            "bad.yaml:5:32: $.faults[1].match.path: paths are relative to base_path /v1:"
            " write '/pets'",
            "bad.yaml:8:5: $.routes[0]: a route needs either operation, or method and path"
            " (not both)",
            "bad.yaml:9:5: $.routes[1]: a route needs either operation, or method and path"
            " (not both)",
        ],
    ),
    "two delays in one rule": (
        """
        version: 1
        faults:
          - match: {operation: listPets}
            delay: {fixed_ms: 100, uniform_ms: [200, 100]}
          - match: {operation: listPets}
            delay: {}
          - match: {operation: listPets}
            delay: {uniform_ms: [200, 100]}
        """,
        [
            "bad.yaml:4:12: $.faults[0].delay: give only one of fixed_ms, uniform_ms or lognormal",
            "bad.yaml:4:40: $.faults[0].delay.uniform_ms: the low bound is above the high",
            "bad.yaml:6:12: $.faults[1].delay: give one of fixed_ms, uniform_ms or lognormal",
            "bad.yaml:8:25: $.faults[2].delay.uniform_ms: the low bound is above the high",
        ],
    ),
    "names and paths that cannot work": (
        """
        version: 1
        name: Flaky Create
        base_path: /v1/
        plans:
          Gold Plan: {per_minute: 1, per_day: 1}
        keys:
          - {key: "has space", plan: free}
        """,
        [
            "bad.yaml:2:7: $.name: must be lower-case letters, digits, '.', '_' or '-',"
            " starting with a letter or digit",
            "bad.yaml:3:12: $.base_path: must be a path such as /v1 (segments of letters,"
            " digits, '.', '_', '~' or '-'; no trailing /)",
            "bad.yaml:5:3: $.plans.Gold Plan: a plan name must be lower-case letters,"
            " digits, '_' or '-'",
            "bad.yaml:7:11: $.keys[0].key: a key may hold only letters, digits and"
            " . _ ~ + / = - (it is sent as a bearer token)",
        ],
    ),
    "scripted headers the server could not send": (
        """
        version: 1
        routes:
          - operation: listOrders
            respond:
              status: 200
              body: []
              headers: {Content-Length: "3", X Bad: a, X-Snow: "\u2603"}
        """,
        [
            "bad.yaml:7:17: $.routes[0].respond.headers.Content-Length: Content-Length is set"
            " by the server from the body; remove it",
            "bad.yaml:7:38: $.routes[0].respond.headers.X Bad: 'X Bad' is not a valid HTTP"
            " header name",
            "bad.yaml:7:56: $.routes[0].respond.headers.X-Snow: a header value must be one"
            " line of Latin-1 text",
        ],
    ),
    "the control API's prefix as base path": (
        "version: 1\nbase_path: /__mockstore\n",
        ["bad.yaml:2:12: $.base_path: must not be under /__mockstore (the control API)"],
    ),
}


@pytest.mark.parametrize("text, expected", CASES.values(), ids=list(CASES))
def test_malformed_scenario_gets_precise_problems(text: str, expected: list[str]) -> None:
    assert problems(text) == expected


def test_schema_and_semantic_problems_are_reported_together() -> None:
    """One run shows every error: a schema problem does not hide the semantic ones."""
    found = problems(
        """
        version: 1
        seed: x
        keys:
          - {key: a, plan: gold}
          - {key: a, plan: free}
        faults:
          - match: {operation: getPet, probabilty: 0.5}
            fault: connection_reset
          - match: {key: nobody}
            fault: connection_reset
        pets:
          - {id: 1, name: Rex, categoryId: 1}
          - {id: 1, name: Rex, categoryId: 1}
        """
    )
    assert found == [
        "bad.yaml:2:7: $.seed: must be an integer, got string 'x'",
        "bad.yaml:4:20: $.keys[0].plan: unknown plan 'gold' (known: business, enterprise,"
        " free, pro)",
        "bad.yaml:5:11: $.keys[1].key: key 'a' is defined twice (first on line 4)",
        "bad.yaml:7:32: $.faults[0].match.probabilty: unknown key 'probabilty'"
        " (did you mean 'probability'?)",
        "bad.yaml:9:18: $.faults[1].match.key: key 'nobody' is not defined under keys",
        "bad.yaml:13:10: $.pets[1].id: pet id 1 is used twice (first on line 12)",
    ]


def test_a_part_the_schema_refused_is_not_checked_again() -> None:
    """No second, confusing message about a value the schema already reported."""
    found = problems(
        """
        version: 1
        keys:
          - {key: a, plan: {per_minute: 0, per_day: 5}}
        faults:
          - match: {key: a}
            respond: {status: five}
        """
    )
    assert found == [
        "bad.yaml:3:33: $.keys[0].plan.per_minute: must be at least 1, got 0",
        "bad.yaml:6:23: $.faults[0].respond.status: must be an integer, got string 'five'",
    ]


def test_merge_keys_may_override_without_being_duplicates() -> None:
    """Anchors under x- keys and YAML merge keys are the way to share a match."""
    scenario = load_scenario(
        textwrap.dedent(
            """
            version: 1
            x-pro-create: &pro-create {operation: createPet, plan: pro}
            faults:
              - match: {<<: *pro-create, calls: [1]}
                respond: {status: 200, body: []}
              - match: {<<: *pro-create, plan: free}
                fault: empty_response
            """
        ),
        FILE,
    )
    first, second = scenario.faults
    assert (first.match.operation, first.match.plan, first.match.calls) == (
        "createPet",
        "pro",
        frozenset({1}),
    )
    assert (second.match.operation, second.match.plan) == ("createPet", "free")


def test_an_alias_bomb_is_refused_not_expanded() -> None:
    lines = ["version: 1", "x-0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for level in range(1, 9):
        lines.append(f"x-{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    found = problems("\n".join(lines) + "\n")
    # Refused while it is read, where the expansion passes the bound.
    assert found == [
        "bad.yaml:7:21: $: YAML: the document expands to more than 300,000 values (aliases?); "
        "a scenario within its bounds needs far fewer"
    ]


def test_control_characters_are_reported_at_their_position() -> None:
    assert problems("version: 1\nname: a\x07b\n") == [
        "bad.yaml:2:8: $: YAML: the character #x0007 is not allowed"
    ]


# -- properties over many inputs ---------------------------------------------

_IDENTIFIER = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=12)
_MATCH_KEYS = set(
    scenario_schema()["properties"]["faults"]["items"]["properties"]["match"]["properties"]
)


@settings(max_examples=examples(60), deadline=None)
@given(
    typo=_IDENTIFIER.filter(lambda word: word not in _MATCH_KEYS),
    indent=st.integers(0, 6),
)
def test_any_unknown_match_key_is_refused_at_its_own_position(typo: str, indent: int) -> None:
    pad = " " * indent
    text = (
        "version: 1\n"
        "faults:\n"
        f"{pad}- match:\n"
        f"{pad}    operation: getPet\n"
        f"{pad}    {typo}: 1\n"
        f"{pad}  fault: connection_reset\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(text, FILE)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (5, indent + 5)
    assert problem.path == f"$.faults[0].match.{typo}"
    assert problem.message.startswith(f"unknown key {typo!r}")


@settings(max_examples=examples(60), deadline=None)
@given(
    probability=st.floats(allow_nan=False, allow_infinity=False).filter(lambda p: p < 0 or p > 1)
)
def test_any_probability_outside_zero_to_one_is_refused(probability: float) -> None:
    text = (
        "version: 1\nfaults:\n"
        f"  - match: {{operation: getPet, probability: {probability!r}}}\n"
        "    fault: connection_reset\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(text, FILE)
    (problem,) = caught.value.problems
    assert problem.path == "$.faults[0].match.probability"
    assert problem.line == 3
    bound = "at most 1" if probability > 1 else "at least 0"
    assert problem.message.startswith(f"must be {bound}, got ")


@settings(max_examples=examples(40), deadline=None)
@given(probability=st.floats(0, 1), calls=st.lists(st.integers(1, 10**6), min_size=1, max_size=5))
def test_every_in_range_probability_and_positive_calls_load(
    probability: float, calls: list[int]
) -> None:
    text = (
        "version: 1\nfaults:\n"
        f"  - match: {{operation: getPet, probability: {probability!r}, calls: {calls}}}\n"
        "    fault: connection_reset\n"
    )
    (rule,) = load_scenario(text, FILE).faults
    assert rule.match.probability == probability
    assert rule.match.calls == frozenset(calls)


_JSONISH = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=6),
        st.sampled_from(["free", "pro", "getPet", "connection_reset", "2026-03-01T12:00:00Z"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.sampled_from(
                [
                    "key",
                    "plan",
                    "match",
                    "respond",
                    "status",
                    "body",
                    "operation",
                    "id",
                    "name",
                    "categoryId",
                    "calls",
                    "probability",
                    "per_minute",
                    "per_day",
                    "start",
                    "delay",
                    "fixed_ms",
                    "used",
                    "minute",
                    "day",
                ]
            ),
            children,
            max_size=4,
        ),
    ),
    max_leaves=10,
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=st.dictionaries(
        st.sampled_from([*scenario_schema()["properties"], "x-shared", "extra"]),
        _JSONISH,
        max_size=6,
    )
)
def test_any_document_either_loads_or_gives_well_formed_problems(document: dict) -> None:
    """Whatever a user writes, the loader answers with problems, never a crash."""
    document.setdefault("version", 1)
    text = json.dumps(document)
    try:
        load_scenario(text, FILE)
    except ScenarioError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.file == FILE
            assert problem.line >= 1 and problem.column >= 1
            assert problem.path.startswith("$")
            assert problem.message


# -- the schema itself ---------------------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema_with_its_published_id() -> None:
    schema = scenario_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "https://mockstore.dev/schema/scenario-v1.json"


@pytest.mark.parametrize("name", bundled_names())
def test_every_bundled_scenario_validates(name: str) -> None:
    assert load_scenario_file(name).name == name


@pytest.mark.parametrize(
    ("behaviour", "where", "message"),
    [
        (
            "headers: [{name: Content-Type, value: text/plain}]",
            "$.behaviour.headers[0].name",
            "mockstore writes Content-Type itself: set it with behaviour.content_type",
        ),
        (
            "request_id: {header: X-Trace-Id}\n  headers: [{name: x-trace-id, value: '1'}]",
            "$.behaviour.headers[0].name",
            "set it with behaviour.request_id",
        ),
        (
            "error_fields: [{name: code, value: X}]",
            "$.behaviour.error_fields[0].name",
            "one of the Error's own fields",
        ),
        (
            "retry_after_banned: none",
            "$.behaviour.retry_after_banned",
            "'none' needs ban.status other than 429",
        ),
        (
            "deprecation_link: '<{base}/pets>; rel=\"successor-version\"'",
            "$.behaviour.deprecation_link",
            "{base} names nothing",
        ),
    ],
)
def test_a_provider_profile_that_cannot_be_served_is_refused_with_its_place(
    behaviour: str, where: str, message: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(f"version: 1\nbehaviour:\n  {behaviour}\n", "provider.yaml")
    (problem,) = caught.value.problems
    assert problem.path == where and message in problem.message, str(problem)
    assert problem.file == "provider.yaml" and problem.line >= 2
