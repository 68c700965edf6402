// A team's smoke test: under every bundled scenario, every answer of the Pet Store API
// parses and fits the document the server serves (its statuses, codes and bodies as the
// running scenario answers); what does not arrive whole is a fault the scenario scripts,
// and the journal says so.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { apiClient, asText, bearer, controlClient, waitForHealth } from "./mockstore.js";

type Json = Record<string, any>;
const control = controlClient();
const api = apiClient();

before(() => waitForHealth());

/** The schema the served document gives an answer (a response object may be a $ref). */
function answerSchema(document: Json, path: string, method: string, status: number): Json | undefined {
  const responses = document.paths[path]?.[method]?.responses ?? {};
  let response = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  while (response?.$ref) {
    response = response.$ref.split("/").slice(1).reduce((node: Json, part: string) => node[part], document);
  }
  return response?.content?.["application/json"]?.schema;
}

const scenarios = await (async () => {
  await waitForHealth();
  const { data } = await control.GET("/scenarios");
  return (data ?? []).map((s) => s.name);
})();

for (const name of scenarios) {
  test(`every answer under the bundled scenario ${name} fits the served document`, async () => {
    const loaded = await control.PUT("/scenario", {
      body: name,
      bodySerializer: asText,
      headers: { "Content-Type": "text/plain" },
    });
    assert.equal(loaded.data?.name, name);
    const since = (await control.POST("/reset")).data!.journal_seq;
    const document = (await control.GET("/openapi.json")).data as Json;
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema(document, "petstore");

    const keys = ((await control.GET("/keys")).data ?? []).map((k) => k.key);
    let whole = 0;
    let broken = 0;
    const check = async (
      path: string,
      method: string,
      send: () => Promise<{ data?: unknown; error?: unknown; response: Response }>,
    ) => {
      let answer: { data?: unknown; error?: unknown; response: Response };
      try {
        answer = await send(); // openapi-fetch parses the body (or throws)
      } catch {
        broken++; // no whole answer: a scripted fault, or the count below fails
        return;
      }
      const { response } = answer;
      const schema = answerSchema(document, path, method, response.status);
      const body = answer.data ?? answer.error;
      assert.ok(schema, `${name}: ${method.toUpperCase()} ${path}: ${response.status} is not in the document`);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      const valid = ajv.validate(withRefsInto(schema), body);
      assert.ok(valid, `${name}: ${method.toUpperCase()} ${path} ${response.status}: ${ajv.errorsText()} in ${JSON.stringify(body).slice(0, 300)}`);
      whole++;
    };

    await check("/pets", "get", () => api.GET("/pets"));
    for (const key of keys) {
      const auth = { headers: bearer(key) };
      await check("/pets", "get", () => api.GET("/pets", auth));
      await check("/pets", "get", () => api.GET("/pets", { ...auth, params: { query: { limit: 2, status: "available" } } }));
      await check("/pets", "post", () => api.POST("/pets", { ...auth, body: { name: "Rex", categoryId: 1 } }));
      await check("/pets/{petId}", "get", () => api.GET("/pets/{petId}", { ...auth, params: { path: { petId: 1 } } }));
      await check("/pets/{petId}", "get", () => api.GET("/pets/{petId}", { ...auth, params: { path: { petId: 987654321 } } }));
      await check("/store/orders", "get", () => api.GET("/store/orders", auth));
    }

    // What did not arrive whole, the journal shows as a fault the scenario scripted.
    const journal = (await control.GET("/requests", { params: { query: { since } } })).data!;
    const faults = journal.entries.filter((e) => e.outcome !== "response").length;
    assert.equal(broken, faults, `${name}: ${broken} answers broken, ${faults} faults journaled`);
    assert.equal(whole + broken, journal.entries.length);
    assert.ok(whole > 0);
  });
}

/** ``schema`` with its "#/…" references pointing into the served document (added as "petstore"). */
function withRefsInto(schema: Json): Json {
  return JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"petstore#/'));
}
