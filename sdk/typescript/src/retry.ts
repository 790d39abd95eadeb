/** How the SDK retries (the interface's client retry schedule by default). */
export interface RetryOptions {
  /** Retries after the first try; 5 by default. 0 turns retrying off. */
  maxRetries?: number;
  /** The first wait, in ms; 1000 by default. */
  baseDelayMs?: number;
  /** The longest wait before jitter, in ms; 32000 by default. */
  maxDelayMs?: number;
  /** Jitter is added from [0, jitterMs); 500 by default. */
  jitterMs?: number;
  /** Whether Retry-After (or details.retryAfter) sets the first wait; true by default. */
  respectRetryAfter?: boolean;
  /** A random number in [0, 1); Math.random by default (tests pin it). */
  random?: () => number;
}

export type ResolvedRetry = Required<RetryOptions>;

export function resolveRetry(o: RetryOptions | false | undefined): ResolvedRetry {
  const r: ResolvedRetry = {
    maxRetries: 5,
    baseDelayMs: 1000,
    maxDelayMs: 32000,
    jitterMs: 500,
    respectRetryAfter: true,
    random: Math.random,
  };
  if (o === false) return { ...r, maxRetries: 0 };
  return { ...r, ...Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) };
}

/**
 * The wait before retry number `attempt` (1-based):
 * min(base × 2^(attempt−1), max) + jitter in [0, jitterMs), so 1, 2, 4, 8 and
 * 16 s for attempts 1 to 5 with the defaults. When the answer being retried
 * carries Retry-After (seconds; or details.retryAfter), that is the wait
 * instead (plus the jitter): the server's word comes first. Answers without
 * it follow the schedule by their attempt number.
 */
export function retryDelay(attempt: number, r: ResolvedRetry, retryAfterSeconds?: number): number {
  const jitter = Math.floor(r.random() * r.jitterMs);
  if (r.respectRetryAfter && retryAfterSeconds !== undefined && retryAfterSeconds >= 0) {
    return retryAfterSeconds * 1000 + jitter;
  }
  return Math.min(r.baseDelayMs * 2 ** (attempt - 1), r.maxDelayMs) + jitter;
}

/** Retry-After as seconds: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value == null || value.trim() === "") return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, Math.ceil((t - now) / 1000));
}

/** Waits ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
