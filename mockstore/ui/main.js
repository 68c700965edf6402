// The dashboard's entry point: the token prompt, the tabs, and one "session"
// (the stream and the once-a-second refresh) that runs while the page is unlocked.

import { $, sleep } from "./dom.js";
import { Unauthorized, describe, get, onUnauthorized, token } from "./api.js";
import { follow } from "./stream.js";
import * as clock from "./clock.js";
import * as keys from "./keys.js";
import * as traffic from "./traffic.js";
import * as scenario from "./scenario.js";
import * as findings from "./findings.js";

const REFRESH_MS = 1000;
const SCENARIO_EVERY = 5; // refreshes between two reads of the running scenario
let session = null; // an AbortController while the dashboard is unlocked

// -- the token prompt ------------------------------------------------------------------

/** "ok" when the control API answers, "locked" when it wants a (different) token. */
async function probe() {
  try {
    await get("/clock");
    return "ok";
  } catch (error) {
    if (error instanceof Unauthorized) return "locked";
    throw error;
  }
}

function showGate(message) {
  $("booting").hidden = true;
  $("app").hidden = true;
  $("gate").hidden = false;
  const error = $("gate-error");
  error.hidden = !message;
  error.textContent = message || "";
  $("gate-token").value = "";
  $("gate-token").focus();
}

/** Any 401 while unlocked: the token is wrong (or the server was restarted with another). */
function lock() {
  if (!session) return;
  session.abort();
  session = null;
  token.clear();
  showGate("Wrong token: the server refused it. Enter the control token again.");
}

async function submitToken(event) {
  event.preventDefault();
  const value = $("gate-token").value.trim();
  if (!value) {
    showGate("Enter the control token.");
    return;
  }
  token.set(value);
  try {
    if ((await probe()) === "ok") {
      start();
      return;
    }
    token.clear();
    showGate("Wrong token: the server refused it.");
  } catch (error) {
    token.clear();
    showGate(describe(error));
  }
}

// -- the session -------------------------------------------------------------------------

function setConnection(state, detail) {
  const pill = $("connection");
  pill.textContent = detail ? `${state}: ${detail}` : state;
  pill.dataset.state = state;
}

async function refreshAll() {
  await Promise.all([clock.refresh(), keys.refresh()]);
}

async function refreshLoop(signal) {
  for (let tick = 1; !signal.aborted; tick += 1) {
    if (!document.hidden) {
      try {
        await refreshAll();
        findings.maybeRefresh();
        // Another client (a test suite) may load a scenario: notice it now and then.
        if (tick % SCENARIO_EVERY === 0) await scenarioSummary();
      } catch (error) {
        if (!(error instanceof Unauthorized)) setConnection("offline", describe(error));
      }
    }
    await sleep(REFRESH_MS, signal);
  }
}

let plansShown = "";

async function scenarioSummary() {
  const running = await scenario.refresh();
  const plans = JSON.stringify(running.plans);
  if (plans !== plansShown) {
    plansShown = plans;
    keys.setPlans(running.plans);
  }
}

async function afterScenarioChange() {
  await scenarioSummary();
  await refreshAll();
  findings.maybeRefresh(true);
}

function start() {
  session = new AbortController();
  const { signal } = session;
  $("gate-token").value = "";
  $("booting").hidden = true;
  $("gate").hidden = true;
  $("app").hidden = false;
  follow({
    hello: traffic.hello,
    requests: (batch) => {
      traffic.add(batch);
      findings.sawRequest(batch.last_seq);
    },
    status: setConnection,
    unauthorized: lock,
  }, signal);
  refreshLoop(signal);
  afterScenarioChange().catch(() => {});
  scenario.loadBundledList().catch(() => {});
}

// -- tabs ----------------------------------------------------------------------------------

function selectTab(tab, focus = false) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const chosen = other === tab;
    other.setAttribute("aria-selected", String(chosen));
    other.tabIndex = chosen ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !chosen;
  }
  if (focus) tab.focus();
  if (tab.id === "tab-findings") findings.maybeRefresh(true);
}

function initTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener("click", () => selectTab(tab));
    tab.addEventListener("keydown", (event) => {
      const index = tabs.indexOf(tab);
      const next = {
        ArrowRight: tabs[(index + 1) % tabs.length],
        ArrowLeft: tabs[(index - 1 + tabs.length) % tabs.length],
        Home: tabs[0],
        End: tabs[tabs.length - 1],
      }[event.key];
      if (next) {
        event.preventDefault();
        selectTab(next, true);
      }
    });
  }
}

// -- boot ----------------------------------------------------------------------------------

async function boot() {
  onUnauthorized(lock);
  $("gate-form").addEventListener("submit", submitToken);
  initTabs();
  traffic.init();
  clock.init(() => refreshAll().catch(() => {}));
  keys.init(() => {});
  scenario.init(() => afterScenarioChange().catch(() => {}));
  findings.init();
  for (;;) {
    try {
      if ((await probe()) === "ok") {
        start();
      } else {
        const hadToken = token.get() !== null;
        token.clear();
        showGate(hadToken ? "Wrong token: the server refused it." : "");
      }
      return;
    } catch (error) {
      $("booting").textContent = `Cannot reach mockstore (${describe(error)}); retrying…`;
      await sleep(2000);
    }
  }
}

boot();
