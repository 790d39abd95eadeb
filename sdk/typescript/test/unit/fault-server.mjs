// An in-process HTTP server answering from a script, for the SDK's tests:
// each request takes the next scripted answer (or the default), and tests
// wait for the nth request with promises, never with timers (they are
// mocked in the schedule tests).
import http from "node:http";

export async function faultServer(handler) {
  const requests = [];
  const waiters = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const r = { method: req.method, url: req.url, headers: req.headers, body, json: body ? JSON.parse(body) : undefined };
      requests.push(r);
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const answer = await handler(r, requests.length, res);
      if (answer === "destroy") {
        req.socket.destroy();
        return;
      }
      if (answer === undefined) return; // the handler answered itself
      const headers = { "content-type": "application/json", ...(answer.headers ?? {}) };
      res.writeHead(answer.status ?? 200, headers);
      res.end(answer.body === undefined ? "" : typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body));
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    /** Resolves once n requests have arrived. */
    waitFor(n) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    close() {
      server.closeAllConnections();
      return new Promise((ok) => server.close(ok));
    },
  };
}

export const ok = (data, headers) => ({ status: 200, body: { success: true, data }, headers });
export const fail = (status, code, details, headers) => ({
  status,
  body: { success: false, error: { code, message: `${code} (test)`, ...(details ? { details } : {}) } },
  headers,
});

/** Lets pending I/O callbacks and promise jobs run (setImmediate is not mocked). */
export async function settle(rounds = 20) {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/**
 * fetch over node:http, for clients in tests with mocked timers: Node's
 * own fetch (undici) keeps an internal timer that a mock's reset kills.
 */
export function httpFetch(url, init = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? "GET", headers: init.headers, signal: init.signal, agent: false }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
        const body = chunks.length ? Buffer.concat(chunks) : null;
        resolve(new Response(res.statusCode === 204 ? null : body, { status: res.statusCode, headers }));
      });
    });
    req.on("error", (e) => reject(init.signal?.aborted ? init.signal.reason : new TypeError(`fetch failed: ${e.message}`, { cause: e })));
    if (init.body !== undefined && init.body !== null) req.write(init.body);
    req.end();
  });
}
