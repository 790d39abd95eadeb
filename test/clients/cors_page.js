// The script of the page TestBrowserCORS serves from an origin other than
// Herald's. It calls Herald the way a web app does, with fetch, and
// leaves what it saw in window.heraldResult (a promise) for
// cors_browser.mjs to check. The query string says where Herald is
// (herald), the access token to use (token) and the email to sign up
// (email). The same page is served from the allowed origin and from
// another one.
"use strict";

const query = new URLSearchParams(location.search);
const herald = query.get("herald");

// call fetches path from Herald and returns what browser code can see:
// status, body and the headers Herald exposes, or the error fetch threw.
async function call(path, init = {}) {
  try {
    const res = await fetch(herald + path, { ...init, signal: AbortSignal.timeout(20000) });
    const seen = { status: res.status, headers: {} };
    for (const h of ["Content-Type", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-Request-ID"]) {
      seen.headers[h] = res.headers.get(h);
    }
    seen.body = await res.json();
    return seen;
  } catch (e) {
    return { error: e.name, message: e.message };
  }
}

const signupDocument = `mutation Signup($email: String!, $password: String!) {
  signup(email: $email, password: $password) { message success }
}`;

async function run() {
  const json = { "Content-Type": "application/json" };
  const out = { origin: location.origin };
  // Preflighted (Content-Type: application/json, Authorization).
  out.signup = await call("/graphql", {
    method: "POST",
    headers: json,
    body: JSON.stringify({ query: signupDocument, variables: { email: query.get("email"), password: "Secret123" } }),
  });
  out.me = await call("/api/v1/users/me", { headers: { Authorization: "Bearer " + query.get("token") } });
  out.badToken = await call("/api/v1/users/me", { headers: { Authorization: "Bearer not-a-token" } });
  // Simple (not preflighted): the browser sends it whatever the origin,
  // and lets the page read the answer only with CORS headers.
  out.simple = await call("/api/v1/devices");
  return out;
}

window.heraldResult = run();
window.heraldResult.then((out) => {
  document.getElementById("result").textContent = JSON.stringify(out, null, 2);
});
