// Small DOM and formatting helpers. Data from the server is only ever placed
// with textContent or attributes, never parsed as HTML.

export const $ = (id) => document.getElementById(id);

/** An element with attributes (on* are listeners) and children (strings become text). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "className") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  element.append(...children.flat().filter((c) => c !== undefined && c !== null));
  return element;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

/** Unix seconds (scenario time) as 2026-03-01T12:00:30.250Z. */
export function isoTime(seconds) {
  return new Date(seconds * 1000).toISOString();
}

/** Unix seconds as 12:00:30.250 (UTC), for table cells; 12:00:30 without ``ms``. */
export function clockTime(seconds, ms = true) {
  return isoTime(seconds).slice(11, ms ? 23 : 19);
}

/** A duration in seconds as 4:05 or 1:02:03, or "0:00" once it is over. */
export function countdown(seconds) {
  const total = Math.max(0, Math.ceil(seconds));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

export const number = (n) => Number(n).toLocaleString("en-US");

/** JSON text pretty-printed, anything else as it is. */
export function pretty(text) {
  if (!text) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** Resolve after ``ms``, or at once when ``signal`` aborts. */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** Replace a select's options, keeping the chosen value when it is still offered. */
export function setOptions(select, options, keepFirst = 0) {
  const chosen = select.value;
  const fixed = [...select.options].slice(0, keepFirst);
  select.replaceChildren(...fixed, ...options.map(([value, label]) => h("option", { value }, label)));
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
}
