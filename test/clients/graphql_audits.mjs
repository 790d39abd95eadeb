// graphql-http's server audits (the version package.json pins) against
// Herald's /graphql. The audits ask for both media types: every audit about
// application/graphql-response+json, and every audit about neither, must
// pass (MUST, SHOULD and MAY alike). Under application/json Herald keeps
// its contract's statuses, so the audits that want 200 for a document that
// fails to parse or validate warn, and so do the two that want
// application/json for */*; those are listed here with the reason,
// and any other audit that does not pass, or a listed one that starts to
// pass, fails the script.
import { serverAudits } from "graphql-http";

const url = `${process.env.HERALD_URL}/graphql`;

// The warnings that remain, by audit id: where the contract's statuses win
// over the spec's SHOULD for application/json (docs/graphql.md).
const expected = new Map([
  ["572B", "a document that does not parse is 400 GRAPHQL_PARSE_FAILED (application/json keeps the contract's status)"],
  ["FDE2", "a document that fails validation is 422 GRAPHQL_VALIDATION_FAILED (application/json keeps the contract's status)"],
  ["7B9B", "a variable that cannot be coerced is 422 GRAPHQL_VALIDATION_FAILED (application/json keeps the contract's status)"],
  ["47DE", "*/* is answered as application/graphql-response+json, the type the spec prefers (docs/graphql.md)"],
  // Node's fetch, as the Fetch standard says, sends Accept: */* when a
  // request names none, so this audit's "missing" Accept arrives as */*.
  ["80D8", "the audit's request without Accept arrives as Accept: */* (Node's fetch adds it), answered as application/graphql-response+json; a request that truly has no Accept gets application/json"],
]);

function mediaOf(name) {
  if (name.includes("application/graphql-response+json")) return "application/graphql-response+json";
  if (name.includes("application/json")) return "application/json";
  return "either";
}

const results = [];
for (const audit of serverAudits({ url })) {
  results.push(await audit.fn()); // one at a time: the order of the log is the audits'
}

const problems = [];
const byMedia = new Map();
for (const r of results) {
  const media = mediaOf(r.name);
  if (!byMedia.has(media)) byMedia.set(media, []);
  byMedia.get(media).push(r);
  const reason = expected.get(r.id);
  if (r.status === "ok") {
    if (reason) problems.push(`${r.id} "${r.name}" passes now: remove it from the expected warnings`);
    continue;
  }
  if (!reason) {
    problems.push(`${r.status} ${r.id} "${r.name}": ${r.reason}`);
  } else if (r.status !== "warn" || media !== "application/json") {
    problems.push(`${r.id} "${r.name}" is ${r.status} for ${media}, expected a warning for application/json`);
  }
}
for (const id of expected.keys()) {
  if (!results.some((r) => r.id === id)) problems.push(`expected warning ${id} is not an audit of this graphql-http`);
}

for (const [media, rs] of byMedia) {
  const count = (s) => rs.filter((r) => r.status === s).length;
  console.log(`${media}: ${rs.length} audits, ${count("ok")} ok, ${count("warn")} warn, ${count("notice")} notice, ${count("error")} error`);
  for (const r of rs.filter((r) => r.status !== "ok")) {
    console.log(`  ${r.status} ${r.id} ${r.name}${expected.has(r.id) ? ` (expected: ${expected.get(r.id)})` : ""}`);
  }
}
if (problems.length > 0) {
  console.error(`graphql-http audits against ${url}:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log("ok: every audit passes but the expected application/json warnings");
