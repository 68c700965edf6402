// What a client team's suite does with mockstore, in TypeScript: start from a scenario by
// name, issue a key, exhaust it, read the 429, advance the clock instead of sleeping,
// retry, verify the calls, read the report (kept as a CI artifact), reset.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { apiClient, asText, bearer, called, controlClient, coverage, root, waitForHealth } from "./mockstore.js";

const control = controlClient();
const api = apiClient();

before(async () => {
  await waitForHealth();
  // Start from a bundled scenario, by name (a text/plain body).
  const { data, error } = await control.PUT("/scenario", {
    body: "default",
    bodySerializer: asText,
    headers: { "Content-Type": "text/plain" },
  });
  assert.equal(error, undefined);
  assert.equal(data?.name, "default");
});

after(async () => {
  // The figures the project's closing note quotes: what each generated client covered.
  console.log(`control operations called: ${await coverage("control.openapi.json", called.control)}`);
  console.log(`api operations called: ${await coverage("openapi.json", called.api)}`);
});

test("a key of three a minute: the fourth call is a 429 until the clock moves", async () => {
  const start = await control.POST("/reset");
  assert.equal(start.data?.status, "reset");
  const since = start.data?.journal_seq ?? 0;

  const issued = await control.POST("/keys", { body: { plan: { per_minute: 3 } } });
  assert.equal(issued.response.status, 201);
  const key = issued.data!.key;
  assert.equal(issued.data!.limits.per_minute, 3);

  for (let call = 1; call <= 3; call++) {
    const { data, response } = await api.GET("/pets", { params: { query: { limit: 2 } }, headers: bearer(key) });
    assert.equal(response.status, 200);
    assert.ok(Array.isArray(data) && data.length <= 2);
    assert.equal(response.headers.get("X-RateLimit-Remaining"), String(3 - call));
  }
  const refused = await api.GET("/pets", { headers: bearer(key) });
  assert.equal(refused.response.status, 429);
  assert.equal(refused.error?.code, "rate_limited");
  const wait = Number(refused.response.headers.get("Retry-After"));
  assert.ok(wait > 0 && wait <= 60, `Retry-After: ${wait}`);

  const keys = await control.GET("/keys");
  const standing = keys.data?.find((k) => k.key === key);
  assert.equal(standing?.minute.remaining, 0);

  // The scenario clock, not a sleep: as long as the answer said to wait.
  const moved = await control.POST("/clock", { body: { advance_seconds: wait } });
  assert.ok((moved.data?.elapsed_seconds ?? 0) >= wait);
  const retried = await api.GET("/pets", { headers: bearer(key) });
  assert.equal(retried.response.status, 200);

  // The calls, verified: four listPets answered 200, one 429.
  const ok = await control.POST("/verify", { body: { operation: "listPets", key, status: 200, count: 4, since } });
  assert.equal(ok.data?.ok, true, ok.data?.message);
  const wrong = await control.POST("/verify", { body: { operation: "createPet", key, count: 1, since } });
  assert.equal(wrong.data?.ok, false);
  assert.match(wrong.data?.message ?? "", /createPet/);
  const throttled = await control.GET("/requests", { params: { query: { key, status: 429, since } } });
  assert.equal(throttled.data?.entries.length, 1);
  const entry = await control.GET("/requests/{seq}", { params: { path: { seq: throttled.data!.entries[0]!.seq } } });
  assert.equal(entry.data?.response.status, 429);

  // The report: kept for CI to upload, and it judged the waiting right.
  const report = await control.GET("/report", { params: { query: { since, include: "timeline" } } });
  assert.equal(report.response.status, 200);
  const listPets = report.data!.coverage.operations.find((o) => o.operation === "listPets");
  assert.ok(listPets?.responses.some((r) => r.status === 429 && r.met === 1));
  assert.equal(report.data!.findings.filter((f) => f.subject.startsWith(key.slice(0, 4))).length, 0);
  const html = await control.GET("/report.html", { parseAs: "text" });
  await mkdir("reports", { recursive: true });
  await writeFile("reports/mockstore-report.json", JSON.stringify(report.data, null, 2));
  await writeFile("reports/mockstore-report.html", html.data ?? "");
  const har = await control.GET("/requests.har", { params: { query: { since } } });
  assert.equal(har.data?.log.version, "1.2");

  // Reset: the issued key goes with the state it was issued in.
  const reset = await control.POST("/reset");
  assert.equal(reset.data?.scenario, "default");
  const gone = await api.GET("/pets", { headers: bearer(key) });
  assert.equal(gone.response.status, 401);
});

test("keys, bans and the store, as a team's fixtures steer them", async () => {
  await control.POST("/reset");
  const issued = await control.POST("/keys", { body: { key: "ts-banned", plan: { per_minute: 1 } } });
  assert.equal(issued.response.status, 201);
  const clash = await control.POST("/keys", { body: { key: "ts-banned" } });
  assert.equal(clash.response.status, 409);
  assert.equal(clash.error?.code, "key_exists");
  // Ten 429s in a minute ban the key (the scenario's ban policy).
  for (let call = 0; call < 12; call++) await api.GET("/pets", { headers: bearer("ts-banned") });
  const banned = (await control.GET("/keys")).data?.find((k) => k.key === "ts-banned");
  assert.equal(banned?.banned, true);
  const lifted = await control.DELETE("/bans/{key}", { params: { path: { key: "ts-banned" } } });
  assert.equal(lifted.data?.lifted, true);
  const revoked = await control.DELETE("/keys/{key}", { params: { path: { key: "ts-banned" } } });
  assert.equal(revoked.response.status, 204);
  const unknown = await control.DELETE("/keys/{key}", { params: { path: { key: "ts-banned" } } });
  assert.equal(unknown.error?.code, "unknown_key");

  const created = await api.POST("/pets", { body: { name: "Rex", categoryId: 1 }, headers: bearer("pro-key") });
  assert.equal(created.response.status, 201);
  const fetched = await api.GET("/pets/{petId}", { params: { path: { petId: created.data!.id } }, headers: bearer("pro-key") });
  assert.equal(fetched.data?.name, "Rex");
  const orders = await api.GET("/store/orders", { headers: bearer("pro-key") });
  assert.equal(orders.response.status, 501);
  const store = await control.GET("/pets");
  assert.ok(store.data?.some((pet) => pet.id === created.data!.id));

  await control.DELETE("/requests");
  const journal = await control.GET("/requests");
  assert.equal(journal.data?.entries.length, 0);
});

test("the clock, the scenario, the documents and the server", async () => {
  const health = await control.GET("/health");
  assert.equal(health.data?.status, "ok");
  const memory = await control.GET("/memory");
  assert.ok((memory.data?.budget ?? 0) > 0);
  const sunset = await control.POST("/clock", { body: { set: "2030-12-05T00:00:01Z" } });
  assert.equal(sunset.data?.now.slice(0, 19), "2030-12-05T00:00:01"); // a running clock ticks on
  const clock = await control.GET("/clock");
  assert.equal(clock.data?.now.slice(0, 10), "2030-12-05");
  const out = await control.POST("/clock", { body: { set: "9999-01-01T00:00:00Z" } });
  assert.equal(out.response.status, 400);
  assert.equal(out.error?.code, "invalid_request");

  const yaml = "version: 1\nname: ts-suite\nkeys:\n  - {key: ts-key, plan: pro}\n";
  const loaded = await control.PUT("/scenario", {
    body: yaml,
    bodySerializer: asText,
    headers: { "Content-Type": "application/yaml" },
  });
  assert.equal(loaded.data?.name, "ts-suite");
  const refused = await control.PUT("/scenario", {
    body: "version: 1\nkeys: 7\n",
    bodySerializer: asText,
    headers: { "Content-Type": "application/yaml" },
  });
  assert.equal(refused.error?.code, "invalid_scenario");
  assert.ok((refused.error?.problems ?? []).length > 0);
  const running = await control.GET("/scenario");
  assert.equal(running.data?.name, "ts-suite");
  const bundled = await control.GET("/scenarios");
  assert.ok(bundled.data?.some((s) => s.name === "flaky-create"));
  const source = await control.GET("/scenarios/{name}", { params: { path: { name: "flaky-create" } } });
  assert.match(source.data?.source ?? "", /flaky-create/);

  const documents = await Promise.all([
    control.GET("/openapi.json"),
    control.GET("/control.openapi.json"),
    control.GET("/schema"),
  ]);
  assert.equal(documents[0].data?.openapi.slice(0, 3), "3.1");
  assert.equal(documents[1].data?.openapi.slice(0, 3), "3.1");
  assert.ok(documents[2].data);
  await control.PUT("/scenario", { body: "default", bodySerializer: asText, headers: { "Content-Type": "text/plain" } });
});

test("a tenant: a mock of its own for one worker", async () => {
  const made = await control.POST("/tenants", { body: { id: `ts-${process.pid}` } });
  assert.equal(made.response.status, 201);
  const tenantRoot = root + made.data!.path;
  const tenantControl = controlClient(tenantRoot);
  const tenantApi = apiClient(tenantRoot);
  const issued = await tenantControl.POST("/keys", { body: { plan: "free" } });
  const answer = await tenantApi.GET("/pets", { headers: bearer(issued.data!.key) });
  assert.equal(answer.response.status, 200);
  const outside = await api.GET("/pets", { headers: bearer(issued.data!.key) });
  assert.equal(outside.response.status, 401); // its keys are its own
  const listed = await control.GET("/tenants");
  assert.ok(listed.data?.some((t) => t.id === made.data!.id));
  const deleted = await control.DELETE("/tenants/{tenant}", { params: { path: { tenant: made.data!.id } } });
  assert.equal(deleted.response.status, 204);
});

test("the dashboard's page and what it reads", async () => {
  const page = await control.GET("/ui", { parseAs: "text" });
  assert.match(page.data ?? "", /<html/i);
  const script = await control.GET("/ui/{name}", { params: { path: { name: "main.js" } }, parseAs: "text" });
  assert.equal(script.response.status, 200);
  const missing = await control.GET("/ui/{name}", { params: { path: { name: "nothing.js" } } });
  assert.equal(missing.error?.code, "not_found");
  for (const path of ["/", "/ui/"] as const) {
    const redirected = await control.GET(path, { parseAs: "text" }); // fetch follows the 307
    assert.equal(new URL(redirected.response.url).pathname, "/__mockstore/ui");
  }
  const events = await control.GET("/events", { parseAs: "stream" });
  assert.match(events.response.headers.get("content-type") ?? "", /^text\/event-stream/);
  await events.data?.cancel(); // a stream lasts as long as its reader
});
