/** What the SDK keeps of a session. */
export interface StoredSession {
  accessToken: string;
  refreshToken: string;
  /** When the access token expires, ms since the epoch. */
  expiresAt: number;
}

/**
 * Where sessions are kept. Methods may be synchronous or return promises
 * (React Native's AsyncStorage is asynchronous).
 */
export interface TokenStorage {
  get(): StoredSession | null | Promise<StoredSession | null>;
  set(session: StoredSession): void | Promise<void>;
  remove(): void | Promise<void>;
}

/** The default: the session lives as long as the client object. */
export class MemoryStorage implements TokenStorage {
  #session: StoredSession | null = null;
  get(): StoredSession | null {
    return this.#session;
  }
  set(session: StoredSession): void {
    this.#session = { ...session };
  }
  remove(): void {
    this.#session = null;
  }
}

function parse(raw: string | null | undefined): StoredSession | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as Partial<StoredSession>;
    if (typeof v.accessToken === "string" && typeof v.refreshToken === "string" && typeof v.expiresAt === "number") {
      return { accessToken: v.accessToken, refreshToken: v.refreshToken, expiresAt: v.expiresAt };
    }
  } catch {
    // a damaged entry is no session
  }
  return null;
}

/** The Web Storage shape (window.localStorage, sessionStorage). */
export interface WebStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** Keeps the session in localStorage (or any Web Storage) under `key`. */
export function localStorageAdapter(storage?: WebStorageLike, key = "herald.session"): TokenStorage {
  const s = storage ?? (globalThis as { localStorage?: WebStorageLike }).localStorage;
  if (!s) throw new Error("localStorageAdapter: no localStorage here; pass a Storage");
  return {
    get: () => parse(s.getItem(key)),
    set: (session) => s.setItem(key, JSON.stringify(session)),
    remove: () => s.removeItem(key),
  };
}

/** The shape of React Native's AsyncStorage (@react-native-async-storage/async-storage). */
export interface AsyncStorageLike {
  getItem(key: string): Promise<string | null>;
  setItem(key: string, value: string): Promise<void>;
  removeItem(key: string): Promise<void>;
}

/** Keeps the session in React Native's AsyncStorage (or anything of its shape) under `key`. */
export function asyncStorageAdapter(storage: AsyncStorageLike, key = "herald.session"): TokenStorage {
  return {
    get: async () => parse(await storage.getItem(key)),
    set: (session) => storage.setItem(key, JSON.stringify(session)),
    remove: () => storage.removeItem(key),
  };
}
