// Schema tools against Herald: graphql-js's introspection query (default,
// and with every option) answers a schema that buildClientSchema accepts
// and that prints exactly as the repository's schema.graphqls does once
// each operation's description has the sentence Herald writes from its
// @auth directive; single-type probes of schema tools are answered; deeper
// or repeated introspection is refused with QUERY_TOO_COMPLEX.
//
// With HERALD_INTROSPECTION=off the server runs with introspection off:
// the same queries are refused with GRAPHQL_VALIDATION_FAILED, and
// __typename is still answered.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  GraphQLSchema,
  Kind,
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  isObjectType,
  lexicographicSortSchema,
  parse,
  print,
  printSchema,
} from "graphql";

const url = `${process.env.HERALD_URL}/graphql`;
const graphqlResponse = "application/graphql-response+json";

async function post(query, accept = graphqlResponse) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept },
    body: JSON.stringify({ query }),
  });
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${res.status} answer is not JSON: ${text.slice(0, 300)}`);
  }
  return { status: res.status, contentType: res.headers.get("content-type"), body, text };
}

// refused checks an application/graphql-response+json refusal: status,
// code, and no data entry.
function refused(what, r, status, code) {
  assert.equal(r.status, status, `${what}: status (${r.text.slice(0, 300)})`);
  assert.equal(r.contentType, `${graphqlResponse}; charset=utf-8`, `${what}: content type`);
  assert.equal(r.body.errors?.[0]?.extensions?.code, code, `${what}: code (${r.text.slice(0, 300)})`);
  assert.ok(!("data" in r.body), `${what}: a ${r.status} answer has a data entry`);
}

const queries = {
  default: getIntrospectionQuery(),
  "every option": getIntrospectionQuery({
    descriptions: true,
    specifiedByUrl: true,
    directiveIsRepeatable: true,
    schemaDescription: true,
    inputValueDeprecation: true,
    oneOf: true,
  }),
};

if (process.env.HERALD_INTROSPECTION === "off") {
  for (const [name, query] of Object.entries(queries)) {
    refused(`introspection (${name}) switched off`, await post(query), 400, "GRAPHQL_VALIDATION_FAILED");
  }
  const r = await post("{ __typename }");
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.data.__typename, "Query");
  console.log("ok: introspection is refused when switched off; __typename is answered");
  process.exit(0);
}

// The expected schema: the file, with each operation's description
// completed as docs/graphql.md says Herald serves it.
const file = buildSchema(readFileSync(new URL("../../internal/graph/schema.graphqls", import.meta.url), "utf8"));
const roots = new Set([file.getQueryType(), file.getMutationType()]);
for (const type of Object.values(file.getTypeMap())) {
  if (!isObjectType(type) || type.name.startsWith("__")) continue;
  for (const field of Object.values(type.getFields())) {
    const auth = field.astNode?.directives?.find((d) => d.name.value === "auth");
    const scope = auth?.arguments?.find((a) => a.name.value === "scope");
    let need = "";
    if (scope) need = `Requires the ${scope.value.value} scope.`;
    else if (auth) need = "Requires an access token.";
    else if (roots.has(type)) need = "Requires no access token.";
    if (need) field.description = field.description ? `${field.description}\n\n${need}` : need;
  }
}
const expected = printSchema(lexicographicSortSchema(file));

// Directives the server's GraphQL library defines besides the
// specification's: served, and not declared in the file.
const serverDirectives = ["defer"];

for (const [name, query] of Object.entries(queries)) {
  for (const accept of [graphqlResponse, "application/json"]) {
    const r = await post(query, accept);
    assert.equal(r.status, 200, `introspection (${name}, ${accept}): ${r.text.slice(0, 300)}`);
    assert.equal(r.contentType, `${accept}; charset=utf-8`);
    assert.equal(r.body.errors, undefined, `introspection (${name}): errors ${JSON.stringify(r.body.errors)}`);
    const client = buildClientSchema(r.body.data);
    for (const d of serverDirectives) assert.ok(client.getDirective(d), `@${d} is not served`);
    const config = client.toConfig();
    const served = new GraphQLSchema({ ...config, directives: config.directives.filter((d) => !serverDirectives.includes(d.name)) });
    assert.equal(printSchema(lexicographicSortSchema(served)), expected, `introspection (${name}): the served schema is not schema.graphqls`);
  }
}

// What schema tools send besides the full query: a look at one type, and
// a probe of which introspection fields the server has.
{
  const r = await post(`query { __type(name: "Device") { name kind fields { name type { name kind ofType { name kind ofType { name kind } } } } } }`);
  assert.equal(r.status, 200, r.text);
  const deviceId = r.body.data.__type.fields.find((f) => f.name === "deviceId");
  assert.deepEqual(deviceId.type, { name: null, kind: "NON_NULL", ofType: { name: "String", kind: "SCALAR", ofType: null } }, "Device.deviceId is String!");
  const probe = await post(`query Probe {
    schema: __type(name: "__Schema") { fields { name } }
    type: __type(name: "__Type") { fields { name args { name } } }
    directive: __type(name: "__Directive") { fields { name } }
    inputValue: __type(name: "__InputValue") { fields { name } }
  }`);
  assert.equal(probe.status, 200, probe.text);
  const has = (t, f) => probe.body.data[t].fields.some((x) => x.name === f);
  assert.ok(has("schema", "description") && has("type", "specifiedByURL") && has("directive", "isRepeatable") && has("inputValue", "isDeprecated"), probe.text);
}

// Deeper, or repeated, introspection is refused before validation.
refused(
  "a 100-level ofType chain",
  await post(`{ __schema { types { ${"ofType { ".repeat(100)}name${" }".repeat(100)} } } }`),
  400,
  "QUERY_TOO_COMPLEX",
);
{
  const doc = parse(queries["every option"]);
  const op = doc.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
  const schemaField = op.selectionSet.selections[0];
  const copies = Array.from({ length: 100 }, (_, i) => ({ ...schemaField, alias: { kind: Kind.NAME, value: `s${i}` } }));
  const aliased = { ...doc, definitions: doc.definitions.map((d) => (d === op ? { ...op, selectionSet: { ...op.selectionSet, selections: copies } } : d)) };
  refused("a hundred aliased copies of the introspection query", await post(print(aliased)), 400, "QUERY_TOO_COMPLEX");
}
console.log("ok: introspection answers schema.graphqls; deeper or repeated introspection is refused");
