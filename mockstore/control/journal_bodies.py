"""The JSON Schemas of what the journal's endpoints answer: an entry, a verification, a report.

Written beside the dicts they describe: ``Entry.to_dict`` (``mockstore.journal``),
``build_report`` and its parts (``mockstore.reports``), the HAR shell
(``mockstore.reports.har``). The journal's and the dashboard's endpoints
(``journal.py``, ``dashboard.py``) describe their answers with them;
``tests/test_control_document.py`` holds real answers to them, every field
named.
"""

from __future__ import annotations

from mockstore.control.operations import (
    BOOLEAN,
    INTEGER,
    NUMBER,
    STRING,
    Param,
    Schema,
    array,
    doc,
    nullable,
    obj,
    query_integer,
)
from mockstore.reports.model import SEVERITIES
from mockstore.reports.report import TIMELINE_COLUMNS
from mockstore.reports.verify import COUNTS, FIELDS
from mockstore.runs import REASONS

NULLABLE_STRING = nullable(STRING)
NULLABLE_INTEGER = nullable(INTEGER)
HEADERS = doc(
    array({"type": "array", "items": STRING, "minItems": 2, "maxItems": 2}),
    "[name, value] pairs, in order",
)

ENTRY = Schema(
    "JournalEntry",
    obj(
        {
            "seq": doc(INTEGER, "Its sequence number: grows for ever, across resets and clears"),
            "request_id": STRING,
            "time": doc(NUMBER, "The scenario clock when it arrived, Unix seconds"),
            "wall": doc(nullable(NUMBER), "The wall clock when it arrived"),
            "run": doc(INTEGER, "The run it belongs to"),
            "elapsed": doc(NUMBER, "Scenario seconds since the clock's start"),
            "operation": doc(NULLABLE_STRING, "The operationId (null: no operation)"),
            "key": doc(NULLABLE_STRING, "Its API key, masked"),
            "plan": NULLABLE_STRING,
            "client": doc(STRING, "The client's address"),
            "request": obj(
                {
                    "method": STRING,
                    "path": STRING,
                    "query": {"type": "object", "additionalProperties": STRING},
                    "query_string": STRING,
                    "headers": HEADERS,
                    "body": doc(STRING, "As text (bounded: journal.body_bytes)"),
                }
            ),
            "response": obj({"status": INTEGER, "headers": HEADERS, "body": STRING}),
            "latency_ms": NUMBER,
            "rule": doc(NULLABLE_STRING, "The fault rule or route that answered, if one did"),
            "outcome": doc(STRING, "response, or the connection fault it met"),
            "unmet": array(STRING, "verify's near misses only: the conditions it failed"),
        },
        optional=("unmet",),
        description="One recorded exchange; the key and the bearer token are masked",
    ),
)

JOURNAL = Schema(
    "Journal",
    obj(
        {
            "entries": array(ENTRY, "Oldest first"),
            "dropped": doc(INTEGER, "Entries evicted to keep within the bounds"),
            "last_seq": INTEGER,
            "size": doc(INTEGER, "The most entries it keeps"),
            "enabled": BOOLEAN,
            "bytes": INTEGER,
            "max_bytes": INTEGER,
            "run": doc({"anyOf": [INTEGER, {"const": "all"}]}, "The run selected"),
            "current_run": INTEGER,
        },
        description="The request journal, filtered",
    ),
)

_CRITERIA = {
    "operation": STRING,
    "method": STRING,
    "path": doc(STRING, "The path under the API's base path"),
    "key": doc(STRING, "The full key"),
    "status": INTEGER,
    "body_contains": doc({}, "A JSON value the request body must contain"),
}
_COUNTS = {name: {"type": "integer", "minimum": 0} for name in COUNTS}
# What verify takes is what the verifier knows (``FIELDS``, ``COUNTS``): a test keeps them one.
EXPECTATION = Schema(
    "Expectation",
    obj(
        {
            name: doc(nullable(schema), schema.get("description", "") + " (null: as if absent)")
            for name, schema in {
                **_CRITERIA,
                **_COUNTS,
                "since": doc(INTEGER, "Only requests after this seq"),
            }.items()
        },
        optional=(*FIELDS, *COUNTS, "since"),
        description="Requests to count: every condition given must hold; count, or "
        "at_least/at_most (neither: at least one)",
    )
    | {
        "additionalProperties": False,
        "dependentSchemas": {
            "count": {"not": {"anyOf": [{"required": ["at_least"]}, {"required": ["at_most"]}]}}
        },
    },
)
VERIFICATION = Schema(
    "Verification",
    obj(
        {
            "ok": BOOLEAN,
            "count": doc(INTEGER, "How many requests matched"),
            "message": doc(STRING, "What matched, and the closest that did not (empty when ok)"),
            "matched": array(INTEGER, "The seqs that matched"),
            "closest": array(ENTRY, "The near misses, each with its unmet conditions"),
        },
        description="What verify found",
    ),
)

RULE = Schema(
    "Rule",
    obj(
        {
            "id": STRING,
            "name": STRING,
            "severity": {"type": "string", "enum": list(SEVERITIES)},
            "title": STRING,
            "threshold": STRING,
        },
        description="An etiquette rule",
    ),
)
FINDING = Schema(
    "Finding",
    obj(
        {
            "id": doc(STRING, "The rule's id"),
            "rule": STRING,
            "severity": {"type": "string", "enum": list(SEVERITIES)},
            "title": STRING,
            "threshold": STRING,
            "subject": doc(STRING, "Who broke it: a masked key, an anonymous client, ..."),
            "message": STRING,
            "count": doc(INTEGER, "How many requests are its evidence"),
            "seqs": array(INTEGER, "The evidence (capped)"),
            "request_ids": array(STRING),
            "tenant": doc(NULLABLE_STRING, "Whose journal the evidence is in"),
            "details": {"type": "object"},
        },
        description="A broken etiquette rule, with its evidence",
    ),
)
_SEVERITY_COUNTS = obj({severity: INTEGER for severity in SEVERITIES})
RUN = obj(
    {
        "run": INTEGER,
        "tenant": NULLABLE_STRING,
        "requests": INTEGER,
        "reason": doc(nullable({"type": "string", "enum": list(REASONS)}), "Why it began"),
        "began_with": NULLABLE_STRING,
        "scenario": NULLABLE_STRING,
        "time": nullable(NUMBER),
    }
)
SUMMARY = obj(
    {
        "scenario": STRING,
        "requests": INTEGER,
        "first_seq": NULLABLE_INTEGER,
        "last_seq": NULLABLE_INTEGER,
        "since": NULLABLE_INTEGER,
        "journal": obj({"enabled": BOOLEAN, "size": INTEGER, "dropped": INTEGER}),
        "runs": obj(
            {
                "selected": {"anyOf": [INTEGER, {"const": "all"}]},
                "count": INTEGER,
                "latest": array(RUN, "The latest runs judged (100 at most)"),
            }
        ),
        "findings": doc(_SEVERITY_COUNTS, "Findings by severity"),
        "highest": nullable({"type": "string", "enum": list(SEVERITIES)}),
        "rules_passed": array(STRING),
        "journals": array(
            obj(
                {
                    "tenant": NULLABLE_STRING,
                    "deleted": BOOLEAN,
                    "requests": INTEGER,
                    # Each journal numbers its own entries: the range judged in it.
                    "first_seq": NULLABLE_INTEGER,
                    "last_seq": NULLABLE_INTEGER,
                }
            ),
            "With tenants: each journal covered, and the sequence numbers judged in it",
        ),
    },
    optional=("journals",),
)
_CODES = {"type": "object", "additionalProperties": INTEGER}
COVERAGE = obj(
    {
        "operations": array(
            obj(
                {
                    "operation": STRING,
                    "method": STRING,
                    "path": STRING,
                    "deprecated": BOOLEAN,
                    "requests": INTEGER,
                    "responses": array(
                        obj(
                            {
                                "status": INTEGER,
                                "documented": BOOLEAN,
                                "met": INTEGER,
                                "codes": doc(_CODES, "Error codes met, with counts"),
                                "codes_never_met": array(STRING),
                            }
                        )
                    ),
                    "unexpected": array(obj({"status": INTEGER, "met": INTEGER, "codes": _CODES})),
                }
            )
        ),
        "other": array(
            obj(
                {
                    "operation": STRING,
                    "requests": INTEGER,
                    "statuses": {"type": "object", "additionalProperties": INTEGER},
                }
            ),
            "Requests to no operation of the document",
        ),
        "never_met": array(STRING, "Documented responses no request met"),
        "possible_never_met": array(STRING),
        "documented": obj({"met": INTEGER, "total": INTEGER}),
    },
    description="Each operation's documented responses, met or not",
)
REPORT = Schema(
    "Report",
    obj(
        {
            "summary": SUMMARY,
            "findings": array(FINDING),
            "rules": array(RULE),
            "coverage": COVERAGE,
            "timeline": obj(
                {
                    "start": NUMBER,
                    "clock": {"type": "string", "enum": ["scenario", "wall"]},
                    "columns": doc(
                        {"type": "array", "items": STRING},
                        "The cells of a row: " + ", ".join(TIMELINE_COLUMNS),
                    ),
                    "rows": array(array({})),
                },
                description="With include=timeline: one row per request",
            ),
        },
        optional=("timeline",),
        description="Coverage, etiquette findings and a summary of the requests judged",
    ),
)

HAR = Schema(
    "Har",
    obj(
        {
            "log": obj(
                {
                    "version": {"const": "1.2"},
                    "creator": obj({"name": STRING, "version": STRING}),
                    "pages": array({"type": "object"}),
                    "entries": array({"type": "object"}, "HAR 1.2 entries, oldest first"),
                    "comment": STRING,
                    "_mockstore": doc(
                        {"type": "object"},
                        "What a replay needs: scenario, seed, issued keys, masking, seqs",
                    ),
                }
            )
        },
        description="The journal as HAR 1.2",
    ),
)

SINCE = Param("since", query_integer(), "Only entries after this sequence number")
RUN_PARAM = Param(
    "run",
    {"type": "string", "pattern": r"^(|all|current|[+-]?[0-9]+)$"},
    "One run: its number, or current (the one the next request joins); all (or empty) by default",
)
JOURNAL_TENANT = Param("tenant", STRING, "A tenant's journal (a deleted one's, kept, too)")
