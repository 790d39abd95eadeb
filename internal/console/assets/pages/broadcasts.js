// Broadcasts: compose a push to an audience in a category (now or at a
// time), preview it
// as Android and iOS show it, and follow the jobs: each running job's bar
// and counters are fed by its Server-Sent Events stream; jobs waiting for
// their time are read again every few seconds.
import * as api from "../api.js";
import { h, guard, field, fmtTime, pagedTable, badge, notice, showError, fieldError, clearFieldError, progressBar, toRFC3339 } from "../ui.js";

const JOB = "id status subject category totalRecipients sent failed invalidTokens skipped { optedOut capped } held channels email { queued optedOut capped noEmailAddress } createdAt startedAt sendAt finishedAt error";
const FINAL = new Set(["completed", "failed", "cancelled"]);
const CANCELLABLE = new Set(["queued", "scheduled", "running"]);
const PLATFORMS = ["android", "ios", "web", "huawei"];
const PLANS = ["trial", "basic", "premium"];
const PAGE = 20;
// Streams are fetches held open; over HTTP/1.1 a browser allows six
// connections to a host, so a few streams leave room for the rest.
const MAX_STREAMS = 2;
const POLL_MS = 3000;
// DATA_CHECK_PAUSE_MS is the pause in typing after which a problem with
// the data field is shown.
const DATA_CHECK_PAUSE_MS = 300;

// newKey is an idempotency key for one composed broadcast: sending it twice
// (a double click, a retry after a network error) queues one job.
function newKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return "console-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// parseData reads the data field: empty is no data; otherwise a JSON
// object whose values are all strings (what every provider carries as is).
// It returns { data } or { error }.
export function parseData(text) {
  if (text.trim() === "") return { data: undefined };
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { error: `Not valid JSON: ${e.message}` };
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return { error: 'Give a JSON object, e.g. {"screen": "status"}.' };
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== "string") return { error: `The value of "${k}" is not a string: every value must be a string.` };
  }
  return { data: v };
}

// categoryLabel names a category of the catalogue with what sets it apart:
// critical, or its cap a day.
export function categoryLabel(c) {
  if (c.critical) return `${c.name} (critical)`;
  return c.capPerDay != null ? `${c.name} (at most ${c.capPerDay} a day)` : c.name;
}

function statusKind(s) {
  return s === "completed" ? "ok" : s === "failed" ? "bad" : s === "cancelled" ? "plain" : "warn";
}

function checkboxes(name, values) {
  return values.map((v) => h("label", { class: "check" }, h("input", { type: "checkbox", name, value: v }), v));
}

// preview is a mock notification card: text only, as the platform lays it out.
function preview(platform) {
  const title = h("div", { class: "pv-title" });
  const body = h("div", { class: "pv-body" });
  const time = h("span", { class: "pv-time" }, "now");
  const head = platform === "android"
    ? h("div", { class: "pv-head" }, h("span", { class: "pv-icon", "aria-hidden": "true" }), h("span", { class: "pv-app" }, "Herald"), " · ", time)
    : h("div", { class: "pv-head" }, h("span", { class: "pv-icon", "aria-hidden": "true" }), h("span", { class: "pv-app" }, "HERALD"), time);
  const card = h("div", { class: `pv pv-${platform}`, id: `preview-${platform}` }, head, title, body);
  card.set = (subject, content, when) => {
    title.textContent = subject || "Subject";
    title.classList.toggle("pv-empty", !subject);
    body.textContent = content || "Content";
    body.classList.toggle("pv-empty", !content);
    time.textContent = when;
  };
  return h("figure", { class: "pv-frame" }, h("figcaption", {}, platform === "android" ? "Android" : "iOS"), card);
}

export async function render(main) {
  let stopped = false;
  const streams = new Map(); // job id → AbortController of its stream
  const polled = new Set(); // job ids read again every POLL_MS
  const views = new Map(); // job id → the row's live parts

  // ---- Compose ----
  const subjectIn = h("input", { name: "subject", required: true, maxlength: "512", autocomplete: "off" });
  const contentIn = h("textarea", { name: "content", required: true, maxlength: "2048" });
  const dataIn = h("textarea", { name: "data", class: "mono", rows: "3", placeholder: '{"screen": "status"}', spellcheck: "false" });
  const statusIn = h("select", { name: "subscriptionStatus" },
    h("option", { value: "" }, "Any"), h("option", { value: "active" }, "active"), h("option", { value: "expired" }, "expired"));
  // The categories are the deployment's (notificationCategories); a
  // broadcast names service unless another is chosen.
  const categoryIn = h("select", { name: "category" }, h("option", { value: "service" }, "service"));
  const sendAtIn = h("input", { type: "datetime-local", name: "sendAt" });
  const urgentIn = h("input", { type: "checkbox", name: "urgent" });
  const submit = h("button", { type: "submit" }, "Send now");
  const form = h("form", { id: "compose", "aria-label": "Compose a broadcast" },
    field("Subject", subjectIn),
    field("Content", contentIn),
    field("Data (optional: a JSON object of strings, for the app)", dataIn),
    field("Category (a device whose owner turned it off on its channel, push or web push, is skipped)", categoryIn),
    h("label", { class: "check-line" }, urgentIn, "Urgent (passes through quiet hours and caps; otherwise a device or email whose owner is in their quiet hours is held and sent when they end)"),
    h("div", { class: "checks", role: "group", "aria-label": "Channels" }, h("span", { class: "group-name" }, "Channels (email: one per account of the audience with a verified address)"),
      ["push", "email"].map((v) => h("label", { class: "check" }, h("input", { type: "checkbox", name: "channels", value: v, checked: v === "push" }), v))),
    h("fieldset", {}, h("legend", {}, "Audience (nothing ticked: everyone)"),
      h("div", { class: "checks", role: "group", "aria-label": "Platforms" }, h("span", { class: "group-name" }, "Platforms"), checkboxes("platforms", PLATFORMS)),
      h("div", { class: "checks", role: "group", "aria-label": "Plans" }, h("span", { class: "group-name" }, "Plans"), checkboxes("plans", PLANS)),
      field("Subscription", statusIn)),
    field("Send at (optional, your local time; empty sends now)", sendAtIn),
    h("div", { class: "actions" }, submit));

  const android = preview("android");
  const ios = preview("ios");
  function updatePreview() {
    const at = sendAtIn.value ? new Date(sendAtIn.value) : null;
    const when = at && !isNaN(at) ? at.toLocaleString([], { dateStyle: "short", timeStyle: "short" }) : "now";
    android.querySelector(".pv").set(subjectIn.value, contentIn.value, when);
    ios.querySelector(".pv").set(subjectIn.value, contentIn.value, when);
    submit.textContent = sendAtIn.value ? "Schedule" : "Send now";
  }
  for (const el of [subjectIn, contentIn, sendAtIn]) el.addEventListener("input", updatePreview);
  // The data is checked as it is typed: valid clears the message at once;
  // a problem is shown once typing pauses, so half-typed JSON does not
  // flash an error at every key.
  let dataTimer;
  const checkData = () => {
    clearTimeout(dataTimer);
    const { error } = parseData(dataIn.value);
    if (!error) return clearFieldError(dataIn);
    dataTimer = setTimeout(() => fieldError(dataIn, error, { focus: false }), DATA_CHECK_PAUSE_MS);
  };
  dataIn.addEventListener("input", checkData);
  dataIn.addEventListener("blur", () => {
    clearTimeout(dataTimer);
    const { error } = parseData(dataIn.value);
    if (error) fieldError(dataIn, error, { focus: false });
  });
  sendAtIn.addEventListener("input", () => clearFieldError(sendAtIn));
  updatePreview();

  let key = newKey();
  const result = h("div", { "aria-live": "polite" });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const parsed = parseData(dataIn.value);
    if (parsed.error) return fieldError(dataIn, parsed.error);
    let sendAt = null;
    if (sendAtIn.value) {
      sendAt = toRFC3339(sendAtIn.value);
      if (!sendAt) return fieldError(sendAtIn, "Give a date and time.");
      if (new Date(sendAt) < Date.now() - 60_000) return fieldError(sendAtIn, "That time has passed: leave it empty to send now.");
    }
    const checked = (name) => [...form.querySelectorAll(`input[name=${name}]:checked`)].map((i) => i.value);
    const audience = { platforms: checked("platforms"), plans: checked("plans"), subscriptionStatus: statusIn.value || null };
    const notification = { subject: subjectIn.value, content: contentIn.value };
    if (parsed.data) notification.data = parsed.data;
    const channels = checked("channels");
    if (channels.length === 0) return fieldError(form.querySelector("input[name=channels]"), "Tick push, email or both.");
    await guard(async () => {
      const { sendNotificationToAll: r } = await api.gql(`mutation ($n: NotificationInput!, $a: AudienceInput, $at: Time, $category: String, $urgent: Boolean, $ch: [String!], $key: String) {
        sendNotificationToAll(notification: $n, audience: $a, sendAt: $at, category: $category, urgent: $urgent, channels: $ch, idempotencyKey: $key) { status message totalRecipients jobId } }`,
      { n: notification, a: audience, at: sendAt, category: categoryIn.value, urgent: urgentIn.checked, ch: channels, key });
      key = newKey();
      result.replaceChildren(notice(r.message));
      const { notificationJob } = await api.gql(`query ($id: ID!) { notificationJob(id: $id) { ${JOB} } }`, { id: r.jobId });
      if (!views.has(notificationJob.id)) jobs.prepend(notificationJob);
      update(notificationJob);
      watch(notificationJob);
    }, submit);
  });

  // ---- Jobs ----
  function view(job) {
    let v = views.get(job.id);
    if (v) return v;
    const cancel = h("button", { type: "button", class: "secondary small", "aria-label": `Cancel the broadcast ${job.subject}` }, "Cancel");
    cancel.addEventListener("click", () => guard(async () => {
      const { cancelNotificationJob } = await api.gql(`mutation ($id: ID!) { cancelNotificationJob(id: $id) { ${JOB} } }`, { id: job.id });
      update(cancelNotificationJob);
      watch(cancelNotificationJob);
    }, cancel));
    v = {
      subject: h("span", { class: "job", "data-job": job.id }, job.subject),
      category: h("code", { class: "job-category" }, job.category),
      status: h("span", { class: "job-status" }),
      bar: progressBar(`Progress of ${job.subject}`),
      counters: h("span", { class: "counters" }),
      when: h("span"),
      finished: h("span"),
      cancel,
    };
    v.progress = h("div", { class: "job-progress" }, v.bar, v.counters);
    views.set(job.id, v);
    paint(v, job);
    return v;
  }

  function paint(v, j) {
    v.status.replaceChildren(badge(j.status, statusKind(j.status)));
    v.status.dataset.status = j.status;
    // A device skipped because its owner opted out, or had the category's
    // cap that day, is done with too.
    const optedOut = j.skipped?.optedOut ?? 0;
    const capped = j.skipped?.capped ?? 0;
    const done = j.sent + j.failed + j.invalidTokens + optedOut + capped;
    v.bar.set(done, j.totalRecipients);
    // Devices held for their owners' quiet hours (or a time in their
    // zone) are not done yet: the job sends them later.
    const held = j.held ?? 0;
    for (const [k, n] of [["sent", j.sent], ["failed", j.failed], ["invalid", j.invalidTokens], ["optedOut", optedOut], ["capped", capped], ["held", held], ["total", j.totalRecipients]]) v.counters.dataset[k] = n;
    v.counters.textContent = `${j.sent} sent · ${j.failed} failed · ${j.invalidTokens} invalid · ${optedOut} opted out · ${capped} capped of ${j.totalRecipients}` + (held > 0 ? ` · ${held} held for quiet hours` : "");
    // The email part is counted apart: one email per account.
    if (j.channels?.includes("email")) {
      const e = j.email;
      v.counters.dataset.emailed = e.queued;
      v.counters.textContent += ` · emails: ${e.queued} queued, ${e.noEmailAddress} without an address, ${e.optedOut} opted out, ${e.capped} capped`;
    }
    v.when.textContent = j.status === "scheduled" && j.sendAt ? `starts ${fmtTime(j.sendAt)}` : j.startedAt ? `started ${fmtTime(j.startedAt)}` : `created ${fmtTime(j.createdAt)}`;
    v.finished.textContent = j.finishedAt ? fmtTime(j.finishedAt) : "—";
    if (j.error) v.finished.textContent += ` (${j.error})`;
    v.cancel.hidden = !CANCELLABLE.has(j.status);
  }

  function update(job) {
    const v = views.get(job.id);
    if (v) paint(v, job);
  }

  const jobs = pagedTable([
    ["Subject", (j) => view(j).subject],
    ["Category", (j) => view(j).category],
    ["Status", (j) => view(j).status],
    ["Progress", (j) => view(j).progress],
    ["When", (j) => view(j).when],
    ["Finished", (j) => view(j).finished],
    ["", (j) => view(j).cancel],
  ], async (after) => {
    const { notificationJobs } = await api.gql(`query ($first: Int, $after: String) {
      notificationJobs(first: $first, after: $after) { nodes { ${JOB} } pageInfo { endCursor hasNextPage } } }`, { first: PAGE, after });
    for (const j of notificationJobs.nodes) queueMicrotask(() => watch(j));
    return { items: notificationJobs.nodes, pageInfo: notificationJobs.pageInfo };
  }, { empty: "No broadcast yet." });
  jobs.id = "jobs";

  // watch follows a job until it is final: by its stream while it is
  // queued or running (a few at a time), else by polling.
  function watch(job) {
    if (stopped) return;
    if (FINAL.has(job.status)) {
      polled.delete(job.id);
      return;
    }
    if (streams.has(job.id)) return;
    if ((job.status === "running" || job.status === "queued") && streams.size < MAX_STREAMS) {
      polled.delete(job.id);
      follow(job.id);
    } else {
      polled.add(job.id);
    }
  }

  async function follow(id) {
    const ctl = new AbortController();
    streams.set(id, ctl);
    try {
      await api.events(`/api/v1/notifications/broadcasts/${encodeURIComponent(id)}/events`, (type, job) => {
        if (type === "progress") update(job);
      }, ctl.signal);
    } catch (e) {
      if (ctl.signal.aborted) return;
      // Herald's refusal is shown; a broken connection is not an error
      // of the operator's: the job is read again below and then polled.
      if (e.status) showError(e);
    } finally {
      streams.delete(id);
    }
    if (stopped) return;
    // The stream ended: at the final state, or because the replica stopped
    // or the connection broke. Read the job once to know which.
    try {
      const { notificationJob } = await api.gql(`query ($id: ID!) { notificationJob(id: $id) { ${JOB} } }`, { id });
      update(notificationJob);
      if (!FINAL.has(notificationJob.status)) polled.add(id);
    } catch (e) {
      showError(e);
    }
  }

  // poll reads the jobs not streamed in one request (one alias each) and
  // moves those that started onto a stream when there is room.
  async function poll() {
    if (stopped || polled.size === 0) return;
    const ids = [...polled];
    const doc = `query (${ids.map((_, i) => `$i${i}: ID!`).join(", ")}) { ${ids.map((_, i) => `j${i}: notificationJob(id: $i${i}) { ${JOB} }`).join(" ")} }`;
    try {
      const data = await api.gql(doc, Object.fromEntries(ids.map((id, i) => [`i${i}`, id])));
      for (const job of Object.values(data)) {
        update(job);
        polled.delete(job.id);
        watch(job);
      }
    } catch (e) {
      if (!stopped) showError(e);
    }
  }
  const timer = setInterval(poll, POLL_MS);

  const catalogue = await guard(() => api.gql("query { notificationCategories { name critical capPerDay } }"));
  if (catalogue) {
    categoryIn.replaceChildren(...catalogue.notificationCategories.map((c) =>
      h("option", { value: c.name, selected: c.name === "service" }, categoryLabel(c))));
  }

  const reload = h("button", { type: "button", class: "secondary" }, "Refresh");
  reload.addEventListener("click", () => guard(async () => {
    views.clear();
    await jobs.reload();
  }, reload));

  main.append(
    h("h1", {}, "Broadcasts"),
    h("div", { class: "compose" },
      h("section", { class: "card", "aria-label": "Compose" }, h("h2", {}, "Compose"), form, result),
      h("section", { class: "card previews", "aria-label": "Preview" }, h("h2", {}, "Preview"), android, ios)),
    h("div", { class: "title-row" }, h("h2", {}, "Jobs"), reload),
    jobs);

  return () => {
    stopped = true;
    clearInterval(timer);
    for (const ctl of streams.values()) ctl.abort();
  };
}
