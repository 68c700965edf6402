"""The report as JUnit XML, for the test tabs of CI systems.

Two suites: ``mockstore.etiquette`` has one failing test case per finding and
one passing case per rule that found nothing, so the tab lists every rule
either way; ``mockstore.coverage`` has one case per documented response of
each operation, *skipped* when the client never met it (a gap to know about,
not a failure).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import Any


def render_junit(report: dict[str, Any], now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites", name="mockstore")

    findings = report["findings"]
    rules = report["rules"]
    passed = [r for r in rules if r["id"] in report["summary"]["rules_passed"]]
    etiquette = ET.SubElement(
        root,
        "testsuite",
        name="mockstore.etiquette",
        tests=str(len(findings) + len(passed)),
        failures=str(len(findings)),
        errors="0",
        skipped="0",
        timestamp=stamp,
    )
    for finding in findings:
        case = ET.SubElement(
            etiquette,
            "testcase",
            classname=f"mockstore.etiquette.{finding['id']}",
            name=f"{finding['id']} {finding['rule']}: {finding['subject']}",
            time="0",
        )
        failure = ET.SubElement(
            case,
            "failure",
            message=f"[{finding['severity']}] {finding['message']}",
            type=finding["severity"],
        )
        seqs = " ".join(f"#{s}" for s in finding["seqs"])
        ids = " ".join(finding["request_ids"])
        failure.text = (
            f"{finding['title']} ({finding['severity']})\n"
            f"{finding['message']}\n\n"
            f"rule: {finding['threshold']}\n"
            f"evidence ({finding['count']} request(s)): {seqs}\n"
            f"request ids: {ids}\n"
        )
    for rule in passed:
        ET.SubElement(
            etiquette,
            "testcase",
            classname=f"mockstore.etiquette.{rule['id']}",
            name=f"{rule['id']} {rule['name']}",
            time="0",
        )

    operations = report["coverage"]["operations"]
    cases = [(op, r) for op in operations for r in op["responses"] if r["documented"]]
    never = sum(1 for _, r in cases if not r["met"])
    coverage = ET.SubElement(
        root,
        "testsuite",
        name="mockstore.coverage",
        tests=str(len(cases)),
        failures="0",
        errors="0",
        skipped=str(never),
        timestamp=stamp,
    )
    for op, response in cases:
        case = ET.SubElement(
            coverage,
            "testcase",
            classname=f"mockstore.coverage.{op['operation']}",
            name=f"{op['operation']} {response['status']}",
            time="0",
        )
        if not response["met"]:
            ET.SubElement(
                case,
                "skipped",
                message=f"the client never met a {response['status']} on {op['operation']}",
            )
    total_failures = len(findings)
    root.set("tests", str(len(findings) + len(passed) + len(cases)))
    root.set("failures", str(total_failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
