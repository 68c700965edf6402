// Findings and coverage, from GET /__mockstore/report (every run, each judged
// on its own, or this run only: ?run=current), kept fresh while traffic
// arrives. A report reads the whole journal (about 0.1 s of server time for
// 10,000 entries), so it is asked for again only when there are new requests,
// and at most once per 25 times the last one took while the Findings tab is
// shown (once per 100 times, for the tab's count, while it is not): the page
// costs the server about 1% however busy it is.

import { $, h, number } from "./dom.js";
import { PREFIX, authHeaders, get, describe, token } from "./api.js";
import * as traffic from "./traffic.js";

// [minimum wait, multiple of the last report's duration], shown and not shown.
const PACE = { shown: [3000, 25], hidden: [15000, 100] };
const EVIDENCE_LINKS = 12;

let latestSeq = 0; // the newest request the page knows of
let reportedSeq = -1; // the newest one the shown report covers
let nextAllowed = 0;
let busy = false;
let lastShown = ""; // the findings and coverage on the page, as JSON

/** Note that the journal holds requests up to ``seq`` (from the stream). */
export function sawRequest(seq) {
  latestSeq = Math.max(latestSeq, seq);
}

/** Fetch the report when it may be stale and the cost budget allows. */
let again = false; // a forced refresh was asked for while one was under way

export async function maybeRefresh(force = false) {
  if (busy) {
    again = again || force;
    return;
  }
  if (!force && (latestSeq === reportedSeq || performance.now() < nextAllowed)) return;
  busy = true;
  const started = performance.now();
  const covering = latestSeq;
  try {
    const report = await get($("findings-run").value === "current" ? "/report?run=current" : "/report");
    reportedSeq = Math.max(covering, report.summary.last_seq ?? 0);
    draw(report);
  } catch (error) {
    $("report-stats").textContent = describe(error);
  } finally {
    const took = performance.now() - started;
    const [least, factor] = $("panel-findings").hidden ? PACE.hidden : PACE.shown;
    nextAllowed = performance.now() + Math.max(least, took * factor);
    busy = false;
    if (again) {
      again = false;
      maybeRefresh(true);
    }
  }
}

/** Which runs the report judged, in words: every rule judges within a run. */
function scope(runs) {
  if (runs.selected === "all") {
    return runs.count === 1 ? "Judged: one run." : `Judged: all ${number(runs.count)} runs, each on its own.`;
  }
  const run = runs.latest.find((r) => r.run === runs.selected);
  const began = run && run.began_with ? ` (begun by ${run.began_with})` : "";
  return `Judged: run ${runs.selected} only${began}.`;
}

function draw(report) {
  const s = report.summary;
  $("report-stats").textContent = `${number(s.requests)} requests judged`;
  $("findings-scope").textContent = scope(s.runs);
  const counts = s.findings;
  const total = counts.error + counts.warning + counts.info;
  $("findings-count").textContent = total ? `(${total})` : "";
  $("findings-summary").textContent = total
    ? `${counts.error} error(s), ${counts.warning} warning(s), ${counts.info} info. Rules passed: ${s.rules_passed.join(", ") || "none"}.`
    : "No findings: every etiquette rule passed.";
  // Redrawn only when they changed, and with the focus put back where it was:
  // a keyboard user's place must survive a refresh.
  const shown = JSON.stringify([report.findings, report.coverage]);
  if (shown === lastShown) return;
  lastShown = shown;
  const focused = document.activeElement?.dataset?.focus;
  $("findings").replaceChildren(...report.findings.map(renderFinding));
  drawCoverage(report.coverage);
  if (focused) document.querySelector(`[data-focus="${CSS.escape(focused)}"]`)?.focus();
}

function renderFinding(f) {
  const place = `${f.id}-${f.subject}`;
  const links = f.seqs.slice(0, EVIDENCE_LINKS).map((seq) =>
    h("button", { type: "button", className: "link", "aria-label": `Show request ${seq}`, "data-focus": `${place}-${seq}`, onclick: () => showRequest(seq, f.tenant) }, `#${seq}`));
  const more = f.count > EVIDENCE_LINKS ? ` and ${number(f.count - EVIDENCE_LINKS)} more` : "";
  return h("article", { className: `finding sev-${f.severity}`, id: `finding-${place}` },
    h("h3", {}, h("span", { className: "sev" }, f.severity), `${f.id} ${f.rule}: ${f.title}`),
    h("p", {}, h("strong", {}, f.subject), ` — ${f.message}`),
    h("p", { className: "evidence" }, `Proved by ${number(f.count)} request(s): `, ...links.flatMap((l) => [l, " "]), more,
      h("button", { type: "button", className: "link", "data-focus": `${place}-all`, onclick: () => showAll(f) }, "show them in the traffic list")),
    h("p", { className: "muted" }, `Threshold: ${f.threshold}`),
  );
}

function showRequest(seq, tenant) {
  document.getElementById("tab-live").click();
  traffic.showExchange(seq, tenant).then(() => $("detail").focus());
}

function showAll(finding) {
  document.getElementById("tab-live").click();
  traffic.showOnly(finding.seqs, `the ${finding.id} evidence for ${finding.subject}`, finding.tenant);
}

function drawCoverage(coverage) {
  const rows = [];
  for (const op of coverage.operations) {
    const name = `${op.operation}${op.deprecated ? " (deprecated)" : ""}`;
    const span = op.responses.length + op.unexpected.length;
    const first = rows.length;
    // The operation's name once, spanning its statuses' rows.
    const heading = () => rows.length === first
      ? h("th", { scope: "rowgroup", rowspan: span }, name, h("br"), h("small", { className: "mono muted" }, `${op.method} ${op.path}`))
      : null;
    for (const r of op.responses) {
      rows.push(h("tr", { className: r.met ? "met" : "never" },
        heading(),
        h("td", {}, String(r.status)),
        h("td", {}, r.documented ? "yes" : "mockstore can send it"),
        h("td", { className: "num met-count" }, r.met ? number(r.met) : "never"),
        h("td", {}, Object.entries(r.codes).map(([c, n]) => `${c} ×${n}`).join(", ")),
        h("td", {}, r.codes_never_met.join(", ")),
      ));
    }
    for (const u of op.unexpected) {
      rows.push(h("tr", { className: "unexpected" },
        heading(), h("td", {}, String(u.status)), h("td", {}, "not expected"),
        h("td", { className: "num" }, number(u.met)), h("td", {}, Object.keys(u.codes).join(", ")), h("td")));
    }
  }
  $("coverage-rows").replaceChildren(...rows);
  const d = coverage.documented;
  $("coverage-summary").textContent = `${d.met} of ${d.total} documented responses met.` +
    (coverage.never_met.length ? ` Never met: ${coverage.never_met.join(", ")}.` : "");
}

/**
 * The full HTML report. Without a token it is a plain link; with one, the page
 * fetches it with the token in a header and saves it, since a link cannot carry
 * a header and the token must not go into a URL.
 */
async function openReport(event) {
  if (!token.get()) return;
  event.preventDefault();
  const response = await fetch(`${PREFIX}/report.html`, { headers: authHeaders(), cache: "no-store" });
  if (!response.ok) {
    $("report-stats").textContent = `the report could not be fetched (HTTP ${response.status})`;
    return;
  }
  const url = URL.createObjectURL(await response.blob());
  const save = h("a", { href: url, download: "mockstore-report.html" });
  document.body.append(save);
  save.click();
  save.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function init() {
  $("report-link").addEventListener("click", openReport);
  $("findings-form").addEventListener("submit", (event) => event.preventDefault());
  $("findings-run").addEventListener("change", () => maybeRefresh(true));
}
