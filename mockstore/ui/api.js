// The control API, as the page calls it. The token (with --control-token) is
// kept in sessionStorage, for this tab only, and sent as a header: never in a URL.

export const PREFIX = "/__mockstore";
const TOKEN_KEY = "mockstore.controlToken";

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** The server refused the token (or wants one): the page goes back to its prompt. */
export class Unauthorized extends Error {}

/** Any other non-2xx answer, with the Error body (code, message, status, ...). */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

let unauthorizedHandler = () => {};

/** Called once for every 401, whichever call received it. */
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

export function authHeaders() {
  const headers = new Headers();
  const value = token.get();
  if (value) headers.set("Authorization", `Bearer ${value}`);
  return headers;
}

/**
 * One call: GET reads; POST/PUT/DELETE always carry a Content-Type (JSON, or
 * YAML for a scenario) and X-Mockstore-Client, which cross-site protection on
 * the server can require. Returns the parsed JSON answer (null for 204).
 */
export async function call(method, path, { json, yaml, signal } = {}) {
  const init = { method, headers: authHeaders(), cache: "no-store", signal };
  if (method !== "GET") {
    init.headers.set("X-Mockstore-Client", "dashboard");
    if (yaml !== undefined) {
      init.headers.set("Content-Type", "application/yaml");
      init.body = yaml;
    } else {
      init.headers.set("Content-Type", "application/json");
      init.body = JSON.stringify(json ?? {});
    }
  }
  const response = await fetch(PREFIX + path, init);
  if (response.status === 401) {
    unauthorizedHandler();
    throw new Unauthorized("the control token was refused");
  }
  const text = await response.text();
  let body = null;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: text.slice(0, 300) };
    }
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

export const get = (path, options) => call("GET", path, options);

/** A message for the user from whatever a call threw. */
export function describe(error) {
  if (error instanceof ApiError) return `${error.status} ${error.body.code || ""}: ${error.message}`;
  if (error instanceof Unauthorized) return "wrong token";
  return `cannot reach the server (${error.message})`;
}
