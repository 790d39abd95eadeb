// The SDK in a page on another origin (bundled with esbuild by
// TestTypeScriptSDKInChromium, driven by test/clients/sdk_browser.mjs): it
// logs in, reads the user, queues a broadcast and follows it live with the
// browser's own WebSocket, and writes what it saw into #result as JSON.
import { HeraldClient, HeraldError } from "../../dist/index.js";

const q = new URLSearchParams(location.search);
const out = { origin: location.origin };
try {
  const herald = new HeraldClient({ baseUrl: q.get("herald") });
  const events = [];
  herald.onAuthStateChange((e) => events.push(e));
  const bad = await herald.auth.login({ email: q.get("email"), password: "Wrong-pass1" }).catch((e) => e);
  out.badLogin = bad instanceof HeraldError ? `${bad.code} ${bad.status}` : String(bad);
  out.login = (await herald.auth.login({ email: q.get("email"), password: q.get("password") })).status;
  out.me = (await herald.users.me()).email;
  out.rateLimit = herald.lastRateLimit ?? null;
  const job = await herald.notifications.broadcast({ notification: { subject: "Browser", content: "followed live" } });
  out.totalRecipients = job.totalRecipients;
  out.seen = [];
  for await (const p of herald.notifications.follow(job.jobId, { transport: "ws" })) out.seen.push(`${p.status}:${p.sent}`);
  out.events = events;
} catch (e) {
  out.error = e instanceof HeraldError ? `${e.code} ${e.status}: ${e.message}` : `${e?.name}: ${e?.message}`;
}
document.getElementById("result").textContent = JSON.stringify(out);
