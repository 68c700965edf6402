// Live traffic: the stream's entries in a bounded buffer, filtered, newest
// first, and the whole exchange of the selected one. A finding's evidence is
// shown whatever its age: what the buffer does not hold is fetched from the
// journal by sequence number (GET /requests/{seq}, a tenant's with ?tenant=).
//
// At 1,000 requests a second the stream delivers a batch every 250 ms; the
// table is redrawn at most once per animation frame, reusing its row elements,
// and only its newest MAX_ROWS matching rows exist in the DOM, so the page
// never falls behind.

import { $, h, clockTime, isoTime, number, pretty, setOptions } from "./dom.js";
import { describe, get } from "./api.js";

const MAX_BUFFER = 2000; // entries kept in the page
const MAX_ROWS = 100; // rows drawn (about five screens)

const buffer = new Map(); // seq -> { entry, row }, oldest first
const MAX_EVIDENCE = 200; // a finding lists at most this many requests
let evidence = new Map(); // "tenant/seq" or "seq" -> { entry, row }: fetched for a finding
const seen = { key: new Set(), operation: new Set(), rule: new Set() };
let received = 0;
let skipped = 0;
let lastSeq = 0;
let paused = false;
let selected = null; // seq
let onlySeqs = null; // Set of seqs (a finding's evidence), or null
let drawPending = false;
let emptyNote = "No requests yet. Send one to the API and it appears here.";
let evidenceNote = ""; // what the list says while a finding's evidence shows nothing

/** What the table shows of an entry, computed once when it arrives. */
function summarize(entry, tenant = null) {
  const status = entry.response.status;
  let code = "";
  if (status >= 400) {
    try {
      code = JSON.parse(entry.response.body).code || "";
    } catch {
      code = "";
    }
  }
  return {
    seq: entry.seq,
    ref: tenant ? `${tenant}/${entry.seq}` : String(entry.seq),
    tenant,
    time: entry.time,
    method: entry.request.method,
    path: entry.request.path + (entry.request.query_string ? `?${entry.request.query_string}` : ""),
    operation: entry.operation || "",
    key: entry.key || "(no valid key)",
    plan: entry.plan || "",
    status,
    code,
    outcome: entry.outcome,
    latency: entry.latency_ms,
    rule: entry.rule || "",
  };
}

function statusClass(status) {
  if (status === 0) return "none";
  if (status === 429) return "429";
  return `${Math.floor(status / 100)}xx`;
}

function matches(row, f) {
  if (onlySeqs && !onlySeqs.has(row.ref)) return false;
  if (f.key && row.key !== f.key) return false;
  if (f.operation && row.operation !== f.operation) return false;
  if (f.status) {
    const cls = statusClass(row.status);
    if (f.status === "4xx" ? !cls.startsWith("4") && cls !== "429" : cls !== f.status) return false;
  }
  if (f.rule === "*" && !row.rule) return false;
  if (f.rule === "-" && row.rule) return false;
  if (f.rule && f.rule !== "*" && f.rule !== "-" && row.rule !== f.rule) return false;
  return true;
}

function filters() {
  return {
    key: $("filter-key").value,
    operation: $("filter-operation").value,
    status: $("filter-status").value,
    rule: $("filter-rule").value,
  };
}

/** Add the values a filter can take as they first appear. */
function remember(row) {
  let changed = false;
  for (const [name, value] of [["key", row.key], ["operation", row.operation], ["rule", row.rule]]) {
    if (value && !seen[name].has(value)) {
      seen[name].add(value);
      changed = true;
    }
  }
  return changed;
}

function refreshFilterOptions() {
  const sorted = (set) => [...set].sort().map((v) => [v, v]);
  setOptions($("filter-key"), sorted(seen.key), 1);
  setOptions($("filter-operation"), sorted(seen.operation), 1);
  setOptions($("filter-rule"), sorted(seen.rule), 3);
}

// -- the stream's events --------------------------------------------------------

export function hello(data) {
  // A server that restarted counts from 1 again: what the page holds is stale.
  if (data.since < lastSeq) clear();
  emptyNote = data.journal.enabled
    ? "No requests yet. Send one to the API and it appears here."
    : "The journal is off in this scenario (journal: {size: 0}): nothing is recorded.";
  scheduleDraw();
}

export function add(batch) {
  skipped += batch.skipped;
  let newValues = false;
  for (const entry of batch.entries) {
    const row = summarize(entry);
    buffer.set(entry.seq, { entry, row });
    newValues = remember(row) || newValues;
    received += 1;
    lastSeq = entry.seq;
  }
  lastSeq = Math.max(lastSeq, batch.last_seq);
  while (buffer.size > MAX_BUFFER) buffer.delete(buffer.keys().next().value);
  if (newValues) refreshFilterOptions();
  scheduleDraw();
}

function clear() {
  buffer.clear();
  received = 0;
  skipped = 0;
  lastSeq = 0;
  scheduleDraw();
}

// -- drawing --------------------------------------------------------------------

function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    draw();
  });
}

function draw() {
  drawStats();
  if (paused) return;
  const shown = [];
  // A finding's evidence: what the buffer holds and what was fetched, by sequence number.
  const entries = onlySeqs
    ? [...new Map([...buffer.values(), ...evidence.values()].map((e) => [e.row.ref, e])).values()]
        .sort((a, b) => a.row.seq - b.row.seq)
    : [...buffer.values()];
  const chosen = filters();
  for (let i = entries.length - 1; i >= 0 && shown.length < MAX_ROWS; i -= 1) {
    if (matches(entries[i].row, chosen)) shown.push(entries[i].row);
  }
  const body = $("traffic-rows");
  const hadFocus = body.contains(document.activeElement);
  const focusedSeq = hadFocus ? Number(document.activeElement.dataset.seq) : null;
  // Row elements are reused, only their text changes: at 1,000 requests a
  // second, rebuilding hundreds of rows four times a second would keep the
  // browser busy on the machine that also runs the mock.
  while (body.children.length < shown.length) body.append(emptyRow());
  while (body.children.length > shown.length) body.lastElementChild.remove();
  shown.forEach((row, index) => fillRow(body.children[index], row));
  $("traffic-empty").hidden = shown.length > 0;
  setText($("traffic-empty"), onlySeqs ? evidenceNote : emptyNote);
  // One row is reachable with Tab (roving tabindex); arrows move between rows.
  const target = rowFor(focusedSeq) || rowFor(selected) || body.firstElementChild;
  if (target) target.tabIndex = 0;
  if (hadFocus && target) target.focus({ preventScroll: true });
}

const CELLS = ["seq", "time", "method", "path", "operation", "key", "status", "latency", "rule"];

// Each cell's column name: a narrow window shows the rows stacked, every value under it.
const LABELS = ["#", "Time (UTC)", "Method", "Path", "Operation", "Key / plan", "Status", "ms", "Rule"];

function emptyRow() {
  const tr = h("tr", { tabindex: -1 });
  CELLS.forEach((name, index) => tr.append(h("td", { className: `c-${name}`, "data-label": LABELS[index] })));
  // Two parts each: the key and its plan, the status and its Error code.
  tr.cells[5].append(h("span", { className: "mono" }), document.createTextNode(""));
  tr.cells[6].append(h("strong"), document.createTextNode(""));
  return tr;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function fillRow(tr, row) {
  tr.dataset.seq = row.seq;
  if (row.tenant) tr.dataset.tenant = row.tenant;
  else delete tr.dataset.tenant;
  tr.className = `status-${statusClass(row.status)}`;
  tr.tabIndex = -1;
  if (row.seq === selected) tr.setAttribute("aria-current", "true");
  else tr.removeAttribute("aria-current");
  const [seq, time, method, path, operation, key, status, latency, rule] = tr.cells;
  setText(seq, row.tenant ? `${row.seq} (${row.tenant})` : String(row.seq));
  setText(time, clockTime(row.time));
  time.title = isoTime(row.time);
  setText(method, row.method);
  setText(path, row.path);
  path.title = row.path;
  setText(operation, row.operation);
  setText(key.firstChild, row.key);
  setText(key.lastChild, row.plan ? ` ${row.plan}` : "");
  setText(status.firstChild, row.status === 0 ? row.outcome : String(row.status));
  setText(status.lastChild, row.code ? ` ${row.code}` : "");
  setText(latency, row.latency.toFixed(1));
  setText(rule, row.rule);
}

function rowFor(seq) {
  return seq === null ? null : $("traffic-rows").querySelector(`tr[data-seq="${seq}"]`);
}

function drawStats() {
  const parts = [`${number(received)} received`, `${number(buffer.size)} kept`];
  if (paused) parts.push("paused");
  $("traffic-stats").textContent = parts.join(" · ");
  const note = $("skipped");
  note.hidden = skipped === 0;
  note.textContent = `${number(skipped)} requests not shown: the stream sends at most 1,000 a second, ` +
    "or they had left the journal. The journal and the report still count them.";
}

// -- the selected exchange ----------------------------------------------------------

const tenantQuery = (tenant) => (tenant ? `?tenant=${encodeURIComponent(tenant)}` : "");

/** Show one exchange: from the page's buffer, else fetched from the journal (a tenant's). */
export async function showExchange(seq, tenant = null) {
  selected = tenant ? null : seq;
  for (const tr of $("traffic-rows").querySelectorAll("tr[aria-current]")) tr.removeAttribute("aria-current");
  if (!tenant) rowFor(seq)?.setAttribute("aria-current", "true");
  let entry = tenant ? evidence.get(`${tenant}/${seq}`)?.entry : buffer.get(seq)?.entry;
  if (!entry || entry.stream_truncated) {
    try {
      entry = await get(`/requests/${seq}${tenantQuery(tenant)}`);
    } catch (error) {
      renderMissing(seq, describe(error));
      return;
    }
  }
  renderExchange(entry, tenant);
}

function renderMissing(seq, reason) {
  const detail = $("detail");
  detail.hidden = false;
  $("detail-heading").textContent = `Request #${seq}`;
  $("detail-facts").replaceChildren(h("dt", {}, "Not available"), h("dd", {}, reason));
  for (const id of ["request", "response"]) {
    $(`detail-${id}-line`).textContent = "";
    $(`detail-${id}-headers`).replaceChildren();
    $(`detail-${id}-body`).textContent = "";
  }
}

function renderExchange(entry, tenant = null) {
  const detail = $("detail");
  detail.hidden = false;
  const where = tenant ? ` in tenant ${tenant}` : "";
  $("detail-heading").textContent = `Exchange #${entry.seq}${where} (${entry.request_id})`;
  const facts = [
    ["Time", isoTime(entry.time)],
    ["Run", String(entry.run)],
    ["Key", entry.key ? `${entry.key} (${entry.plan})` : "no valid key"],
    ["Operation", entry.operation || "—"],
    ["Latency", `${entry.latency_ms} ms`],
    ["Rule", entry.rule || "none"],
    ["Outcome", entry.outcome],
    ["Client", entry.client],
  ];
  $("detail-facts").replaceChildren(...facts.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]));
  const request = entry.request;
  const query = request.query_string ? `?${request.query_string}` : "";
  $("detail-request-line").textContent = `${request.method} ${request.path}${query}`;
  const response = entry.response;
  $("detail-response-line").textContent = response.status
    ? `${response.status}` : `no response (${entry.outcome})`;
  for (const [id, part] of [["request", request], ["response", response]]) {
    $(`detail-${id}-headers`).replaceChildren(
      ...part.headers.map(([name, value]) => h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, value))),
    );
    $(`detail-${id}-body`).textContent = pretty(part.body) || "(no body)";
  }
}

function closeExchange() {
  selected = null;
  $("detail").hidden = true;
  for (const tr of $("traffic-rows").querySelectorAll("tr[aria-current]")) tr.removeAttribute("aria-current");
}

/**
 * Show only these requests (a finding's evidence, in ``tenant``'s journal or the
 * server's); null shows every request again. Those the page does not hold are
 * fetched from the journal, whatever their age.
 */
export async function showOnly(seqs, label, tenant = null) {
  const refs = (seqs || []).slice(0, MAX_EVIDENCE).map((seq) => (tenant ? `${tenant}/${seq}` : String(seq)));
  onlySeqs = seqs ? new Set(refs) : null;
  const button = $("clear-seqs");
  button.hidden = !seqs;
  button.textContent = seqs ? `Showing ${label}: show every request` : "Show every request";
  evidence = new Map();
  evidenceNote = "Fetching the evidence from the journal…";
  scheduleDraw();
  if (!seqs) return;
  const wanted = onlySeqs;
  const missing = seqs.slice(0, MAX_EVIDENCE).filter((seq) => tenant || !buffer.has(seq));
  const found = await Promise.all(missing.map((seq) =>
    get(`/requests/${seq}${tenantQuery(tenant)}`).catch(() => null)));
  if (onlySeqs !== wanted) return; // another finding was chosen meanwhile
  for (const entry of found) {
    if (entry) evidence.set(tenant ? `${tenant}/${entry.seq}` : String(entry.seq), { entry, row: summarize(entry, tenant) });
  }
  evidenceNote = "These requests are no longer in the journal (it keeps the newest; see journal.size).";
  scheduleDraw();
}

// -- wiring ---------------------------------------------------------------------------

function moveFocus(from, step) {
  const rows = [...$("traffic-rows").children];
  let index = rows.indexOf(from);
  if (step === "first") index = 0;
  else if (step === "last") index = rows.length - 1;
  else index = Math.min(rows.length - 1, Math.max(0, index + step));
  const target = rows[index];
  if (!target) return;
  from.tabIndex = -1;
  target.tabIndex = 0;
  target.focus();
}

export function init() {
  $("filters").addEventListener("submit", (event) => event.preventDefault());
  $("filters").addEventListener("change", scheduleDraw);
  $("pause").addEventListener("click", (event) => {
    paused = !paused;
    event.currentTarget.setAttribute("aria-pressed", String(paused));
    event.currentTarget.textContent = paused ? "Resume" : "Pause";
    scheduleDraw();
  });
  $("clear-seqs").addEventListener("click", () => showOnly(null));
  $("detail-close").addEventListener("click", () => {
    const seq = selected;
    closeExchange();
    rowFor(seq)?.focus();
  });
  const body = $("traffic-rows");
  body.addEventListener("click", (event) => {
    const tr = event.target.closest("tr[data-seq]");
    if (tr) showExchange(Number(tr.dataset.seq), tr.dataset.tenant || null);
  });
  body.addEventListener("keydown", (event) => {
    const tr = event.target.closest("tr[data-seq]");
    if (!tr) return;
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: 10, PageUp: -10, Home: "first", End: "last" };
    if (event.key in moves) {
      event.preventDefault();
      moveFocus(tr, moves[event.key]);
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      showExchange(Number(tr.dataset.seq), tr.dataset.tenant || null);
    }
  });
  $("detail").addEventListener("keydown", (event) => {
    if (event.key === "Escape") $("detail-close").click();
  });
}
