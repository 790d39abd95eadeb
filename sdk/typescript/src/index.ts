export * from "./errors.js";
export * from "./retry.js";
export * from "./storage.js";
export * from "./client.js";
export * from "./webhooks.js";
export * from "./live.js";
export type { components, paths, operations } from "./generated/openapi.js";
