// The two clients a TypeScript suite needs against mockstore, both generated: the control
// API's (types from /__mockstore/control.openapi.json) and the Pet Store API's (from
// /__mockstore/openapi.json), with openapi-fetch. MOCKSTORE_URL is the server's root, as
// the CI service container or `mockstore serve` gives it.
import createClient, { type Middleware } from "openapi-fetch";
import type { paths as ControlPaths } from "./generated/control.js";
import type { paths as PetStorePaths } from "./generated/petstore.js";

export type { components as Control } from "./generated/control.js";
export type { components as PetStore } from "./generated/petstore.js";

export const root = (process.env.MOCKSTORE_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "");

// Which operations the suite called (method and path template): the coverage each
// generated client had, printed at the end of a run.
export const called = { control: new Set<string>(), api: new Set<string>() };

function recording(into: Set<string>): Middleware {
  return {
    onRequest({ request, schemaPath }) {
      into.add(`${request.method.toLowerCase()} ${schemaPath}`);
      return undefined;
    },
  };
}

/** The control API of a server, or of a tenant (given the tenant's root). */
export function controlClient(base: string = root) {
  const client = createClient<ControlPaths>({
    baseUrl: `${base}/__mockstore`,
    // Tools name themselves: a body-less POST from a page could not (mockstore's CSRF rule).
    headers: { "X-Mockstore-Client": "typescript-recipe" },
  });
  client.use(recording(called.control));
  return client;
}

/** The Pet Store API of a server (or of a tenant, given its root). */
export function apiClient(base: string = root) {
  const client = createClient<PetStorePaths>({ baseUrl: `${base}/v1` });
  client.use(recording(called.api));
  return client;
}

/** A body sent as it is: a scenario's YAML, or a bundled scenario's name (text/plain). */
export const asText = (body: unknown): string => String(body);

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** Waits for /__mockstore/health, as a CI job waits for its service container. */
export async function waitForHealth(timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(`${root}/__mockstore/health`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`mockstore at ${root} never became healthy`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** "operations called / total" for a document, from its served copy. */
export async function coverage(document: string, seen: Set<string>): Promise<string> {
  const served = (await (await fetch(`${root}/__mockstore/${document}`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const all = Object.entries(served.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method} ${path}`),
  );
  const missed = all.filter((operation) => !seen.has(operation));
  return `${all.length - missed.length}/${all.length}` + (missed.length ? ` (not called: ${missed.join(", ")})` : "");
}
