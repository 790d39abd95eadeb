// A graphql-ws client whose pongs stop (a dead peer, a suspended laptop):
// the server closes it with 4408 within about two ping intervals, though
// its idle timeout is an hour away. The client answers the first ANSWERED
// pings itself (disablePong, the pong sent by hand), then stops.
import assert from "node:assert/strict";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const url = process.env.HERALD_URL.replace(/^http/, "ws") + "/graphql";
const answered = Number(process.env.ANSWERED);
let socket;
let pings = 0;
let unanswered = 0;
const closed = new Promise((resolve) => {
  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams: { token: process.env.TOKEN },
    lazy: false,
    disablePong: true,
    retryAttempts: 0,
    on: {
      connected: (s) => { socket = s; },
      ping: (received) => {
        if (!received) return;
        pings++;
        if (pings <= answered) {
          socket.send(JSON.stringify({ type: "pong" }));
          return;
        }
        unanswered++;
        if (unanswered > 3) {
          console.error(`${unanswered} pings unanswered and the connection is still open: want a close after two ping intervals`);
          process.exit(1);
        }
      },
      closed: (event) => { client.dispose(); resolve(event); },
    },
  });
});
const event = await closed;
assert.equal(event.code, 4408, `closed with ${event.code} ${event.reason}, want 4408`);
assert.ok(pings > answered, `closed after ${pings} pings while the client was still answering them`);
console.log(`ok: open through ${answered} answered pings, closed with 4408 (${event.reason}) after ${unanswered} unanswered`);
