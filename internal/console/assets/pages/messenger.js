// Messenger: the Telegram bot's status and subscribers, a message composer
// with the preview Telegram will show (messengerPreview: the exact HTML the
// bot sends), sending to one chat, and broadcasts to every subscriber with
// live progress (messengerBroadcastUpdated over WebSocket).
import { gql } from "../api.js";
import { h, badge, facts, guard, field, fmtTime, notice, pagedTable, progressBar, showError } from "../ui.js";
import { confirmButton, page, statusArea } from "../ops.js";
import { subscribe } from "../gqlws.js";
import { telegramFragment } from "../tghtml.js";

const maxLength = 4096; // Telegram's limit on a message's visible text
const previewDelay = 300; // ms of typing pause before asking for a preview
const broadcastFields = "id status totalRecipients sent failed blocked createdAt startedAt finishedAt error";
const finalStates = new Set(["completed", "failed", "cancelled"]);

export async function render(main) {
  const stops = new Set(); // live subscriptions and timers to end on leaving
  const status = statusArea();
  const botCard = h("div");
  const { messengerBotStatus: bot } = await gql(`query { messengerBotStatus { connected botUsername botName subscriberCount webhookUrl } }`);
  showBot(botCard, bot);

  // Composer: one message, its options and its preview, sent to a chat or
  // to everyone.
  const message = h("textarea", { name: "message", rows: 6, required: true, placeholder: "**Bold**, *italic*, `code`, [link](https://…)" });
  const silent = h("input", { type: "checkbox", name: "silent" });
  const buttons = buttonEditor(() => schedulePreview());
  const chatId = h("input", { type: "text", name: "chatId", required: true, inputmode: "text", placeholder: "123456789 or @channel", autocomplete: "off" });
  const send = h("button", { type: "submit" }, "Send to chat");
  const bubble = h("div", { class: "tg-bubble", "data-testid": "preview", "aria-live": "polite" });
  const previewButtons = h("div", { class: "tg-buttons" });
  const counter = h("span", { class: "muted", "data-testid": "length" }, `0 / ${maxLength}`);

  let previewTimer = 0;
  let previewSeq = 0;
  function schedulePreview() {
    delete bubble.dataset.ready; // until the preview of what is typed now is shown
    clearTimeout(previewTimer);
    previewTimer = setTimeout(preview, previewDelay);
  }
  stops.add(() => clearTimeout(previewTimer));
  async function preview() {
    const seq = ++previewSeq;
    showPreviewButtons(previewButtons, buttons.rows());
    if (message.value === "") {
      bubble.replaceChildren();
      counter.textContent = `0 / ${maxLength}`;
      counter.className = "muted";
      bubble.dataset.ready = "true";
      return;
    }
    delete bubble.dataset.ready;
    try {
      const { messengerPreview: p } = await gql(`query ($m: String!) { messengerPreview(message: $m) { html length } }`, { m: message.value });
      if (seq !== previewSeq) return; // a newer preview is on its way
      bubble.replaceChildren(telegramFragment(p.html));
      counter.textContent = `${p.length} / ${maxLength}`;
      counter.className = p.length > maxLength ? "over" : "muted";
      bubble.dataset.ready = "true";
    } catch (e) {
      // INVALID_MESSAGE: what a send refuses before formatting (over 4096
      // characters typed); the preview says so rather than show stale text.
      if (seq !== previewSeq) return;
      bubble.replaceChildren();
      counter.textContent = `${e.code}`;
      counter.className = "over";
      showError(e);
    }
  }
  message.addEventListener("input", schedulePreview);

  function options() {
    const o = {};
    if (silent.checked) o.silent = true;
    const rows = buttons.rows();
    if (rows.length) o.buttons = rows;
    return o;
  }

  const composer = h("form", { class: "composer", "aria-label": "Message" },
    field("Message (Markdown)", message),
    h("label", { class: "check-line" }, silent, "Silent (no notification sound)"),
    buttons.el,
    h("div", { class: "button-row" }, field("Chat id", chatId), h("div", {}, send)));
  composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    guard(async () => {
      const r = await gql(`mutation ($chat: String!, $m: String!, $o: MessengerMessageOptions) { sendMessengerMessage(chatId: $chat, message: $m, options: $o) { success messageId } }`,
        { chat: chatId.value.trim(), m: message.value, o: options() });
      status.say(notice(`Sent to chat ${chatId.value.trim()} (Telegram message ${r.sendMessengerMessage.messageId}).`));
    }, send);
  });

  // Broadcasts: each one started (or followed) here gets a live card.
  const broadcasts = h("div", { "aria-label": "Broadcasts", role: "region" });
  function follow(id, first) {
    const card = broadcastCard(id, first, stops);
    broadcasts.prepend(card.el);
  }
  const start = confirmButton("Broadcast to every subscriber", "Send this message to every subscribed chat?", "Yes, broadcast", async () => {
    const r = await gql(`mutation ($m: String!, $o: MessengerMessageOptions) { sendMessengerBroadcast(message: $m, options: $o) { ${broadcastFields} } }`,
      { m: message.value, o: options() });
    status.say(notice(`Broadcast ${r.sendMessengerBroadcast.id} queued for ${r.sendMessengerBroadcast.totalRecipients} chats.`));
    follow(r.sendMessengerBroadcast.id, r.sendMessengerBroadcast);
  }, { danger: false });
  const followId = h("input", { type: "text", name: "broadcastId", autocomplete: "off" });
  const followForm = h("form", { class: "inline", "aria-label": "Follow a broadcast" }, field("Broadcast id", followId), h("button", { type: "submit", class: "secondary" }, "Follow"));
  followForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (followId.value.trim()) follow(followId.value.trim(), null);
    followForm.reset();
  });

  // Subscribers, filtered by status.
  const filter = h("select", { name: "status" },
    h("option", { value: "" }, "Every status"),
    ["subscribed", "unsubscribed", "blocked"].map((s) => h("option", { value: s }, s)));
  const tableSlot = h("div");
  function subscribers() {
    const st = filter.value || null;
    return pagedTable([
      ["Chat", (s) => h("code", {}, s.chatId)],
      ["Who", (s) => [s.username ? `@${s.username}` : "", s.username && s.firstName ? " · " : "", s.firstName ?? ""].join("") || "—"],
      ["Status", (s) => badge(s.status, s.status === "subscribed" ? "ok" : s.status === "blocked" ? "bad" : "plain")],
      ["Since", (s) => fmtTime(s.subscribedSince)],
      ["Start payload", (s) => s.startPayload ?? ""],
      ["Account", (s) => (s.userId ? h("a", { href: `#/user/${encodeURIComponent(s.userId)}` }, "linked") : "")],
      ["", (s) => writeTo(s.chatId)],
    ], async (after) => page((await gql(`query ($after: String, $status: String) { messengerSubscribers(first: 20, after: $after, status: $status) {
        nodes { chatId username firstName startPayload subscribedSince status userId } pageInfo { endCursor hasNextPage } } }`, { after, status: st })).messengerSubscribers),
    { empty: st ? `No ${st} chats.` : "No chat has started the bot yet." });
  }
  function writeTo(id) {
    const b = h("button", { type: "button", class: "secondary", "aria-label": `Write to chat ${id}` }, "Write");
    b.addEventListener("click", () => { chatId.value = id; message.focus(); });
    return b;
  }
  filter.addEventListener("change", () => tableSlot.replaceChildren(subscribers()));
  const refresh = h("button", { type: "button", class: "secondary" }, "Refresh");
  refresh.addEventListener("click", () => guard(async () => {
    showBot(botCard, (await gql(`query { messengerBotStatus { connected botUsername botName subscriberCount webhookUrl } }`)).messengerBotStatus);
    tableSlot.replaceChildren(subscribers());
  }, refresh));
  tableSlot.replaceChildren(subscribers());

  main.append(
    h("h1", {}, "Messenger"),
    botCard,
    status,
    h("h2", {}, "Compose"),
    h("div", { class: "row" },
      composer,
      h("section", { "aria-label": "Preview" }, h("h3", { class: "muted" }, "Preview as Telegram shows it"), bubble, previewButtons, h("p", {}, counter))),
    h("h2", {}, "Broadcast"),
    h("p", { class: "muted" }, "Sends the composed message, with its options, to every chat subscribed now; paced under Telegram's limits (about 30 chats a second)."),
    h("div", { class: "actions" }, start),
    followForm,
    broadcasts,
    h("div", { class: "toolbar" }, h("h2", {}, "Subscribers"), field("Status", filter), refresh),
    tableSlot);
  preview();
  return () => { for (const stop of stops) stop(); };
}

function showBot(el, bot) {
  el.replaceChildren(h("div", { class: "card" }, facts([
    ["Bot", h("span", {}, bot.connected ? badge("connected", "ok") : badge("not connected", "bad"),
      bot.botUsername ? h("span", {}, " ", h("a", { href: `https://t.me/${encodeURIComponent(bot.botUsername)}`, rel: "noopener noreferrer", target: "_blank" }, `@${bot.botUsername}`)) : null,
      bot.botName ? ` (${bot.botName})` : "")],
    ["Subscribed chats", h("span", { "data-testid": "subscriber-count" }, String(bot.subscriberCount))],
    ["Updates", bot.connected ? (bot.webhookUrl ? `webhook ${bot.webhookUrl}` : "long polling") : "—"],
  ])));
}

// buttonEditor edits rows of inline URL buttons: each button has a text
// and a URL, and starts a new row or joins the previous one.
function buttonEditor(onChange) {
  const list = h("div", { class: "button-list" });
  const add = h("button", { type: "button", class: "secondary" }, "Add a button");
  const entries = [];
  add.addEventListener("click", () => {
    const n = entries.length + 1;
    const text = h("input", { type: "text", name: `buttonText${n}`, maxlength: 64 });
    const url = h("input", { type: "url", name: `buttonUrl${n}`, placeholder: "https://…" });
    const newRow = h("input", { type: "checkbox", name: `buttonNewRow${n}`, checked: entries.length === 0 });
    const remove = h("button", { type: "button", class: "secondary", "aria-label": `Remove button ${n}` }, "Remove");
    const entry = { text, url, newRow, el: h("div", { class: "button-row" }, field(`Button ${n} text`, text), field(`Button ${n} URL`, url), h("label", { class: "check-line" }, newRow, "New row"), remove) };
    remove.addEventListener("click", () => { entries.splice(entries.indexOf(entry), 1); entry.el.remove(); onChange(); add.focus(); });
    for (const input of [text, url, newRow]) input.addEventListener("input", onChange);
    entries.push(entry);
    list.append(entry.el);
    text.focus();
  });
  return {
    el: h("fieldset", { class: "checks" }, h("legend", {}, "Inline buttons (optional)"), list, add),
    rows() {
      const rows = [];
      for (const e of entries) {
        if (!e.text.value.trim() && !e.url.value.trim()) continue;
        const b = { text: e.text.value.trim(), url: e.url.value.trim() };
        if (e.newRow.checked || !rows.length) rows.push([b]);
        else rows.at(-1).push(b);
      }
      return rows;
    },
  };
}

function showPreviewButtons(el, rows) {
  el.replaceChildren(...rows.map((row) => h("div", {}, row.map((b) => h("span", { title: b.url }, b.text)))));
}

// broadcastCard shows one broadcast and keeps it current: over the
// subscription, or, should the live connection drop before the job ends
// (an expired token, a restart), by reading it every two seconds.
function broadcastCard(id, first, stops) {
  const title = h("h3", {}, "Broadcast ", h("code", {}, id));
  const state = h("span");
  const meter = progressBar(`Progress of broadcast ${id}`);
  const counts = h("dl");
  const cancel = confirmButton("Cancel broadcast", "Stop this broadcast before its next batch?", "Yes, cancel it", async () => {
    show((await gql(`mutation ($id: ID!) { cancelMessengerBroadcast(id: $id) { ${broadcastFields} } }`, { id })).cancelMessengerBroadcast);
  });
  const el = h("div", { class: "card broadcast", "data-broadcast": id }, title, state, meter, counts, cancel);
  let job = null;

  function show(j) {
    job = j;
    meter.set(j.sent + j.failed + j.blocked, j.totalRecipients);
    const kind = j.status === "completed" ? "ok" : j.status === "failed" ? "bad" : j.status === "cancelled" ? "warn" : "plain";
    state.replaceChildren(badge(j.status, kind));
    if (j.error) state.append(h("span", { class: "status-bad" }, ` ${j.error}`));
    // The worker sees a cancel between batches: the batch in flight goes
    // out, and is counted when it is done.
    if (j.status === "cancelled") state.append(h("span", { class: "muted" }, " The batch being sent at the cancel (up to 20 chats) still goes out, and is added to the counters when it is done."));
    el.dataset.status = j.status;
    const item = (k, v) => h("div", {}, h("dt", {}, k), h("dd", { "data-count": k }, String(v)));
    counts.replaceChildren(item("recipients", j.totalRecipients), item("sent", j.sent), item("failed", j.failed), item("blocked", j.blocked),
      h("div", {}, h("dt", {}, "started"), h("dd", {}, fmtTime(j.startedAt))),
      h("div", {}, h("dt", {}, "finished"), h("dd", {}, fmtTime(j.finishedAt))));
    cancel.hidden = finalStates.has(j.status);
  }
  if (first) show(first);

  let timer = 0;
  const stopPolling = () => clearTimeout(timer);
  function poll() {
    timer = setTimeout(async () => {
      try {
        show((await gql(`query ($id: ID!) { messengerBroadcast(id: $id) { ${broadcastFields} } }`, { id })).messengerBroadcast);
      } catch (e) {
        showError(e);
      }
      if (!job || !finalStates.has(job.status)) poll();
    }, 2000);
  }
  const stopLive = subscribe(`subscription ($id: ID!) { messengerBroadcastUpdated(id: $id) { ${broadcastFields} } }`, { id }, {
    next: (d) => show(d.messengerBroadcastUpdated),
    error: (e) => {
      if (e.code === "JOB_NOT_FOUND" || e.code === "INSUFFICIENT_PERMISSIONS") {
        showError(e);
        el.remove();
        return;
      }
      if (job && finalStates.has(job.status)) return;
      state.append(h("span", { class: "muted" }, ` (live updates lost: ${e.code}; reading it every 2 s)`));
      poll();
    },
  });
  stops.add(stopLive);
  stops.add(stopPolling);
  return { el };
}
