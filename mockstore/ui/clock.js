// The scenario clock: shown live, and moved with Advance, Set and Reset.

import { $, isoTime } from "./dom.js";
import { call, describe, get } from "./api.js";

let reading = null; // the last GET /clock answer
let readAt = 0; // performance.now() when it arrived
let afterChange = () => {};

/** The scenario time now, in Unix seconds: a running clock moves on between readings. */
export function now() {
  if (!reading) return null;
  if (reading.mode === "manual") return reading.unix;
  return reading.unix + (performance.now() - readAt) / 1000;
}

export function mode() {
  return reading?.mode;
}

function show() {
  const seconds = now();
  if (seconds === null) return;
  const text = reading.mode === "manual" ? reading.now : isoTime(seconds).replace(/\.\d+Z$/, "Z");
  const output = $("clock-now");
  if (output.textContent !== text) output.textContent = text;
  $("clock-mode").textContent = reading.mode;
}

function take(answer) {
  reading = answer;
  readAt = performance.now();
  show();
}

export async function refresh() {
  take(await get("/clock"));
}

async function act(describeDone, request) {
  const notice = $("notice");
  try {
    const answer = await request();
    notice.textContent = describeDone(answer);
    notice.classList.remove("error");
  } catch (error) {
    notice.textContent = describe(error);
    notice.classList.add("error");
  }
  await refresh().catch(() => {});
  afterChange();
}

export function init(onChange) {
  afterChange = onChange;
  $("advance-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const seconds = Number($("advance-seconds").value);
    if (!Number.isFinite(seconds)) {
      $("notice").textContent = "Advance needs a number of seconds.";
      return;
    }
    act((clock) => `Clock advanced by ${seconds} s to ${clock.now}.`, async () => {
      const clock = await call("POST", "/clock", { json: { advance_seconds: seconds } });
      take(clock);
      return clock;
    });
  });
  $("set-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const when = $("set-time").value.trim();
    if (!when) {
      $("notice").textContent = "Set needs a time, e.g. 2030-12-05T00:00:00Z.";
      return;
    }
    act((clock) => `Clock set to ${clock.now}.`, async () => {
      const clock = await call("POST", "/clock", { json: { set: when } });
      take(clock);
      return clock;
    });
  });
  $("reset").addEventListener("click", () => {
    act((done) => `Reset: scenario ${done.scenario} is back at its initial state.`,
      () => call("POST", "/reset", { json: {} }));
  });
  setInterval(show, 250);
}
