// Fails when src/generated differs from what `npm run generate` writes now
// from the contracts (apidoc/openapi.yaml, docs/errors.md).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const committed = join(pkg, "src/generated");
const fresh = mkdtempSync(join(tmpdir(), "herald-sdk-gen-"));
try {
  execFileSync(process.execPath, [join(pkg, "scripts/generate.mjs"), fresh], { stdio: "inherit" });
  const names = new Set([...readdirSync(committed), ...readdirSync(fresh)]);
  const stale = [];
  for (const name of names) {
    let a = null, b = null;
    try { a = readFileSync(join(committed, name), "utf8"); } catch {}
    try { b = readFileSync(join(fresh, name), "utf8"); } catch {}
    if (a !== b) stale.push(name);
  }
  if (stale.length) {
    console.error(`src/generated is stale (${stale.join(", ")}): run npm run generate in sdk/typescript and commit the result`);
    process.exit(1);
  }
  console.log("src/generated is what the contracts generate");
} finally {
  rmSync(fresh, { recursive: true, force: true });
}
