import type { components, operations } from "./generated/openapi.js";
import { ERROR_CATALOGUE, HeraldError, isErrorCode, isRetryable, type AnyErrorCode } from "./errors.js";
import { parseRetryAfter, resolveRetry, retryDelay, sleep, type ResolvedRetry, type RetryOptions } from "./retry.js";
import { MemoryStorage, type StoredSession, type TokenStorage } from "./storage.js";
import { followInbox, followJob, type FollowOptions, type InboxEvent, type JobProgress } from "./live.js";

export type Schemas = components["schemas"];

type OkStatus = 200 | 201 | 202 | 204;
type OkResponse<O> = O extends { responses: infer R } ? R[Extract<keyof R, OkStatus>] : never;
/** The `data` of an operation's success envelope. */
export type DataOf<K extends keyof operations> =
  OkResponse<operations[K]> extends { content: { "application/json": infer C } }
    ? C extends { data?: infer D }
      ? Exclude<D, undefined>
      : never
    : never;
/** The JSON body of an operation. */
export type BodyOf<K extends keyof operations> = operations[K] extends {
  requestBody?: { content: { "application/json": infer B } };
}
  ? B
  : never;
/** The query parameters of an operation. */
export type QueryOf<K extends keyof operations> = operations[K] extends { parameters: { query?: infer Q } }
  ? Exclude<Q, undefined>
  : never;

/** The X-RateLimit-* headers of an answer (of the tier closest to exhaustion). */
export interface RateLimitInfo {
  limit: number;
  remaining: number;
  /** When the window resets, Unix seconds. */
  reset: number;
}

export type AuthEvent = "SIGNED_IN" | "TOKEN_REFRESHED" | "SIGNED_OUT";
export type AuthListener = (event: AuthEvent, session: StoredSession | null) => void;

export interface HeraldClientOptions {
  /** The server, as https://herald.example.com (no trailing /api/v1). */
  baseUrl: string;
  /** fetch to use; globalThis.fetch by default. */
  fetch?: typeof fetch;
  /** Where the session is kept; in memory by default. */
  storage?: TokenStorage;
  /** An API key (hk_…) for server-side use; sent as the bearer instead of a session. */
  apiKey?: string;
  /** The retry schedule (the interface's by default), or false for none. */
  retry?: RetryOptions | false;
  /** After a failed refresh, calls needing one fail at once for this long (ms); 60000 by default. */
  refreshCooldownMs?: number;
  /** Refresh before a request when the access token expires within this many ms; off by default. */
  refreshBeforeExpiryMs?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** Called with the X-RateLimit-* headers of each answer carrying them. */
  onRateLimit?: (info: RateLimitInfo, path: string) => void;
}

export interface RequestOptions {
  /** Cancels the request and any wait before a retry. */
  signal?: AbortSignal;
  /** Overrides the client's retry options for this call (false: no retry). */
  retry?: RetryOptions | false;
  /** An Idempotency-Key to send (makes a POST retryable). */
  idempotencyKey?: string;
  /** Extra headers. */
  headers?: Record<string, string>;
}

export interface RawRequest extends RequestOptions {
  method: string;
  path: string;
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  /** session (default): the signed-in user's token, refreshed on TOKEN_EXPIRED; apiKey: the key; none: no Authorization. */
  auth?: "session" | "apiKey" | "none" | "auto";
  /** Add an Idempotency-Key when none is given, so the POST can be retried. */
  idempotent?: boolean;
}

export interface HeraldResponse<T> {
  data: T;
  status: number;
  headers: Headers;
  requestId: string | undefined;
  rateLimit: RateLimitInfo | undefined;
  /** Retries this answer took (not counting a token refresh's). */
  retries: number;
}

export type LoginResult =
  | { status: "signedIn"; session: StoredSession }
  | {
      status: "mfaRequired";
      challengeToken: string;
      expiresAt: string;
      factors: ("totp" | "recovery" | "passkey")[];
    };

const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

function newIdempotencyKey(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}

function rateLimitOf(h: Headers): RateLimitInfo | undefined {
  const limit = h.get("x-ratelimit-limit");
  const remaining = h.get("x-ratelimit-remaining");
  const reset = h.get("x-ratelimit-reset");
  if (limit === null || remaining === null || reset === null) return undefined;
  return { limit: Number(limit), remaining: Number(remaining), reset: Number(reset) };
}

function abortError(signal: AbortSignal | undefined): HeraldError<"ABORTED"> {
  return new HeraldError({ code: "ABORTED", message: "the request was aborted", status: 0, cause: signal?.reason, source: "client" });
}

/**
 * A Herald client: typed REST calls with the interface's retry schedule,
 * and a session whose access token is refreshed once, for every call
 * waiting on it, when the server answers TOKEN_EXPIRED.
 */
export class HeraldClient {
  readonly baseUrl: string;
  #fetch: typeof fetch;
  #storage: TokenStorage;
  #apiKey: string | undefined;
  #retry: ResolvedRetry;
  #cooldownMs: number;
  #refreshBeforeMs: number | undefined;
  #headers: Record<string, string>;
  #onRateLimit: HeraldClientOptions["onRateLimit"];
  #listeners = new Set<AuthListener>();
  #session: StoredSession | null | undefined = undefined; // undefined: not read from storage yet
  #refreshing: Promise<StoredSession> | null = null;
  #refreshFailure: { until: number; error: HeraldError } | null = null;
  /** Refreshes made (a counter for tests and metrics). */
  refreshCount = 0;
  /** The X-RateLimit-* headers of the last answer carrying them. */
  lastRateLimit: RateLimitInfo | undefined;

  readonly auth: AuthApi;
  readonly users: UsersApi;
  readonly devices: DevicesApi;
  readonly inbox: InboxApi;
  readonly notifications: NotificationsApi;
  readonly messenger: MessengerApi;
  readonly admin: AdminApi;
  readonly apiKeys: ApiKeysApi;
  readonly webhooks: WebhooksApi;

  constructor(options: HeraldClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    const f = options.fetch ?? globalThis.fetch;
    if (!f) throw new Error("HeraldClient: no fetch; pass options.fetch");
    this.#fetch = f.bind(globalThis);
    this.#storage = options.storage ?? new MemoryStorage();
    this.#apiKey = options.apiKey;
    this.#retry = resolveRetry(options.retry);
    this.#cooldownMs = options.refreshCooldownMs ?? 60_000;
    this.#refreshBeforeMs = options.refreshBeforeExpiryMs;
    this.#headers = { ...(options.headers ?? {}) };
    this.#onRateLimit = options.onRateLimit;
    this.auth = new AuthApi(this);
    this.users = new UsersApi(this);
    this.devices = new DevicesApi(this);
    this.inbox = new InboxApi(this);
    this.notifications = new NotificationsApi(this);
    this.messenger = new MessengerApi(this);
    this.admin = new AdminApi(this);
    this.apiKeys = new ApiKeysApi(this);
    this.webhooks = new WebhooksApi(this);
  }

  /** The API key, for live progress (internal). */
  apiKeyForLive(): string | undefined {
    return this.#apiKey;
  }

  /** The client's fetch, for streams (internal). */
  rawFetch(url: string, init: RequestInit): Promise<Response> {
    return this.#fetch(url, { ...init, headers: { ...this.#headers, ...(init.headers as Record<string, string>) } });
  }

  // --- Sessions -----------------------------------------------------------

  /** Calls listener on SIGNED_IN, TOKEN_REFRESHED and SIGNED_OUT; returns the unsubscribe. */
  onAuthStateChange(listener: AuthListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: AuthEvent, session: StoredSession | null): void {
    for (const l of [...this.#listeners]) {
      try {
        l(event, session);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** The stored session, or null when signed out. */
  async getSession(): Promise<StoredSession | null> {
    if (this.#session === undefined) this.#session = (await this.#storage.get()) ?? null;
    return this.#session;
  }

  /** Adopts tokens (from login, or obtained elsewhere) as the session. */
  async setSession(tokens: { token: string; refreshToken: string; expiresIn: number }, event: AuthEvent = "SIGNED_IN"): Promise<StoredSession> {
    const session: StoredSession = {
      accessToken: tokens.token,
      refreshToken: tokens.refreshToken,
      expiresAt: Date.now() + tokens.expiresIn * 1000,
    };
    this.#session = session;
    this.#refreshFailure = null;
    await this.#storage.set(session);
    this.#emit(event, session);
    return session;
  }

  /** Forgets the session locally (the server's logout is auth.logout). */
  async signOutLocally(): Promise<void> {
    const had = (await this.getSession()) !== null;
    this.#session = null;
    await this.#storage.remove();
    if (had) this.#emit("SIGNED_OUT", null);
  }

  /**
   * Refreshes the session: one refresh in flight per client, shared by
   * every caller. A refresh the server refuses signs the client out; any
   * failure starts the cooldown, during which this rejects at once.
   */
  refreshSession(): Promise<StoredSession> {
    if (this.#refreshing) return this.#refreshing;
    const failure = this.#refreshFailure;
    if (failure && Date.now() < failure.until) return Promise.reject(failure.error);
    this.#refreshing = this.#doRefresh().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #doRefresh(): Promise<StoredSession> {
    const session = await this.getSession();
    if (!session) {
      throw new HeraldError({ code: "AUTH_REQUIRED", message: "not signed in", status: 401, source: "client" });
    }
    try {
      const res = await this.request<DataOf<"refreshToken">>({
        method: "POST",
        path: "/api/v1/auth/refresh",
        body: { refreshToken: session.refreshToken },
        auth: "none",
        retry: false,
      });
      this.refreshCount++;
      return await this.setSession(res.data, "TOKEN_REFRESHED");
    } catch (e) {
      const err = e instanceof HeraldError ? e : new HeraldError({ code: "NETWORK_ERROR", message: String(e), status: 0, cause: e, source: "client" });
      this.#refreshFailure = { until: Date.now() + this.#cooldownMs, error: err };
      // Refused (not a network error or a 5xx): the session is over.
      if (!isRetryable(err) && err.code !== "ABORTED") {
        // Another tab may have stored a newer session meanwhile; keep that one.
        const now = await this.getSession();
        if (now && now.refreshToken === session.refreshToken) await this.signOutLocally();
      }
      throw err;
    }
  }

  // --- Requests -----------------------------------------------------------

  /**
   * Sends one request: the envelope's data on success, a HeraldError
   * otherwise. Retries per the schedule (idempotent methods, and POSTs with
   * an Idempotency-Key), and on TOKEN_EXPIRED refreshes the session and
   * sends the request once more.
   */
  async request<T = unknown>(req: RawRequest): Promise<HeraldResponse<T>> {
    const method = req.method.toUpperCase();
    const retry = req.retry === undefined ? this.#retry : resolveRetry(req.retry === false ? false : { ...this.#retry, ...req.retry });
    const headers: Record<string, string> = { accept: "application/json", ...this.#headers, ...(req.headers ?? {}) };
    let idemKey = req.idempotencyKey;
    if (!idemKey && req.idempotent && retry.maxRetries > 0) idemKey = newIdempotencyKey();
    if (idemKey) headers["idempotency-key"] = idemKey;
    const retryable = IDEMPOTENT_METHODS.has(method) || idemKey !== undefined;
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers["content-type"] = "application/json";
    }
    let url = this.baseUrl + req.path;
    if (req.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(req.query)) if (v !== undefined && v !== null) q.set(k, String(v));
      const s = q.toString();
      if (s) url += "?" + s;
    }
    let auth = req.auth ?? "auto";
    if (auth === "auto") auth = this.#apiKey ? "apiKey" : "session";

    let retries = 0;
    let refreshed = false;
    for (;;) {
      if (req.signal?.aborted) throw abortError(req.signal);
      let usedToken: string | undefined;
      if (auth === "apiKey") {
        if (!this.#apiKey) throw new HeraldError({ code: "AUTH_REQUIRED", message: "no API key configured", status: 401, source: "client" });
        headers.authorization = `Bearer ${this.#apiKey}`;
      } else if (auth === "session") {
        let s = await this.getSession();
        if (s && !refreshed && this.#refreshBeforeMs !== undefined && s.expiresAt - Date.now() < this.#refreshBeforeMs) {
          try {
            s = await this.refreshSession();
            refreshed = true;
          } catch {
            s = await this.getSession();
          }
        }
        if (s) {
          usedToken = s.accessToken;
          headers.authorization = `Bearer ${s.accessToken}`;
        } else {
          delete headers.authorization;
        }
      }
      let err: HeraldError;
      try {
        const res = await this.#fetch(url, { method, headers, body, signal: req.signal });
        const out = await this.#read<T>(res, req.path);
        if (out.ok) return { ...out.value, retries };
        err = out.error;
      } catch (e) {
        if (e instanceof HeraldError) throw e;
        if (req.signal?.aborted) throw abortError(req.signal);
        err = new HeraldError({ code: "NETWORK_ERROR", message: e instanceof Error ? e.message : String(e), status: 0, cause: e, source: "client" });
      }

      if (err.code === "TOKEN_EXPIRED" && auth === "session" && !refreshed && usedToken !== undefined) {
        refreshed = true;
        const now = await this.getSession();
        // Another call refreshed meanwhile: retry with its token.
        if (!(now && now.accessToken !== usedToken)) await this.refreshSession();
        continue;
      }
      if (!retryable || !isRetryable(err) || retries >= retry.maxRetries) throw err;
      retries++;
      try {
        await sleep(retryDelay(retries, retry, err.retryAfter), req.signal);
      } catch {
        throw abortError(req.signal);
      }
    }
  }

  async #read<T>(res: Response, path: string): Promise<{ ok: true; value: Omit<HeraldResponse<T>, "retries"> } | { ok: false; error: HeraldError }> {
    const requestId = res.headers.get("x-request-id") ?? undefined;
    const rateLimit = rateLimitOf(res.headers);
    if (rateLimit) {
      this.lastRateLimit = rateLimit;
      this.#onRateLimit?.(rateLimit, path);
    }
    const retryAfterHeader = parseRetryAfter(res.headers.get("retry-after"));
    const text = await res.text();
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    const env = json as { success?: boolean; data?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined;
    if (res.ok && env && env.success === true) {
      return { ok: true, value: { data: env.data as T, status: res.status, headers: res.headers, requestId, rateLimit } };
    }
    if (res.ok && res.status === 204) {
      return { ok: true, value: { data: undefined as T, status: res.status, headers: res.headers, requestId, rateLimit } };
    }
    if (env && env.success === false && env.error && typeof env.error.code === "string") {
      const details = env.error.details as { retryAfter?: unknown } | undefined;
      const detailRetry = typeof details?.retryAfter === "number" ? details.retryAfter : undefined;
      return {
        ok: false,
        error: new HeraldError({
          code: env.error.code as AnyErrorCode,
          message: typeof env.error.message === "string" ? env.error.message : env.error.code,
          status: res.status,
          requestId,
          details: env.error.details,
          retryAfter: retryAfterHeader ?? detailRetry,
        }),
      };
    }
    // Not Herald's envelope (a proxy's page, an empty 502): by status.
    const code: AnyErrorCode =
      res.status === 429 ? "RATE_LIMITED" : res.status === 502 ? "UPSTREAM_ERROR" : res.status === 503 ? "SERVICE_UNAVAILABLE" : res.status >= 500 ? "INTERNAL_ERROR" : "INVALID_RESPONSE";
    return {
      ok: false,
      error: new HeraldError({ code, message: `HTTP ${res.status} without Herald's envelope`, status: res.status, requestId, retryAfter: retryAfterHeader, source: "client" }),
    };
  }

  /**
   * Sends a GraphQL operation to /graphql with the session's (or the API
   * key's) token and the same retry and refresh rules (queries are retried;
   * mutations only with an idempotency key). The first error of `errors`
   * is thrown as a HeraldError with its `extensions.code`.
   */
  async graphql<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    options: RequestOptions & { operationName?: string; auth?: RawRequest["auth"] } = {},
  ): Promise<T> {
    const isMutation = /^\s*mutation\b/.test(query.replace(/^(\s*#[^\n]*\n)*/, ""));
    const run = async (): Promise<T> => {
      const res = await this.#fetch(this.baseUrl + "/graphql", {
        method: "POST",
        headers: this.#graphqlHeaders(await this.#bearer(options.auth), options.headers),
        body: JSON.stringify({ query, variables, operationName: options.operationName }),
        signal: options.signal,
      });
      const requestId = res.headers.get("x-request-id") ?? undefined;
      const rateLimit = rateLimitOf(res.headers);
      if (rateLimit) {
        this.lastRateLimit = rateLimit;
        this.#onRateLimit?.(rateLimit, "/graphql");
      }
      const text = await res.text();
      let json: { data?: T | null; errors?: { message: string; path?: unknown; extensions?: Record<string, unknown> }[] } | undefined;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      if (json?.errors?.length) throw graphqlError(json.errors[0]!, res.status, requestId, parseRetryAfter(res.headers.get("retry-after")));
      if (!res.ok || !json || json.data == null) {
        throw new HeraldError({ code: res.status >= 500 ? "INTERNAL_ERROR" : "INVALID_RESPONSE", message: `HTTP ${res.status} without a GraphQL answer`, status: res.status, requestId, source: "client" });
      }
      return json.data;
    };
    return this.#withPolicy(run, { retryable: !isMutation || options.idempotencyKey !== undefined, retry: options.retry, signal: options.signal, auth: options.auth });
  }

  async #bearer(auth: RawRequest["auth"]): Promise<string | undefined> {
    let a = auth ?? "auto";
    if (a === "auto") a = this.#apiKey ? "apiKey" : "session";
    if (a === "apiKey") return this.#apiKey;
    if (a === "session") return (await this.getSession())?.accessToken;
    return undefined;
  }

  #graphqlHeaders(bearer: string | undefined, extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { accept: "application/json", "content-type": "application/json", ...this.#headers, ...(extra ?? {}) };
    if (bearer) h.authorization = `Bearer ${bearer}`;
    return h;
  }

  /** The retry and refresh rules around a call that throws HeraldErrors. */
  async #withPolicy<T>(run: () => Promise<T>, o: { retryable: boolean; retry?: RetryOptions | false | undefined; signal?: AbortSignal | undefined; auth?: RawRequest["auth"] }): Promise<T> {
    const retry = o.retry === undefined ? this.#retry : resolveRetry(o.retry === false ? false : { ...this.#retry, ...o.retry });
    let retries = 0;
    let refreshed = false;
    for (;;) {
      if (o.signal?.aborted) throw abortError(o.signal);
      const usedToken = await this.#bearer(o.auth);
      let err: HeraldError;
      try {
        return await run();
      } catch (e) {
        if (e instanceof HeraldError) err = e;
        else if (o.signal?.aborted) throw abortError(o.signal);
        else err = new HeraldError({ code: "NETWORK_ERROR", message: e instanceof Error ? e.message : String(e), status: 0, cause: e, source: "client" });
      }
      const auth = !o.auth || o.auth === "auto" ? (this.#apiKey ? "apiKey" : "session") : o.auth;
      const isSession = auth === "session";
      if (err.code === "TOKEN_EXPIRED" && isSession && !refreshed && usedToken !== undefined) {
        refreshed = true;
        const now = await this.getSession();
        if (!(now && now.accessToken !== usedToken)) await this.refreshSession();
        continue;
      }
      if (!o.retryable || !isRetryable(err) || retries >= retry.maxRetries) throw err;
      retries++;
      try {
        await sleep(retryDelay(retries, retry, err.retryAfter), o.signal);
      } catch {
        throw abortError(o.signal);
      }
    }
  }
}

/** A GraphQL error as a HeraldError: `extensions.code` is the code, the other extensions its details. */
export function graphqlError(
  e: { message: string; extensions?: Record<string, unknown> },
  status: number,
  requestId?: string,
  retryAfterHeader?: number,
): HeraldError {
  const { code, ...rest } = e.extensions ?? {};
  const c = typeof code === "string" && (isErrorCode(code) || code.length > 0) ? (code as AnyErrorCode) : "INVALID_RESPONSE";
  const details = Object.keys(rest).length ? rest : undefined;
  const retryAfter = retryAfterHeader ?? (typeof rest.retryAfter === "number" ? rest.retryAfter : undefined);
  // A GraphQL answer at 200 carries its error's catalogue status in the code.
  let st = status;
  if (st === 200 && isErrorCode(c)) st = ERROR_CATALOGUE[c].status;
  return new HeraldError({ code: c, message: e.message, status: st, requestId, details, retryAfter, source: "graphql" });
}


// --- The API surface ---------------------------------------------------------

abstract class Api {
  constructor(protected readonly c: HeraldClient) {}
  protected async call<K extends keyof operations>(
    _op: K,
    method: string,
    path: string,
    o: RequestOptions & { body?: unknown; query?: RawRequest["query"]; auth?: RawRequest["auth"]; idempotent?: boolean } = {},
  ): Promise<DataOf<K>> {
    return (await this.c.request<DataOf<K>>({ method, path, ...o })).data;
  }
}

const enc = encodeURIComponent;

export class AuthApi extends Api {
  /** Creates an unverified account and emails a 6-digit code. */
  signup(body: BodyOf<"register">, o?: RequestOptions) {
    return this.call("register", "POST", "/api/v1/auth/register", { ...o, body, auth: "none" });
  }
  /** Confirms the emailed code. */
  verifyEmail(body: BodyOf<"verifyEmail">, o?: RequestOptions) {
    return this.call("verifyEmail", "POST", "/api/v1/auth/verify", { ...o, body, auth: "none" });
  }
  /** Emails a new verification code. */
  resendVerification(body: BodyOf<"resendVerificationEmail">, o?: RequestOptions) {
    return this.call("resendVerificationEmail", "POST", "/api/v1/auth/resend-verification", { ...o, body, auth: "none" });
  }
  /**
   * Logs in. With a second factor, resolves to `mfaRequired` with the
   * challenge; complete it with completeMfaLogin.
   */
  async login(body: BodyOf<"login">, o?: RequestOptions): Promise<LoginResult> {
    try {
      const tokens = await this.call("login", "POST", "/api/v1/auth/login", { ...o, body, auth: "none" });
      return { status: "signedIn", session: await this.c.setSession(tokens) };
    } catch (e) {
      if (e instanceof HeraldError && e.is("MFA_REQUIRED") && e.details) {
        const d = e.details;
        return { status: "mfaRequired", challengeToken: d.challengeToken, expiresAt: d.expiresAt, factors: d.factors };
      }
      throw e;
    }
  }
  /** The second step of a login that answered mfaRequired: a TOTP or recovery code. */
  async completeMfaLogin(body: BodyOf<"completeMfaLogin">, o?: RequestOptions): Promise<StoredSession> {
    const tokens = await this.call("completeMfaLogin", "POST", "/api/v1/auth/login/mfa", { ...o, body, auth: "none" });
    return this.c.setSession(tokens);
  }
  /**
   * Passwordless sign-in with a passkey, first step: the WebAuthn request
   * options to pass to navigator.credentials.get (or a native passkey API).
   */
  beginPasskeyLogin(o?: RequestOptions) {
    return this.call("beginPasskeyLogin", "POST", "/api/v1/auth/passkey/begin", { ...o, auth: "none" });
  }
  /** Passwordless sign-in, second step: the assertion (as JSON) for the begin step's challengeId. */
  async finishPasskeyLogin(body: BodyOf<"finishPasskeyLogin">, o?: RequestOptions): Promise<StoredSession> {
    const tokens = await this.call("finishPasskeyLogin", "POST", "/api/v1/auth/passkey/finish", { ...o, body, auth: "none" });
    return this.c.setSession(tokens);
  }
  /** A login that answered mfaRequired with `passkey` among its factors: the WebAuthn options for its challenge. */
  beginPasskeyMfa(body: BodyOf<"beginPasskeyMfa">, o?: RequestOptions) {
    return this.call("beginPasskeyMfa", "POST", "/api/v1/auth/login/mfa/passkey/begin", { ...o, body, auth: "none" });
  }
  /** Completes that login with the passkey's assertion. */
  async completeMfaLoginWithPasskey(body: BodyOf<"completeMfaLoginWithPasskey">, o?: RequestOptions): Promise<StoredSession> {
    const tokens = await this.call("completeMfaLoginWithPasskey", "POST", "/api/v1/auth/login/mfa/passkey/finish", { ...o, body, auth: "none" });
    return this.c.setSession(tokens);
  }
  /** Refreshes now (shared with any refresh in flight). */
  refresh(): Promise<StoredSession> {
    return this.c.refreshSession();
  }
  /** Ends the session at the server and forgets it here (even when the server call fails). */
  async logout(o?: RequestOptions): Promise<void> {
    try {
      if (await this.c.getSession()) await this.call("logout", "POST", "/api/v1/auth/logout", { ...o, auth: "session" });
    } finally {
      await this.c.signOutLocally();
    }
  }
  /** Asks for a password reset code. */
  requestPasswordReset(body: BodyOf<"requestPasswordReset">, o?: RequestOptions) {
    return this.call("requestPasswordReset", "POST", "/api/v1/auth/password-reset", { ...o, body, auth: "none" });
  }
  /** Sets a new password with the emailed code. */
  resetPassword(body: BodyOf<"resetPassword">, o?: RequestOptions) {
    return this.call("resetPassword", "POST", "/api/v1/auth/password-reset/confirm", { ...o, body, auth: "none" });
  }
}

export class UsersApi extends Api {
  /** The signed-in user. */
  me(o?: RequestOptions) {
    return this.call("me", "GET", "/api/v1/users/me", { ...o, auth: "session" });
  }
  subscription(o?: RequestOptions) {
    return this.call("mySubscription", "GET", "/api/v1/subscription", { ...o, auth: "session" });
  }
  sessions(o?: RequestOptions) {
    return this.call("mySessions", "GET", "/api/v1/users/me/sessions", { ...o, auth: "session" });
  }
  revokeSession(id: string, o?: RequestOptions) {
    return this.call("revokeSession", "DELETE", `/api/v1/users/me/sessions/${enc(id)}`, { ...o, auth: "session" });
  }
  changePassword(body: BodyOf<"changePassword">, o?: RequestOptions) {
    return this.call("changePassword", "POST", "/api/v1/users/me/password", { ...o, body, auth: "session" });
  }
  /** The account's second factors. */
  mfa(o?: RequestOptions) {
    return this.call("myMfa", "GET", "/api/v1/users/me/mfa", { ...o, auth: "session" });
  }
  /** Starts a TOTP factor: its secret and otpauth URI; confirm it with a code (confirmTotp). */
  enrollTotp(o?: RequestOptions) {
    return this.call("enrollTotp", "POST", "/api/v1/users/me/mfa/totp", { ...o, auth: "session" });
  }
  /**
   * Confirms a TOTP factor with a code from the app: answers the factor and
   * the recovery codes, and adopts the session's new tokens (now `aal2`).
   */
  async confirmTotp(factorId: string, body: BodyOf<"confirmTotp">, o?: RequestOptions) {
    const confirmed = await this.call("confirmTotp", "POST", `/api/v1/users/me/mfa/totp/${enc(factorId)}/confirm`, { ...o, body, auth: "session" });
    await this.c.setSession(confirmed.session, "TOKEN_REFRESHED");
    return confirmed;
  }
  /**
   * Registers a passkey, first step: the WebAuthn creation options to pass
   * to navigator.credentials.create (or a native passkey API).
   */
  beginPasskeyRegistration(o?: RequestOptions) {
    return this.call("beginPasskeyRegistration", "POST", "/api/v1/users/me/passkeys/register/begin", { ...o, auth: "session" });
  }
  /** Registers a passkey, second step: the new credential (as JSON) for the begin step's challengeId. */
  finishPasskeyRegistration(body: BodyOf<"finishPasskeyRegistration">, o?: RequestOptions) {
    return this.call("finishPasskeyRegistration", "POST", "/api/v1/users/me/passkeys/register/finish", { ...o, body, auth: "session" });
  }
  passkeys(o?: RequestOptions) {
    return this.call("myPasskeys", "GET", "/api/v1/users/me/passkeys", { ...o, auth: "session" });
  }
  removePasskey(id: string, o?: RequestOptions) {
    return this.call("removePasskey", "DELETE", `/api/v1/users/me/passkeys/${enc(id)}`, { ...o, auth: "session" });
  }
  /**
   * A one-time Telegram link (https://t.me/<bot>?start=…, 15 minutes):
   * pressing Start in it links the chat to this account.
   */
  messengerLink(o?: RequestOptions) {
    return this.call("createMessengerLink", "POST", "/api/v1/users/me/messenger-link", { ...o, auth: "session" });
  }
  /** Unlinks the account's Telegram chat (which stays subscribed to the bot). */
  unlinkMessenger(o?: RequestOptions) {
    return this.call("deleteMessengerLink", "DELETE", "/api/v1/users/me/messenger-link", { ...o, auth: "session" });
  }
}

/** The signed-in user's in-app inbox. */
export class InboxApi extends Api {
  list(query?: QueryOf<"myInbox">, o?: RequestOptions) {
    return this.call("myInbox", "GET", "/api/v1/users/me/inbox", { ...o, query: query as RawRequest["query"], auth: "session" });
  }
  counts(o?: RequestOptions) {
    return this.call("myInboxCounts", "GET", "/api/v1/users/me/inbox/counts", { ...o, auth: "session" });
  }
  markRead(id: string, o?: RequestOptions) {
    return this.call("markInboxItemRead", "POST", `/api/v1/users/me/inbox/${enc(id)}/read`, { ...o, auth: "session" });
  }
  /**
   * Follows the inbox live, over graphql-ws or SSE: the counts first, then
   * each item kept and each change of the counts, until the loop breaks:
   * `for await (const ev of herald.inbox.follow({ signal })) …`.
   */
  follow(o?: FollowOptions): AsyncGenerator<InboxEvent, void, undefined> {
    return followInbox(this.c, o);
  }
}

export class DevicesApi extends Api {
  list(o?: RequestOptions) {
    return this.call("listDevices", "GET", "/api/v1/devices", { ...o, auth: "session" });
  }
  register(body: BodyOf<"registerDevice">, o?: RequestOptions) {
    return this.call("registerDevice", "POST", "/api/v1/devices", { ...o, body, auth: "session" });
  }
  updatePushToken(id: string, body: BodyOf<"updatePushToken">, o?: RequestOptions) {
    return this.call("updatePushToken", "PUT", `/api/v1/devices/${enc(id)}/push-token`, { ...o, body, auth: "session" });
  }
  remove(id: string, o?: RequestOptions) {
    return this.call("removeDevice", "DELETE", `/api/v1/devices/${enc(id)}`, { ...o, auth: "session" });
  }
}

/** Sends carry an Idempotency-Key (the SDK makes one unless given), so they are retried safely. */
export class NotificationsApi extends Api {
  sendToDevice(deviceId: string, body: BodyOf<"sendNotificationToDevice">, o?: RequestOptions) {
    return this.call("sendNotificationToDevice", "POST", `/api/v1/notifications/devices/${enc(deviceId)}`, { ...o, body, idempotent: true });
  }
  sendToUser(userId: string, body: BodyOf<"sendNotificationToUser">, o?: RequestOptions) {
    return this.call("sendNotificationToUser", "POST", `/api/v1/notifications/users/${enc(userId)}`, { ...o, body, idempotent: true });
  }
  /** A broadcast to every device or an audience, now or scheduled; answers the job. */
  broadcast(body: BodyOf<"sendNotificationToAll">, o?: RequestOptions) {
    return this.call("sendNotificationToAll", "POST", "/api/v1/notifications/broadcasts", { ...o, body, idempotent: true });
  }
  job(id: string, o?: RequestOptions) {
    return this.call("notificationJob", "GET", `/api/v1/notifications/broadcasts/${enc(id)}`, o);
  }
  jobs(query?: QueryOf<"listNotificationJobs">, o?: RequestOptions) {
    return this.call("listNotificationJobs", "GET", "/api/v1/notifications/broadcasts", { ...o, query: query as RawRequest["query"] });
  }
  cancel(id: string, o?: RequestOptions) {
    return this.call("cancelNotificationJob", "DELETE", `/api/v1/notifications/broadcasts/${enc(id)}`, o);
  }
  /**
   * Follows a broadcast to its end, over graphql-ws or SSE:
   * `for await (const job of herald.notifications.follow(jobId)) …`.
   */
  follow(id: string, o?: FollowOptions): AsyncGenerator<JobProgress, void, undefined> {
    return followJob(this.c, id, o);
  }
  categories(o?: RequestOptions) {
    return this.call("notificationCategories", "GET", "/api/v1/notifications/categories", o);
  }
}

export class MessengerApi extends Api {
  send(body: BodyOf<"sendMessengerMessage">, o?: RequestOptions) {
    return this.call("sendMessengerMessage", "POST", "/api/v1/messenger/messages", { ...o, body, idempotent: true });
  }
  broadcast(body: BodyOf<"sendMessengerBroadcast">, o?: RequestOptions) {
    return this.call("sendMessengerBroadcast", "POST", "/api/v1/messenger/broadcasts", { ...o, body, idempotent: true });
  }
  broadcastStatus(id: string, o?: RequestOptions) {
    return this.call("messengerBroadcast", "GET", `/api/v1/messenger/broadcasts/${enc(id)}`, o);
  }
  cancelBroadcast(id: string, o?: RequestOptions) {
    return this.call("cancelMessengerBroadcast", "DELETE", `/api/v1/messenger/broadcasts/${enc(id)}`, o);
  }
  subscribers(query?: QueryOf<"listMessengerSubscribers">, o?: RequestOptions) {
    return this.call("listMessengerSubscribers", "GET", "/api/v1/messenger/subscribers", { ...o, query: query as RawRequest["query"] });
  }
  /** The message as the bot would send it (Telegram HTML) and its length as Telegram counts it; sends nothing. */
  preview(body: BodyOf<"messengerPreview">, o?: RequestOptions) {
    return this.call("messengerPreview", "POST", "/api/v1/messenger/preview", { ...o, body });
  }
}

export class AdminApi extends Api {
  listUsers(query?: QueryOf<"listUsers">, o?: RequestOptions) {
    return this.call("listUsers", "GET", "/api/v1/admin/users", { ...o, query: query as RawRequest["query"] });
  }
  getUser(id: string, o?: RequestOptions) {
    return this.call("getUser", "GET", `/api/v1/admin/users/${enc(id)}`, o);
  }
  disableUser(id: string, o?: RequestOptions) {
    return this.call("disableUser", "POST", `/api/v1/admin/users/${enc(id)}/disable`, o);
  }
  enableUser(id: string, o?: RequestOptions) {
    return this.call("enableUser", "POST", `/api/v1/admin/users/${enc(id)}/enable`, o);
  }
  setSubscription(id: string, body: BodyOf<"setSubscription">, o?: RequestOptions) {
    return this.call("setSubscription", "PUT", `/api/v1/admin/users/${enc(id)}/subscription`, { ...o, body });
  }
  userSubscription(id: string, o?: RequestOptions) {
    return this.call("userSubscription", "GET", `/api/v1/admin/users/${enc(id)}/subscription`, o);
  }
}

export class ApiKeysApi extends Api {
  create(body: BodyOf<"createApiKey">, o?: RequestOptions) {
    return this.call("createApiKey", "POST", "/api/v1/api-keys", { ...o, body });
  }
  list(o?: RequestOptions) {
    return this.call("listApiKeys", "GET", "/api/v1/api-keys", o);
  }
  revoke(id: string, o?: RequestOptions) {
    return this.call("revokeApiKey", "DELETE", `/api/v1/api-keys/${enc(id)}`, o);
  }
}

export class WebhooksApi extends Api {
  create(body: BodyOf<"createWebhook">, o?: RequestOptions) {
    return this.call("createWebhook", "POST", "/api/v1/webhooks", { ...o, body });
  }
  list(o?: RequestOptions) {
    return this.call("listWebhooks", "GET", "/api/v1/webhooks", o);
  }
  get(id: string, o?: RequestOptions) {
    return this.call("getWebhook", "GET", `/api/v1/webhooks/${enc(id)}`, o);
  }
  remove(id: string, o?: RequestOptions) {
    return this.call("deleteWebhook", "DELETE", `/api/v1/webhooks/${enc(id)}`, o);
  }
  rotateSecret(id: string, o?: RequestOptions) {
    return this.call("rotateWebhookSecret", "POST", `/api/v1/webhooks/${enc(id)}/rotate-secret`, o);
  }
  ping(id: string, o?: RequestOptions) {
    return this.call("pingWebhook", "POST", `/api/v1/webhooks/${enc(id)}/ping`, o);
  }
  deliveries(id: string, o?: RequestOptions) {
    return this.call("webhookDeliveries", "GET", `/api/v1/webhooks/${enc(id)}/deliveries`, o);
  }
}
