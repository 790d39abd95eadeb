// A minimal client of graphql-transport-ws (the graphql-ws library's
// protocol), which Herald serves on /graphql for subscriptions: one
// WebSocket per subscription, the session's access token in
// connection_init as {Authorization: "Bearer …"} (internal/gqltransport/ws.go).
import { ApiError, token } from "./api.js";

const protocol = "graphql-transport-ws";
const opID = "1"; // one operation per socket

function gqlError(e) {
  return new ApiError(e?.extensions?.code ?? "GRAPHQL_ERROR", e?.message ?? "The subscription failed.", 0, e?.extensions?.details);
}

// closeError turns an unexpected close into an ApiError: Herald closes
// with a reason "Forbidden: CODE" when it refuses the credentials.
function closeError(ev) {
  const m = /^Forbidden: ([A-Z_]+)$/.exec(ev.reason ?? "");
  if (m) return new ApiError(m[1], `Herald closed the live connection: ${ev.reason}.`, 403);
  return new ApiError("LIVE_CONNECTION_CLOSED", `The live connection closed (${ev.code}${ev.reason ? `: ${ev.reason}` : ""}).`);
}

// subscribe runs a subscription: next(data) for each result, then exactly
// one of complete() or error(ApiError). It returns a function that stops
// it (calling neither).
export function subscribe(query, variables, { next, error = () => {}, complete = () => {} }) {
  let ws = null;
  let done = false;
  const finish = (fn, arg) => {
    if (done) return;
    done = true;
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000);
    fn(arg);
  };
  const send = (m) => ws.send(JSON.stringify(m));

  (async () => {
    let bearer;
    try {
      bearer = await token();
    } catch (e) {
      return finish(error, e);
    }
    if (done) return;
    ws = new WebSocket(`${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/graphql`, protocol);
    ws.addEventListener("open", () => send({ type: "connection_init", payload: { Authorization: `Bearer ${bearer}` } }));
    ws.addEventListener("message", (ev) => {
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch {
        return finish(error, new ApiError("BAD_RESPONSE", "The live connection sent a message that is not JSON."));
      }
      switch (m.type) {
        case "connection_ack":
          send({ id: opID, type: "subscribe", payload: { query, variables } });
          break;
        case "ping":
          send({ type: "pong" });
          break;
        case "next":
          if (m.payload?.errors?.length) finish(error, gqlError(m.payload.errors[0]));
          else if (!done) next(m.payload.data);
          break;
        case "error":
          finish(error, gqlError(Array.isArray(m.payload) ? m.payload[0] : m.payload));
          break;
        case "complete":
          finish(complete);
          break;
      }
    });
    ws.addEventListener("close", (ev) => finish(error, closeError(ev)));
  })();

  return () => {
    if (done) return;
    done = true;
    if (ws?.readyState === WebSocket.OPEN) send({ id: opID, type: "complete" });
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000);
  };
}
