// Types for both documents a mockstore server serves, generated from the server itself:
// the control API's (/__mockstore/control.openapi.json) and the Pet Store API's
// (/__mockstore/openapi.json). MOCKSTORE_URL is the server's root.
import { mkdir, writeFile } from "node:fs/promises";
import openapiTS, { astToString } from "openapi-typescript";

const root = (process.env.MOCKSTORE_URL ?? "http://127.0.0.1:8080").replace(/\/$/, "");
const documents = {
  control: `${root}/__mockstore/control.openapi.json`,
  petstore: `${root}/__mockstore/openapi.json`,
};
await mkdir(new URL("../src/generated/", import.meta.url), { recursive: true });
for (const [name, url] of Object.entries(documents)) {
  const ast = await openapiTS(new URL(url));
  const target = new URL(`../src/generated/${name}.ts`, import.meta.url);
  await writeFile(target, `// Generated from ${url.replace(root, "")} by scripts/generate.mjs.\n${astToString(ast)}`);
  console.log(`generated src/generated/${name}.ts from ${url}`);
}
