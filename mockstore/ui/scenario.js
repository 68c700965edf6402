// The scenario editor: the running scenario's YAML, the bundled ones, and
// Apply, which sends the text through PUT /__mockstore/scenario. A refused
// scenario's problems are listed with their line and column next to the text,
// and the running scenario stays as it was.

import { $, h, setOptions } from "./dom.js";
import { ApiError, call, describe, get } from "./api.js";

let running = null; // GET /scenario
let dirty = false; // the editor holds text the user changed or loaded
let errorLines = new Set();
let afterApply = () => {};

const editor = () => $("scenario-text");

/** The running scenario's summary; the editor follows it unless it holds edits. */
export async function refresh() {
  running = await get("/scenario");
  $("scenario-name").textContent = running.name;
  $("scenario-file").textContent = running.file;
  // Only when it changed: rewriting the text would move the caret of someone reading it.
  // (A textarea keeps line ends as \n.)
  if (!dirty && editor().value !== running.source.replace(/\r\n?/g, "\n")) setText(running.source);
  return running;
}

export async function loadBundledList() {
  const list = await get("/scenarios");
  setOptions($("bundled"), list.map((s) => [s.name, s.name]));
  if (running && list.some((s) => s.name === running.name)) $("bundled").value = running.name;
  const about = new Map(list.map((s) => [s.name, s.description]));
  const describeChoice = () => {
    $("bundled-about").textContent = about.get($("bundled").value) || "";
  };
  $("bundled").onchange = describeChoice;
  describeChoice();
}

function setText(text) {
  editor().value = text;
  showProblems([]);
  drawGutter();
}

function drawGutter() {
  const count = editor().value.split("\n").length;
  const lines = [];
  for (let n = 1; n <= count; n += 1) lines.push(errorLines.has(n) ? `${n} ●` : String(n));
  $("gutter").textContent = lines.join("\n");
  $("gutter").scrollTop = editor().scrollTop;
}

function status(text, isError = false) {
  $("scenario-status").textContent = text;
  $("scenario-status").classList.toggle("error", isError);
}

/** List a refused scenario's problems; each moves the caret to where it is. */
function showProblems(details) {
  errorLines = new Set(details.map((d) => d.line));
  editor().setAttribute("aria-invalid", String(details.length > 0));
  $("scenario-errors").replaceChildren(...details.map((d) => h("li", {},
    h("button", { type: "button", className: "link", onclick: () => goTo(d.line, d.column) },
      `Line ${d.line}, column ${d.column}`),
    ` ${d.path}: ${d.message}`,
  )));
  drawGutter();
}

function goTo(line, column) {
  const lines = editor().value.split("\n");
  let offset = 0;
  for (let n = 1; n < line && n <= lines.length; n += 1) offset += lines[n - 1].length + 1;
  offset += Math.max(0, column - 1);
  editor().focus();
  editor().setSelectionRange(offset, offset);
  // Bring the line into view: about one line-height per line.
  const lineHeight = parseFloat(getComputedStyle(editor()).lineHeight) || 18;
  editor().scrollTop = Math.max(0, (line - 3) * lineHeight);
}

async function apply() {
  status("Validating…");
  try {
    const applied = await call("PUT", "/scenario", { yaml: editor().value });
    dirty = false;
    showProblems([]);
    status(`Applied: ${applied.name} is running, from its initial state.`);
    await refresh();
    afterApply(applied);
  } catch (error) {
    if (error instanceof ApiError && error.body.code === "invalid_scenario") {
      const details = error.body.details || [];
      showProblems(details);
      status(`Not applied: ${details.length} problem(s). The running scenario is unchanged.`, true);
    } else {
      status(`Not applied: ${describe(error)}`, true);
    }
  }
}

async function loadBundled(event) {
  event.preventDefault();
  const name = $("bundled").value;
  if (!name) return;
  try {
    const bundled = await get(`/scenarios/${encodeURIComponent(name)}`);
    dirty = true;
    setText(bundled.source);
    status(`Loaded the bundled scenario ${name} into the editor: Apply runs it.`);
  } catch (error) {
    status(describe(error), true);
  }
}

export function init(onApply) {
  afterApply = onApply;
  editor().addEventListener("input", () => {
    dirty = true;
    drawGutter();
  });
  editor().addEventListener("scroll", () => {
    $("gutter").scrollTop = editor().scrollTop;
  });
  editor().addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      apply();
    }
  });
  $("apply").addEventListener("click", apply);
  $("bundled-form").addEventListener("submit", loadBundled);
  $("scenario-revert").addEventListener("click", async () => {
    dirty = false;
    await refresh().catch((error) => status(describe(error), true));
    status("The editor shows the running scenario.");
  });
}
