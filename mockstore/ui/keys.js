// Keys and limits: each key's allowance in both windows, its ban with a
// countdown on the scenario clock, the actions on it, and a chart of minute
// headroom drawn from the GET /keys snapshots the page takes every second.

import { $, h, svg, clockTime, countdown, number, setOptions } from "./dom.js";
import { call, describe, get } from "./api.js";
import * as clock from "./clock.js";

const HISTORY = 240; // snapshots kept per key (4 minutes at one a second)
const SERIES = 8; // colours in app.css (.series-0 ... .series-7)
const CHART = { width: 600, height: 200, left: 40, right: 8, top: 10, bottom: 22 };

let keys = []; // the last GET /keys answer
const cards = new Map(); // key -> its card's parts
const history = new Map(); // key -> [{ t, sample, ratio }]
const colours = new Map(); // key -> series index, stable while the page lives
let samples = 0;
let lastTime = null;
let afterChange = () => {};

export async function refresh() {
  keys = await get("/keys");
  record();
  drawKeys();
  drawChart();
}

/** Plans for the issue form, from the running scenario's summary. */
export function setPlans(plans) {
  setOptions($("issue-plan"), Object.keys(plans).map((name) => {
    const p = plans[name];
    return [name, `${name} (${number(p.per_minute)}/min, ${number(p.per_day)}/day)`];
  }));
}

// -- the list of keys -------------------------------------------------------------------

/** One key's card, built once: updates change its text, so focus on its buttons survives. */
function buildCard(key, shown) {
  const parts = {
    // The key as the traffic list shows it (masked, with its alias): to match them up.
    shown: h("span", { className: "mono muted", title: "as the traffic list shows it" }, shown),
    plan: h("span", { className: "muted" }),
    ban: h("p", { className: "ban" }),
    minute: h("meter", { min: 0 }),
    minuteText: h("span"),
    day: h("meter", { min: 0 }),
    dayText: h("span"),
    lift: h("button", { type: "button", "aria-label": `Lift the ban on ${key}` }, "Lift ban"),
    revoke: h("button", { type: "button", "aria-label": `Revoke ${key}` }, "Revoke"),
  };
  parts.lift.addEventListener("click", () => act(`Ban on ${key} lifted.`,
    () => call("DELETE", `/bans/${encodeURIComponent(key)}`, { json: {} })));
  parts.revoke.addEventListener("click", () => act(`${key} revoked: its next request gets 401.`,
    () => call("DELETE", `/keys/${encodeURIComponent(key)}`, { json: {} })));
  parts.card = h("li", { "data-key": key },
    h("div", { className: "key-head" },
      h("span", { className: "mono key" }, key), parts.shown, parts.plan,
      h("span", { className: "key-actions" }, parts.lift, parts.revoke)),
    parts.ban,
    h("div", { className: "windows" },
      h("span", { className: "muted" }, "This minute"), parts.minute, parts.minuteText,
      h("span", { className: "muted" }, "Today"), parts.day, parts.dayText),
  );
  return parts;
}

function drawKeys() {
  const list = $("key-list");
  const present = new Set(keys.map((k) => k.key));
  for (const [key, parts] of cards) {
    if (!present.has(key)) {
      parts.card.remove();
      cards.delete(key);
    }
  }
  keys.forEach((k, index) => {
    let parts = cards.get(k.key);
    if (!parts) {
      parts = buildCard(k.key, k.shown);
      cards.set(k.key, parts);
    }
    // In the server's order, moving a card only when it is out of place: a
    // moved element loses keyboard focus.
    const there = list.children[index];
    if (there !== parts.card) list.insertBefore(parts.card, there || null);
    const tenant = k.tenant && k.tenant !== k.key ? ` · tenant ${k.tenant}` : "";
    parts.plan.textContent = `${k.plan} · ${number(k.limits.per_minute)}/min · ${number(k.limits.per_day)}/day${tenant}`;
    for (const [meter, window, limit, label] of [
      [parts.minute, k.minute, k.limits.per_minute, "this minute"],
      [parts.day, k.day, k.limits.per_day, "today"],
    ]) {
      meter.max = limit;
      meter.low = limit * 0.2;
      meter.optimum = limit;
      meter.value = window.remaining;
      meter.setAttribute("aria-label", `${k.key}: ${window.remaining} of ${limit} left ${label}`);
    }
    parts.lift.hidden = !k.banned;
    parts.card.classList.toggle("banned", k.banned);
  });
  drawTimes();
}

/** The parts that move with the clock: windows' resets and ban countdowns. */
function drawTimes() {
  const now = clock.now();
  for (const k of keys) {
    const parts = cards.get(k.key);
    if (!parts || now === null) continue;
    const resetText = (w) =>
      `${number(w.remaining)} left · ${number(w.used)} used · resets ${clockTime(w.reset, false)} (in ${countdown(w.reset - now)})`;
    parts.minuteText.textContent = resetText(k.minute);
    parts.dayText.textContent = resetText(k.day);
    if (k.banned) {
      const until = Date.parse(k.banned_until) / 1000;
      parts.ban.textContent = `Banned until ${clockTime(until, false)} · ends in ${countdown(until - now)}`;
    } else {
      parts.ban.textContent = k.recent_rejections ? `Not banned · ${k.recent_rejections} recent 429s` : "Not banned";
    }
  }
}

/** Run one action; ``done`` is the notice to show, or makes it from the answer. */
async function act(done, request) {
  const notice = $("notice");
  try {
    const answer = await request();
    notice.textContent = typeof done === "function" ? done(answer) : done;
    notice.classList.remove("error");
  } catch (error) {
    notice.textContent = describe(error);
    notice.classList.add("error");
  }
  await refresh().catch(() => {});
  afterChange();
}

// -- the headroom chart ------------------------------------------------------------------

function record() {
  const now = clock.now();
  if (now === null) return;
  // A clock moved back (Reset, Set) would draw the lines backwards: start over.
  if (lastTime !== null && now < lastTime) history.clear();
  lastTime = now;
  samples += 1;
  for (const k of keys) {
    if (!colours.has(k.key)) colours.set(k.key, colours.size % SERIES);
    const points = history.get(k.key) || [];
    points.push({ t: now, sample: samples, ratio: k.minute.remaining / k.limits.per_minute });
    if (points.length > HISTORY) points.shift();
    history.set(k.key, points);
  }
  for (const key of history.keys()) if (!keys.some((k) => k.key === key)) history.delete(key);
}

function drawChart() {
  const { width, height, left, right, top, bottom } = CHART;
  const all = [...history.values()].flat();
  const chart = $("headroom");
  if (!all.length) {
    chart.replaceChildren();
    return;
  }
  // Scenario time on the x axis; a clock that never moved (manual) plots by snapshot.
  const t0 = Math.min(...all.map((p) => p.t));
  const t1 = Math.max(...all.map((p) => p.t));
  const byTime = t1 > t0;
  const s0 = Math.min(...all.map((p) => p.sample));
  const s1 = Math.max(...all.map((p) => p.sample));
  const x = (p) => {
    const [v, lo, hi] = byTime ? [p.t, t0, t1] : [p.sample, s0, s1];
    return left + (hi > lo ? ((v - lo) / (hi - lo)) : 1) * (width - left - right);
  };
  const y = (ratio) => top + (1 - ratio) * (height - top - bottom);
  const parts = [];
  for (const share of [0, 0.5, 1]) {
    parts.push(svg("line", { class: "grid", x1: left, x2: width - right, y1: y(share), y2: y(share) }));
    parts.push(svg("text", { class: "axis", x: left - 4, y: y(share) + 4, "text-anchor": "end" }, `${share * 100}%`));
  }
  const axisLabel = byTime ? [clockTime(t0, false), clockTime(t1, false)] : ["earlier snapshots", "now"];
  parts.push(svg("text", { class: "axis", x: left, y: height - 6 }, axisLabel[0]));
  parts.push(svg("text", { class: "axis", x: width - right, y: height - 6, "text-anchor": "end" }, axisLabel[1]));
  const legend = [];
  const summary = [];
  for (const [key, points] of history) {
    const series = `series-${colours.get(key)}`;
    const coordinates = points.map((p) => `${x(p).toFixed(1)},${y(p.ratio).toFixed(1)}`).join(" ");
    parts.push(svg("polyline", { class: `line ${series}`, points: coordinates }));
    const last = points[points.length - 1];
    const share = `${Math.round(last.ratio * 100)}%`;
    legend.push(h("li", {}, h("span", { className: `swatch ${series}`, "aria-hidden": "true" }), `${key} ${share}`));
    summary.push(`${key} ${share} of its minute allowance left`);
  }
  chart.replaceChildren(...parts);
  $("headroom-legend").replaceChildren(...legend);
  $("headroom-summary").textContent = summary.join("; ");
}

export function init(onChange) {
  afterChange = onChange;
  $("issue-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const body = { plan: $("issue-plan").value };
    const wanted = $("issue-key").value.trim();
    if (wanted) body.key = wanted;
    act((issued) => `Issued ${issued.key} on plan ${issued.plan}.`, async () => {
      const issued = await call("POST", "/keys", { json: body });
      $("issue-key").value = "";
      return issued;
    });
  });
  setInterval(drawTimes, 500);
}
