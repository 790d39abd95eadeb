import type { components } from "./generated/openapi.js";
import type { InboxChangedSubscription, NotificationJobUpdatedSubscription } from "./generated/graphql.js";
import { InboxChangedDocument, NotificationJobUpdatedDocument } from "./generated/documents.js";
import { HeraldError, isRetryable } from "./errors.js";
import { graphqlError, type HeraldClient } from "./client.js";
import { resolveRetry, retryDelay, sleep, type RetryOptions } from "./retry.js";

export type NotificationJob = components["schemas"]["NotificationJob"];
/**
 * What each event of a followed job carries: the selection of the SDK's
 * NotificationJobUpdated subscription (src/graphql), typed by
 * @graphql-codegen; over SSE the whole job, which has these too.
 */
export type JobProgress = NotificationJobUpdatedSubscription["notificationJobUpdated"];

/**
 * What each event of the caller's inbox carries (`inboxChanged`, or the
 * SSE stream's `inbox` events): the counts, and the item when one was kept.
 */
export type InboxEvent = InboxChangedSubscription["inboxChanged"];

const FINAL = new Set(["completed", "failed", "cancelled"]);

/** One live stream as both transports serve it. */
interface LiveSpec<T> {
  /** The graphql-ws subscription, its variables and its root field. */
  query: string;
  variables: Record<string, unknown>;
  field: string;
  /** The SSE path and the name of its data events. */
  ssePath: string;
  sseEvent: string;
  /** An event after which the stream is over. */
  isFinal: (x: T) => boolean;
}

function jobSpec(jobId: string): LiveSpec<JobProgress> {
  return {
    query: NotificationJobUpdatedDocument,
    variables: { id: jobId },
    field: "notificationJobUpdated",
    ssePath: `/api/v1/notifications/broadcasts/${encodeURIComponent(jobId)}/events`,
    sseEvent: "progress",
    isFinal: (job) => FINAL.has(job.status),
  };
}

const inboxSpec: LiveSpec<InboxEvent> = {
  query: InboxChangedDocument,
  variables: {},
  field: "inboxChanged",
  ssePath: "/api/v1/users/me/inbox/events",
  sseEvent: "inbox",
  isFinal: () => false,
};

/** A WebSocket constructor of the browser's shape (globalThis.WebSocket, or the ws package in Node 20). */
export type WebSocketLike = new (url: string, protocols?: string | string[]) => {
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (ev: any) => void): void;
};

export interface FollowOptions {
  /** graphql-ws first (falling back to SSE when the WebSocket cannot connect), or one of them. */
  transport?: "auto" | "ws" | "sse";
  /** The WebSocket to use; globalThis.WebSocket by default. */
  WebSocket?: WebSocketLike;
  signal?: AbortSignal;
  /** Reconnects follow this schedule (the interface's by default). */
  retry?: RetryOptions | false;
}

function aborted(signal?: AbortSignal): HeraldError {
  return new HeraldError({ code: "ABORTED", message: "aborted", status: 0, cause: signal?.reason, source: "client" });
}

/**
 * Follows a broadcast job to its end: the state at the start, each change,
 * and the final state (completed, failed or cancelled), after which the
 * iteration ends. Over graphql-ws (`notificationJobUpdated`) with a fresh
 * token on each reconnect, or over SSE
 * (`/api/v1/notifications/broadcasts/{id}/events`) resuming with
 * Last-Event-ID; `auto` falls back to SSE when no WebSocket connects.
 */
export function followJob(client: HeraldClient, jobId: string, options: FollowOptions = {}): AsyncGenerator<JobProgress, void, undefined> {
  return followLive(client, jobSpec(jobId), options);
}

/**
 * Follows the signed-in user's own inbox: the counts first, then an event
 * for every item kept and every change of the counts, until the loop
 * breaks or `signal` aborts. Over graphql-ws (`inboxChanged`) or SSE
 * (`/api/v1/users/me/inbox/events`), reconnecting as followJob does; a
 * reconnect starts again with the counts (the stream has no event ids).
 */
export function followInbox(client: HeraldClient, options: FollowOptions = {}): AsyncGenerator<InboxEvent, void, undefined> {
  return followLive(client, inboxSpec, options);
}

async function* followLive<T>(client: HeraldClient, spec: LiveSpec<T>, options: FollowOptions): AsyncGenerator<T, void, undefined> {
  const transport = options.transport ?? "auto";
  const WS = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketLike }).WebSocket;
  if (transport !== "sse" && WS) {
    let got = false;
    try {
      for await (const x of followWS(client, WS, spec, options)) {
        got = true;
        yield x;
      }
      return;
    } catch (e) {
      if (transport === "ws" || got || !(e instanceof WebSocketUnavailable)) throw e;
    }
  } else if (transport === "ws") {
    throw new Error("follow: no WebSocket here; pass options.WebSocket");
  }
  yield* followSSE(client, spec, options);
}

class WebSocketUnavailable extends Error {}

async function credential(client: HeraldClient): Promise<Record<string, string>> {
  const key = client.apiKeyForLive();
  if (key) return { apiKey: key };
  const s = await client.getSession();
  if (!s) throw new HeraldError({ code: "AUTH_REQUIRED", message: "not signed in", status: 401, source: "client" });
  return { token: s.accessToken };
}

async function* followWS<T>(client: HeraldClient, WS: WebSocketLike, spec: LiveSpec<T>, o: FollowOptions): AsyncGenerator<T> {
  const retry = resolveRetry(o.retry);
  const url = client.baseUrl.replace(/^http/, "ws") + "/graphql";
  let attempt = 0;
  let everAcked = false;
  for (;;) {
    if (o.signal?.aborted) throw aborted(o.signal);
    const payload = await credential(client);
    const queue: ({ kind: "event"; value: T } | { kind: "end" } | { kind: "error"; error: unknown } | { kind: "closed"; code: number })[] = [];
    let wake: (() => void) | null = null;
    const push = (x: (typeof queue)[number]) => {
      queue.push(x);
      wake?.();
    };
    let acked = false;
    const ws = new WS(url, "graphql-transport-ws");
    const onAbort = () => ws.close(1000, "aborted");
    o.signal?.addEventListener("abort", onAbort, { once: true });
    ws.addEventListener("open", () => ws.send(JSON.stringify({ type: "connection_init", payload })));
    ws.addEventListener("message", (ev: { data: unknown }) => {
      let m: { type?: string; id?: string; payload?: any };
      try {
        m = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      switch (m.type) {
        case "connection_ack":
          acked = everAcked = true;
          // The connection works: a later close (an access token's expiry,
          // 4403, on a stream with nothing to say) starts the count again,
          // so a quiet stream outlives any number of token lifetimes.
          attempt = 0;
          ws.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query: spec.query, variables: spec.variables } }));
          break;
        case "ping":
          ws.send(JSON.stringify({ type: "pong" }));
          break;
        case "next":
          if (m.payload?.errors?.length) push({ kind: "error", error: graphqlError(m.payload.errors[0], 200) });
          else if (m.payload?.data?.[spec.field]) push({ kind: "event", value: m.payload.data[spec.field] });
          break;
        case "error":
          push({ kind: "error", error: graphqlError(Array.isArray(m.payload) ? m.payload[0] : { message: "subscription error" }, 200) });
          break;
        case "complete":
          push({ kind: "end" });
          break;
      }
    });
    // An error is followed by close (1006), which decides; without a listener Node's ws would throw.
    ws.addEventListener("error", () => {});
    ws.addEventListener("close", (ev: { code: number }) => push({ kind: "closed", code: ev.code }));
    let final = false;
    try {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((r) => (wake = r));
        wake = null;
        const x = queue.shift()!;
        if (x.kind === "event") {
          attempt = 0;
          yield x.value;
          if (spec.isFinal(x.value)) final = true;
        } else if (x.kind === "end") {
          return;
        } else if (x.kind === "error") {
          throw x.error;
        } else {
          if (o.signal?.aborted) throw aborted(o.signal);
          if (final) return;
          if (!acked && !everAcked && x.code !== 4403) throw new WebSocketUnavailable(`WebSocket closed ${x.code} before connection_ack`);
          // 4403: the credential expired or was revoked; refresh before reconnecting.
          if (x.code === 4403) {
            if (client.apiKeyForLive()) throw new HeraldError({ code: "TOKEN_INVALID", message: "the API key was refused (4403)", status: 401, source: "client" });
            await client.refreshSession();
          }
          attempt++;
          if (attempt > retry.maxRetries) throw new HeraldError({ code: "NETWORK_ERROR", message: `WebSocket closed ${x.code}`, status: 0, source: "client" });
          await sleep(x.code === 4403 ? 0 : retryDelay(attempt, retry), o.signal).catch(() => {
            throw aborted(o.signal);
          });
          break;
        }
      }
    } finally {
      o.signal?.removeEventListener("abort", onAbort);
      if (ws.readyState <= 1) ws.close(1000, "done");
    }
  }
}

async function* followSSE<T>(client: HeraldClient, spec: LiveSpec<T>, o: FollowOptions): AsyncGenerator<T> {
  const retry = resolveRetry(o.retry);
  let lastEventId: string | undefined;
  let attempt = 0;
  let refreshed = false;
  for (;;) {
    if (o.signal?.aborted) throw aborted(o.signal);
    const headers: Record<string, string> = { accept: "text/event-stream" };
    const key = client.apiKeyForLive();
    if (key) headers.authorization = `Bearer ${key}`;
    else {
      const s = await client.getSession();
      if (s) headers.authorization = `Bearer ${s.accessToken}`;
    }
    if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
    let res: Response;
    try {
      res = await client.rawFetch(client.baseUrl + spec.ssePath, { headers, signal: o.signal });
    } catch (e) {
      if (o.signal?.aborted) throw aborted(o.signal);
      if (++attempt > retry.maxRetries) throw new HeraldError({ code: "NETWORK_ERROR", message: String(e), status: 0, cause: e, source: "client" });
      await sleep(retryDelay(attempt, retry), o.signal).catch(() => {
        throw aborted(o.signal);
      });
      continue;
    }
    if (res.status === 204) return; // finished, and the client has the final event
    if (!res.ok || !res.body) {
      const text = await res.text();
      let err: HeraldError;
      try {
        const env = JSON.parse(text);
        err = new HeraldError({ code: env.error.code, message: env.error.message, status: res.status, details: env.error.details, requestId: res.headers.get("x-request-id") ?? undefined });
      } catch {
        err = new HeraldError({ code: "INVALID_RESPONSE", message: `HTTP ${res.status}`, status: res.status, source: "client" });
      }
      if (err.code === "TOKEN_EXPIRED" && !key && !refreshed) {
        refreshed = true;
        await client.refreshSession();
        continue;
      }
      if (!isRetryable(err) || ++attempt > retry.maxRetries) throw err;
      await sleep(retryDelay(attempt, retry, err.retryAfter), o.signal).catch(() => {
        throw aborted(o.signal);
      });
      continue;
    }
    refreshed = false;
    let streamError: HeraldError | undefined;
    for await (const ev of sseEvents(res.body)) {
      if (ev.event === spec.sseEvent) {
        attempt = 0;
        if (ev.id !== undefined) lastEventId = ev.id;
        const x = JSON.parse(ev.data) as T;
        yield x;
        if (spec.isFinal(x)) return;
      } else if (ev.event === "error") {
        const e = JSON.parse(ev.data) as { code: string; message: string; details?: unknown };
        streamError = new HeraldError({ code: e.code as never, message: e.message, status: 401, details: e.details });
      }
    }
    if (streamError) {
      if (streamError.code === "TOKEN_EXPIRED" && !key) {
        await client.refreshSession();
        continue;
      }
      throw streamError;
    }
    // The stream ended early (its maximum duration, a replica shutting down): resume.
    if (++attempt > retry.maxRetries) throw new HeraldError({ code: "NETWORK_ERROR", message: "the event stream kept ending", status: 0, source: "client" });
    await sleep(2000, o.signal).catch(() => {
      throw aborted(o.signal);
    });
  }
}

/** The events of a text/event-stream body. */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string; id?: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let event = "message";
  let data: string[] = [];
  let id: string | undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\n|\r/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length) yield { event, data: data.join("\n"), ...(id !== undefined ? { id } : {}) };
          event = "message";
          data = [];
          id = undefined;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const v = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = v;
        else if (field === "data") data.push(v);
        else if (field === "id") id = v;
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
