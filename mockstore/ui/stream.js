// The journal's live feed (GET /__mockstore/events), read with fetch() rather
// than EventSource: EventSource cannot send the Authorization header, and the
// token must never go into a URL.

import { PREFIX, authHeaders, Unauthorized } from "./api.js";
import { sleep } from "./dom.js";

/** Split a text stream into server-sent events: calls onEvent(name, data) for each. */
export async function readEvents(body, onEvent, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        // Lines starting with ":" are keep-alive comments.
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

/**
 * Keep a stream open until ``signal`` aborts, reconnecting after errors, and
 * resuming after the last entry received (``since``) so nothing is shown twice.
 * ``handlers``: hello(data), requests(data), status(state, detail), unauthorized().
 */
export async function follow(handlers, signal) {
  let since = null;
  let backoff = 500;
  while (!signal.aborted) {
    try {
      handlers.status("connecting");
      const query = since === null ? "" : `?since=${since}`;
      const response = await fetch(`${PREFIX}/events${query}`, {
        headers: authHeaders(),
        cache: "no-store",
        signal,
      });
      if (response.status === 401) throw new Unauthorized();
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        handlers.status("refused", body.message || `HTTP ${response.status}`);
        await sleep(5000, signal);
        continue;
      }
      await readEvents(response.body, (name, data) => {
        if (name === "hello") {
          since = data.since;
          backoff = 500;
          handlers.status("live");
          handlers.hello(data);
        } else if (name === "requests") {
          since = data.last_seq;
          handlers.requests(data);
        }
      }, signal);
      if (!signal.aborted) handlers.status("offline", "the stream ended");
    } catch (error) {
      if (error instanceof Unauthorized) {
        handlers.unauthorized();
        return;
      }
      if (signal.aborted) return;
      handlers.status("offline", error.message);
    }
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 8000);
  }
}
