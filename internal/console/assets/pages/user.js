// One account: its subscription with the entitlements it comes from and
// their history, devices, sessions, second factors, passkeys, Apple and Google
// sign-in identities, security log, linked Telegram chat, notification
// preferences and in-app inbox, with the operator's actions on it (a
// manual grant, reconcile now, disable and enable, end sessions, reset
// second factors, a category switched per channel, the time zone and quiet
// hours, archiving inbox items, a test notification, deletion).
import * as api from "../api.js";
import { h, guard, field, fmtTime, pagedTable, badge, facts, notice, fieldError, clearFieldError, toRFC3339, toLocalInput, accountName } from "../ui.js";

const PLANS = ["trial", "basic", "premium"];

const RECORD = `id email emailVerified emailVerifiedAt createdAt referralCode disabled disabledAt disabledReason lastLoginAt deviceCount sessionCount
  subscription { plan status expiresAt source autoRenew graceEndsAt }
  sessions { id createdAt lastUsedAt userAgent ip }
  messengerChat { chatId username firstName status subscribedSince }`;

const USER = `query ($id: ID!) { user(id: $id) { ${RECORD} } }`;

// DETAIL is the subscription with its entitlements and history, as
// userSubscription and reconcileSubscription answer it.
const DETAIL = `plan status expiresAt source autoRenew graceEndsAt
  entitlements { id source productId plan state startedAt expiresAt graceEndsAt autoRenew environment updatedAt }
  history { id entitlementId source cause from to plan expiresAt at }`;

const SUBSCRIPTION = `query ($id: ID!) { userSubscription(id: $id) { ${DETAIL} } }`;

const MFA = `query ($userId: ID!) { userMfa(userId: $userId) { enabled recoveryCodesLeft passkeys factors { id kind name status createdAt lastUsedAt } } }`;

const PASSKEYS = `query ($userId: ID!) { userPasskeys(userId: $userId) { id name backedUp createdAt lastUsedAt counterRegressions } }`;

const IDENTITIES = `query ($userId: ID!) { userIdentities(userId: $userId) { id provider email privateRelay createdAt lastUsedAt } }`;

// PROVIDERS name the identity providers as people know them.
const PROVIDERS = { apple: "Apple", google: "Google" };

const SECURITY_LOG = `query ($userId: ID!, $first: Int, $after: String) {
  userSecurityLog(userId: $userId, first: $first, after: $after) {
    nodes { id kind outcome actor ip userAgent at }
    pageInfo { endCursor hasNextPage }
  }
}`;

// outcomeBadge shows a security log entry's outcome.
function outcomeBadge(o) {
  return badge(o, o === "ok" ? "ok" : o === "failed" ? "warn" : "bad");
}

// GRANTING are the entitlement states that give access (the others do not).
const GRANTING = new Set(["trial", "active", "grace", "cancelled"]);

function stateBadge(state) {
  if (state === "grace" || state === "cancelled") return badge(state, "warn");
  return badge(state, GRANTING.has(state) ? "ok" : "bad");
}

// table is a plain table of rows: columns are [heading, row => cell].
function table(id, columns, rows, empty) {
  if (rows.length === 0) return h("p", { id, class: "muted" }, empty);
  return h("div", { class: "scroll" }, h("table", { id },
    h("thead", {}, h("tr", {}, columns.map(([name]) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, columns.map(([, cell]) => h("td", {}, cell(r))))))));
}

// PREFERENCES are what userNotificationPreferences and its mutation answer.
const PREFERENCES = `categories { category critical channels { push telegram email webPush inbox } } timeZone quietHours { start end }`;

// CHANNELS are the preference channels, as the API names them and as the
// page heads them.
const CHANNELS = [["push", "Push"], ["telegram", "Telegram"], ["email", "Email"], ["webPush", "Web Push"], ["inbox", "Inbox"]];

// INBOX is a page of the user's inbox or archive; INBOX_COUNTS its badge.
const INBOX = `query ($userId: ID!, $first: Int, $after: String, $archived: Boolean) {
  userInbox(userId: $userId, first: $first, after: $after, archived: $archived) {
    nodes { id title body category createdAt seenAt readAt archivedAt }
    pageInfo { endCursor hasNextPage }
  }
}`;
const INBOX_COUNTS = `query ($userId: ID!) { userInboxCounts(userId: $userId) { unseen unread } }`;

// inboxState is an inbox item's marks as badges: seen or not, read,
// archived.
function inboxState(it) {
  return [
    it.seenAt ? badge("seen", "ok") : badge("unseen", "warn"),
    it.readAt ? [" ", badge("read", "ok")] : null,
    it.archivedAt ? [" ", badge("archived")] : null,
  ];
}

const DEVICES = `query ($userId: ID!, $first: Int, $after: String) {
  devices(userId: $userId, first: $first, after: $after) {
    nodes { deviceId platform name pushToken active pushTokenStatus createdAt lastSeenAt }
    pageInfo { endCursor hasNextPage }
  }
}`;

// tokenState is what the console shows of a device's push token: missing
// once the device was removed or its token moved, else valid or invalid.
function tokenState(d) {
  if (!d.pushToken) return badge("missing", "warn");
  return d.pushTokenStatus === "valid" ? badge("valid", "ok") : badge(d.pushTokenStatus, "bad");
}

// utcOffset names the browser's offset from UTC, for the expiry's label.
function utcOffset() {
  const m = -new Date().getTimezoneOffset();
  const sign = m >= 0 ? "+" : "-";
  const a = Math.abs(m);
  return `UTC${sign}${String(Math.floor(a / 60)).padStart(2, "0")}:${String(a % 60).padStart(2, "0")}`;
}

function section(title, ...body) {
  return h("section", { class: "card", "aria-label": title }, h("h2", {}, title), ...body);
}

export async function render(main, params) {
  const id = params[0];
  if (!id) {
    location.hash = "#/users";
    return;
  }
  const loaded = await guard(() => api.gql(USER, { id }));
  if (!loaded) {
    main.append(h("h1", {}, "User"), h("p", {}, h("a", { href: "#/users" }, "Back to users")));
    return;
  }
  let user = loaded.user;

  const status = h("div", { class: "notices", "aria-live": "polite" });
  const say = (text) => status.replaceChildren(notice(text));
  const title = h("h1", { id: "user-email" });
  const badges = h("span", { class: "badges" });
  const account = h("div");
  const subscription = h("div", { id: "subscription" });
  const entitlements = h("div", { id: "entitlements-part" });
  const history = h("div", { id: "history-part" });
  const sessions = h("div", { id: "sessions" });
  const chat = h("div", { id: "chat" });
  const access = h("div", { id: "access" });

  // show puts the record's current values in every part that shows them.
  function show(u) {
    user = u;
    title.textContent = accountName(u);
    badges.replaceChildren(u.emailVerified ? badge("verified", "ok") : badge("unverified", "warn"));
    if (u.disabled) badges.append(badge("disabled", "bad"));
    account.replaceChildren(facts([
      ["Id", h("code", {}, u.id)],
      ["Created", fmtTime(u.createdAt)],
      ["Email verified", fmtTime(u.emailVerifiedAt)],
      ["Last login", fmtTime(u.lastLoginAt)],
      ["Referral code", u.referralCode],
      ["Active devices", u.deviceCount],
    ]));
    subscription.replaceChildren(facts([
      ["Plan", h("span", { id: "current-plan" }, u.subscription.plan)],
      ["Status", badge(u.subscription.status, u.subscription.status === "active" ? "ok" : "warn")],
      ["Expires", h("span", { id: "current-expiry", "data-iso": u.subscription.expiresAt }, fmtTime(u.subscription.expiresAt))],
      ["Source", h("span", { id: "current-source" }, u.subscription.source || "none")],
      ["Renews", u.subscription.autoRenew ? "yes, at expiry" : "no"],
      ["Grace ends", u.subscription.graceEndsAt ? h("span", { id: "current-grace" }, badge(fmtTime(u.subscription.graceEndsAt), "warn")) : null],
    ]));
    sessions.replaceChildren(u.sessions.length === 0
      ? h("p", { class: "muted" }, "No live session.")
      : h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, ["Signed in", "Last used", "Client", "Address"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, u.sessions.map((s) => h("tr", {},
          h("td", {}, fmtTime(s.createdAt)), h("td", {}, fmtTime(s.lastUsedAt)),
          h("td", { class: "wrap" }, s.userAgent || "—"), h("td", {}, s.ip || "—")))))));
    endSessions.disabled = u.sessions.length === 0;
    const c = u.messengerChat;
    telegramIn.disabled = !c || c.status !== "subscribed";
    if (telegramIn.disabled) telegramIn.checked = false;
    chat.replaceChildren(c
      ? facts([
        ["Chat", h("code", {}, c.chatId)],
        ["Name", [c.firstName, c.username ? `@${c.username}` : null].filter(Boolean).join(" ") || "—"],
        ["Status", badge(c.status, c.status === "subscribed" ? "ok" : "warn")],
        ["Since", fmtTime(c.subscribedSince)],
      ])
      : h("p", { class: "muted" }, "No Telegram chat is linked to this account."));
    access.replaceChildren(u.disabled
      ? h("div", {},
        h("p", {}, `Disabled ${fmtTime(u.disabledAt)}`, u.disabledReason ? `: ${u.disabledReason}` : "."),
        enableButton)
      : disableForm);
  }

  // showDetail puts the entitlements and their history in their tables;
  // null: the account has none (SUBSCRIPTION_NOT_FOUND); undefined: they
  // could not be read (the error is shown).
  function showDetail(d) {
    if (d === undefined) {
      const unread = () => h("p", { class: "muted" }, "Not read: see the error above.");
      entitlements.replaceChildren(unread());
      history.replaceChildren(unread());
      return;
    }
    entitlements.replaceChildren(table("entitlements", [
      ["Source", (e) => e.source],
      ["Plan", (e) => e.plan],
      ["State", (e) => stateBadge(e.state)],
      ["Product", (e) => (e.productId ? h("code", {}, e.productId) : "—")],
      ["Started", (e) => fmtTime(e.startedAt)],
      ["Expires", (e) => fmtTime(e.expiresAt)],
      ["Grace ends", (e) => fmtTime(e.graceEndsAt)],
      ["Renews", (e) => (e.autoRenew ? "yes" : "no")],
      ["Store", (e) => e.environment ?? "—"],
    ], d?.entitlements ?? [], "No entitlement: the account has no plan."));
    history.replaceChildren(table("history", [
      ["When", (c) => fmtTime(c.at)],
      ["Cause", (c) => h("code", {}, c.cause)],
      ["Source", (c) => c.source],
      ["Change", (c) => [c.from ? stateBadge(c.from) : "new", " → ", stateBadge(c.to)]],
      ["Plan", (c) => c.plan],
      ["Expires", (c) => fmtTime(c.expiresAt)],
    ], d?.history ?? [], "No change yet."));
  }

  // loadDetail reads the detail; an account without entitlements is not
  // an error here.
  async function loadDetail(read) {
    try {
      return await read();
    } catch (e) {
      if (e.code === "SUBSCRIPTION_NOT_FOUND") return null;
      throw e;
    }
  }

  // Reconcile now: the account's store purchases read again from their
  // stores.
  const reconcile = h("button", { type: "button", class: "secondary" }, "Reconcile now");
  reconcile.addEventListener("click", () => guard(async () => {
    const d = await loadDetail(async () => (await api.gql(`mutation ($userId: ID!) {
      reconcileSubscription(userId: $userId) { ${DETAIL} } }`, { userId: id })).reconcileSubscription);
    const { user: u } = await api.gql(USER, { id });
    show(u);
    showDetail(d);
    const stores = (d?.entitlements ?? []).filter((e) => ["app_store", "google_play", "stripe"].includes(e.source)).length;
    say(stores === 0
      ? "Reconciled: the account has no store purchase to read."
      : `Reconciled: ${stores} store purchase${stores === 1 ? "" : "s"} read again; the plan is ${u.subscription.plan}.`);
  }, reconcile));

  // Manual grant: plan and expiry (the browser's local time, sent as UTC),
  // an administrator's entitlement.
  const planIn = h("select", { name: "plan" },
    [...new Set([...PLANS, user.subscription.plan])].map((p) => h("option", { value: p, selected: p === user.subscription.plan }, p)));
  const expiresIn = h("input", { type: "datetime-local", name: "expiresAt", required: true, value: toLocalInput(user.subscription.expiresAt) });
  const setSub = h("button", { type: "submit" }, "Grant");
  const subForm = h("form", { class: "inline", "aria-label": "Manual grant" },
    field("Plan", planIn), field(`Expires (your time, ${utcOffset()})`, expiresIn), setSub);
  expiresIn.addEventListener("input", () => clearFieldError(expiresIn));
  subForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const expiresAt = toRFC3339(expiresIn.value);
    if (!expiresAt) return fieldError(expiresIn, "Give a date and time.");
    await guard(async () => {
      const { setSubscription } = await api.gql(`mutation ($userId: ID!, $plan: String!, $expiresAt: Time!) {
        setSubscription(userId: $userId, plan: $plan, expiresAt: $expiresAt) { ${RECORD} } }`, { userId: id, plan: planIn.value, expiresAt });
      show(setSubscription);
      showDetail(await loadDetail(async () => (await api.gql(SUBSCRIPTION, { id })).userSubscription));
      say(`Granted ${planIn.value} until ${fmtTime(expiresAt)}; the plan is ${setSubscription.subscription.plan} until ${fmtTime(setSubscription.subscription.expiresAt)}.`);
    }, setSub);
  });

  // Sessions: end them all.
  const endSessions = h("button", { type: "button", class: "secondary" }, "End all sessions");
  endSessions.addEventListener("click", () => guard(async () => {
    const { revokeSessions } = await api.gql(`mutation ($userId: ID!) { revokeSessions(userId: $userId) }`, { userId: id });
    const { user: u } = await api.gql(USER, { id });
    show(u);
    securityLog.reload();
    say(`${revokeSessions} session${revokeSessions === 1 ? "" : "s"} ended.`);
  }, endSessions));

  // Second factors: what the user enrolled, and an admin's reset (for a
  // user who lost their authenticator and their recovery codes).
  const factors = h("div", { id: "mfa" });
  const resetMfa = h("button", { type: "button", class: "danger" }, "Reset second factors");
  function showMfa(m) {
    if (!m) return;
    factors.replaceChildren(
      facts([
        ["Second factor", m.enabled ? badge("on", "ok") : badge("off", "warn")],
        ["Recovery codes left", m.recoveryCodesLeft],
        ["Passkeys", m.passkeys],
      ]),
      table("mfa-factors", [
        ["Kind", (f) => f.kind],
        ["Name", (f) => f.name],
        ["Status", (f) => badge(f.status, f.status === "active" ? "ok" : "warn")],
        ["Enrolled", (f) => fmtTime(f.createdAt)],
        ["Last used", (f) => fmtTime(f.lastUsedAt)],
      ], m.factors, "No factor enrolled."));
    resetMfa.disabled = m.factors.length === 0 && m.passkeys === 0;
  }
  resetMfa.addEventListener("click", () => guard(async () => {
    const { resetUserMfa } = await api.gql(`mutation ($userId: ID!) { resetUserMfa(userId: $userId) { factorsRemoved } }`, { userId: id });
    await reloadPasskeys();
    securityLog.reload();
    say(`${resetUserMfa.factorsRemoved} factor${resetUserMfa.factorsRemoved === 1 ? "" : "s"} removed: the user signs in with the password alone and may enroll again.`);
  }, resetMfa));

  // Passkeys: each by name, and an admin's removal of one (a lost or
  // stolen device), which the user's security log records.
  const passkeyList = h("div", { id: "passkeys-part" });
  function showPasskeys(list) {
    if (!list) {
      passkeyList.replaceChildren(h("p", { class: "muted" }, "Not read: see the error above."));
      return;
    }
    passkeyList.replaceChildren(table("user-passkeys", [
      ["Name", (p) => p.name],
      ["Synced", (p) => (p.backedUp ? "yes" : "no")],
      ["Registered", (p) => fmtTime(p.createdAt)],
      ["Last used", (p) => (p.lastUsedAt ? fmtTime(p.lastUsedAt) : "never")],
      ["", (p) => {
        const remove = h("button", { type: "button", class: "danger small", "aria-label": `Remove passkey ${p.name}` }, "Remove");
        remove.addEventListener("click", () => guard(async () => {
          await api.gql(`mutation ($userId: ID!, $passkeyId: ID!) { removeUserPasskey(userId: $userId, passkeyId: $passkeyId) { removed } }`, { userId: id, passkeyId: p.id });
          await reloadPasskeys();
          securityLog.reload();
          say(`Passkey ${p.name} removed.`);
        }, remove));
        return remove;
      }],
    ], list, "No passkey registered."));
  }
  async function reloadPasskeys() {
    showPasskeys((await guard(() => api.gql(PASSKEYS, { userId: id })))?.userPasskeys);
    showMfa((await guard(() => api.gql(MFA, { userId: id })))?.userMfa);
  }

  // Sign-in identities: the Apple and Google accounts linked to this one.
  const identities = h("div", { id: "identities-part" });
  function showIdentities(list) {
    if (!list) {
      identities.replaceChildren(h("p", { class: "muted" }, "Not read: see the error above."));
      return;
    }
    identities.replaceChildren(table("identities", [
      ["Provider", (i) => PROVIDERS[i.provider] ?? i.provider],
      ["Email", (i) => [h("span", { class: "wrap" }, i.email || "—"), i.privateRelay ? [" ", badge("private relay")] : null]],
      ["Linked", (i) => fmtTime(i.createdAt)],
      ["Last used", (i) => (i.lastUsedAt ? fmtTime(i.lastUsedAt) : "never")],
    ], list, "No Apple or Google identity is linked to this account."));
  }

  // Access: disable with a reason, or enable.
  const reasonIn = h("input", { name: "reason", maxlength: "500", placeholder: "e.g. chargeback" });
  const disableButton = h("button", { type: "submit", class: "danger" }, "Disable account");
  const disableForm = h("form", { class: "inline", "aria-label": "Disable account" }, field("Reason (optional)", reasonIn), disableButton);
  disableForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await guard(async () => {
      const { disableUser } = await api.gql(`mutation ($userId: ID!, $reason: String) { disableUser(userId: $userId, reason: $reason) { ${RECORD} } }`,
        { userId: id, reason: reasonIn.value.trim() || null });
      reasonIn.value = "";
      show(disableUser);
      securityLog.reload();
      say("Account disabled: its sessions ended and its devices get no pushes.");
    }, disableButton);
  });
  const enableButton = h("button", { type: "button" }, "Enable account");
  enableButton.addEventListener("click", () => guard(async () => {
    const { enableUser } = await api.gql(`mutation ($userId: ID!) { enableUser(userId: $userId) { ${RECORD} } }`, { userId: id });
    show(enableUser);
    securityLog.reload();
    say("Account enabled: it can sign in again.");
  }, enableButton));

  // Devices, paged.
  const devices = pagedTable([
    ["Name", (d) => d.name],
    ["Platform", (d) => d.platform],
    ["Push token", tokenState],
    ["Active", (d) => (d.active ? "yes" : "no")],
    ["Last seen", (d) => fmtTime(d.lastSeenAt)],
    ["Registered", (d) => fmtTime(d.createdAt)],
    ["Device id", (d) => h("code", {}, d.deviceId)],
  ], async (after) => {
    const { devices: page } = await api.gql(DEVICES, { userId: id, first: 50, after });
    return { items: page.nodes, pageInfo: page.pageInfo };
  }, { empty: "No device." });
  devices.id = "devices";

  // The security log, newest first, paged.
  const securityLog = pagedTable([
    ["Time", (e) => fmtTime(e.at)],
    ["Kind", (e) => h("code", {}, e.kind)],
    ["Outcome", (e) => outcomeBadge(e.outcome)],
    ["Actor", (e) => e.actor],
    ["IP", (e) => e.ip || "—"],
    ["User agent", (e) => h("span", { class: "wrap" }, e.userAgent || "—")],
  ], async (after) => {
    const { userSecurityLog: page } = await api.gql(SECURITY_LOG, { userId: id, first: 50, after });
    return { items: page.nodes, pageInfo: page.pageInfo };
  }, { empty: "Nothing recorded yet." });
  securityLog.id = "security-log";

  // The in-app inbox: the newest items first, 20 at a time, with the
  // counts the user's badge shows; the archive instead on asking. An
  // operator archives an item or everything shown (up to the newest item
  // loaded), which does not mark them seen: seen and read are the user's.
  const inboxCounts = h("div", { id: "inbox-counts" });
  let inboxArchived = false;
  let inboxNewest = null; // the newest item loaded: archive all's upTo
  async function loadInboxCounts() {
    const c = (await guard(() => api.gql(INBOX_COUNTS, { userId: id })))?.userInboxCounts;
    inboxCounts.replaceChildren(c
      ? facts([["Unseen", h("span", { id: "inbox-unseen" }, c.unseen)], ["Unread", h("span", { id: "inbox-unread" }, c.unread)]])
      : h("p", { class: "muted" }, "Not read: see the error above."));
  }
  function archiveButton(it) {
    const b = h("button", { type: "button", class: "secondary", "aria-label": `Archive ${it.title}`, disabled: Boolean(it.archivedAt) }, "Archive");
    b.addEventListener("click", () => guard(async () => {
      await api.gql(`mutation ($userId: ID!, $id: ID!) { archiveUserInboxItem(userId: $userId, id: $id) { id } }`, { userId: id, id: it.id });
      await Promise.all([inbox.reload(), loadInboxCounts()]);
      say(`"${it.title}" archived: out of the user's inbox, not marked seen.`);
    }, b));
    return b;
  }
  // Archive all: up to the newest item loaded, so that one that arrived
  // since stays. Disabled in the archive and for an empty inbox.
  const archiveAll = h("button", { type: "button", class: "secondary", disabled: true }, "Archive all");
  archiveAll.addEventListener("click", async () => {
    archiveAll.disabled = true;
    const done = await guard(() => api.gql(`mutation ($userId: ID!, $upTo: ID) { archiveUserInbox(userId: $userId, upTo: $upTo) { unseen unread } }`,
      { userId: id, upTo: inboxNewest }));
    await Promise.all([inbox.reload(), loadInboxCounts()]);
    if (done) say(`The user's inbox is archived up to the newest item shown; ${done.archiveUserInbox.unseen} unseen left.`);
  });
  const inbox = pagedTable([
    ["Title", (it) => [h("strong", {}, it.title), h("div", { class: "muted wrap" }, it.body)]],
    ["Category", (it) => h("code", {}, it.category)],
    ["Created", (it) => fmtTime(it.createdAt)],
    ["State", inboxState],
    ["", archiveButton],
  ], async (after) => {
    const { userInbox: page } = await api.gql(INBOX, { userId: id, first: 20, after, archived: inboxArchived });
    if (!after) inboxNewest = page.nodes[0]?.id ?? null;
    archiveAll.disabled = inboxArchived || !inboxNewest;
    return { items: page.nodes, pageInfo: page.pageInfo };
  }, { empty: "Nothing here." });
  inbox.id = "inbox";
  const inboxView = h("select", { name: "inboxView", "aria-label": "Inbox or archive" },
    h("option", { value: "inbox", selected: true }, "Inbox"), h("option", { value: "archive" }, "Archive"));
  inboxView.addEventListener("change", () => {
    inboxArchived = inboxView.value === "archive";
    inbox.reload();
  });

  // A test notification to the user's devices (and linked chat).
  const subjectIn = h("input", { name: "subject", required: true, maxlength: "512", value: "Test from Herald" });
  const contentIn = h("textarea", { name: "content", required: true, maxlength: "2048" }, "This is a test notification.");
  const telegramIn = h("input", { type: "checkbox", name: "telegram" });
  // The categories come with the preferences (every category of the
  // deployment); service is a send's default.
  const categoryIn = h("select", { name: "category" }, h("option", { value: "service" }, "service"));
  const urgentIn = h("input", { type: "checkbox", name: "urgent" });
  // The email channel: a queued job to the verified address.
  const emailIn = h("input", { type: "checkbox", name: "email" });
  const sendTest = h("button", { type: "submit" }, "Send test");
  const outcomes = h("div", { id: "outcomes", "aria-live": "polite" });
  const testForm = h("form", { "aria-label": "Send a test notification" },
    field("Subject", subjectIn), field("Content", contentIn), field("Category", categoryIn),
    h("label", { class: "check" }, telegramIn, "Also to the linked Telegram chat"),
    h("label", { class: "check" }, emailIn, "Also by email (to the verified address)"),
    h("label", { class: "check" }, urgentIn, "Urgent: not held by the user's quiet hours"), h("div", {}, sendTest));
  testForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await guard(async () => {
      const { sendNotificationToUser: r } = await api.gql(`mutation ($userId: ID!, $n: NotificationInput!, $channels: [String!], $category: String, $urgent: Boolean) {
        sendNotificationToUser(userId: $userId, notification: $n, channels: $channels, category: $category, urgent: $urgent) {
          status message heldUntil skipped { optedOut capped } outcomes { deviceId chatId platform channel status error } } }`,
      { userId: id, n: { subject: subjectIn.value, content: contentIn.value }, channels: ["push", ...(telegramIn.checked ? ["telegram"] : []), ...(emailIn.checked ? ["email"] : [])],
        category: categoryIn.value, urgent: urgentIn.checked });
      const kind = r.status === "sent" ? "ok" : r.status === "partial" || r.status === "no_recipients" || r.status === "held" ? "warn" : "bad";
      outcomes.replaceChildren(h("p", {}, badge(r.status, kind), " ", r.message,
        r.heldUntil ? ` Held until ${fmtTime(r.heldUntil)}.` : null,
        r.skipped.optedOut > 0 ? h("span", { class: "opted-out" }, ` ${r.skipped.optedOut} skipped: the user turned ${categoryIn.value} off there.`) : null,
        r.skipped.capped > 0 ? h("span", { class: "capped" }, ` ${r.skipped.capped} skipped: the user already had today's ${caps.get(categoryIn.value) ?? "capped number of"} ${categoryIn.value} sends (the category's cap).`) : null));
      if (r.outcomes.length > 0) outcomes.append(h("div", { class: "scroll" }, h("table", {},
          h("thead", {}, h("tr", {}, ["Recipient", "Platform", "Channel", "Outcome", "Error"].map((c) => h("th", { scope: "col" }, c)))),
          h("tbody", {}, r.outcomes.map((o) => h("tr", { class: "outcome" },
            h("td", {}, h("code", {}, o.deviceId ?? o.chatId ?? "—")),
            h("td", {}, o.platform), h("td", {}, o.channel),
            h("td", {}, badge(o.status, o.status === "sent" || o.status === "queued" ? "ok" : "bad")),
            h("td", {}, o.error ? h("code", {}, o.error) : "—")))))));
    }, sendTest);
  });

  // caps are the categories' caps a day (the deployment's catalogue;
  // uncapped ones are absent), read with the preferences.
  const caps = new Map();

  // Notification preferences: every category per channel, switched one
  // at a time (critical ones are always on), and the time zone and quiet
  // hours the user's sends are held by.
  const preferences = h("div", { id: "preferences-part" });
  const schedule = h("div", { id: "schedule" });
  const zoneIn = h("input", { name: "timeZone", autocomplete: "off", spellcheck: "false", placeholder: "Europe/Berlin (empty: UTC)" });
  const quietIn = h("input", { type: "checkbox", name: "quietEnabled" });
  const startIn = h("input", { type: "time", name: "quietStart" });
  const endIn = h("input", { type: "time", name: "quietEnd" });
  const saveSchedule = h("button", { type: "submit" }, "Save");
  const scheduleForm = h("form", { class: "inline", "aria-label": "Time zone and quiet hours" },
    field("Time zone (IANA)", zoneIn), field("Quiet from", startIn), field("Quiet until", endIn),
    h("label", { class: "check" }, quietIn, "Quiet hours on"), saveSchedule);
  for (const el of [startIn, endIn]) el.addEventListener("input", () => clearFieldError(el));
  const mutatePreferences = (vars) => api.gql(`mutation ($userId: ID!, $settings: [NotificationSettingInput!], $timeZone: String, $quietHours: QuietHoursInput) {
    updateUserNotificationPreferences(userId: $userId, settings: $settings, timeZone: $timeZone, quietHours: $quietHours) { ${PREFERENCES} } }`, { userId: id, ...vars });

  // channelSwitch is one category's channel: a checkbox, disabled for a
  // critical category; a change is sent at once.
  function channelSwitch(c, channel, label) {
    const box = h("input", { type: "checkbox", name: `${c.category}-${channel}`, checked: c.channels[channel], disabled: c.critical,
      "aria-label": `${c.category} on ${label}`, "data-category": c.category, "data-channel": channel });
    box.addEventListener("change", async () => {
      const enabled = box.checked;
      const done = await guard(() => mutatePreferences({ settings: [{ category: c.category, channel, enabled }] }), box);
      if (!done) {
        box.checked = !enabled;
        return;
      }
      showPreferences(done.updateUserNotificationPreferences);
      say(`${c.category} is ${enabled ? "on" : "off"} on ${label}.`);
    });
    return box;
  }

  // showPreferences puts the preferences in the table and the schedule;
  // undefined: they could not be read (the error is shown).
  function showPreferences(p) {
    if (!p) {
      const unread = () => h("p", { class: "muted" }, "Not read: see the error above.");
      preferences.replaceChildren(unread());
      schedule.replaceChildren(unread());
      return;
    }
    preferences.replaceChildren(table("preferences", [
      ["Category", (c) => [h("code", {}, c.category), c.critical ? [" ", badge("critical", "warn")] : null]],
      ["Cap", (c) => h("span", { class: "cap", "data-cap": caps.get(c.category) ?? "" }, caps.has(c.category) ? `${caps.get(c.category)} a day` : "—")],
      ...CHANNELS.map(([channel, label]) => [label, (c) => channelSwitch(c, channel, label)]),
    ], p.categories, "No category."));
    schedule.replaceChildren(facts([
      ["Time zone", h("span", { id: "pref-zone" }, p.timeZone ?? "none (UTC)")],
      ["Quiet hours", h("span", { id: "pref-quiet" }, p.quietHours ? `${p.quietHours.start}–${p.quietHours.end}` : "none")],
    ]));
    zoneIn.value = p.timeZone ?? "";
    quietIn.checked = p.quietHours !== null;
    startIn.value = p.quietHours?.start ?? "";
    endIn.value = p.quietHours?.end ?? "";
    const options = p.categories.map((c) => c.category);
    categoryIn.replaceChildren(...options.map((name) => h("option", { value: name, selected: name === (categoryIn.value || "service") }, name)));
  }

  scheduleForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let quietHours = { enabled: false };
    if (quietIn.checked) {
      if (!startIn.value) return fieldError(startIn, "Give the time the quiet hours start.");
      if (!endIn.value) return fieldError(endIn, "Give the time they end.");
      quietHours = { enabled: true, start: startIn.value, end: endIn.value };
    }
    const timeZone = zoneIn.value.trim();
    await guard(async () => {
      const { updateUserNotificationPreferences: p } = await mutatePreferences({ timeZone, quietHours });
      showPreferences(p);
      say(`Time zone ${p.timeZone ?? "UTC"}; ${p.quietHours ? `quiet hours ${p.quietHours.start}–${p.quietHours.end}` : "no quiet hours"}.`);
    }, saveSchedule);
  });

  // Deletion, confirmed by typing the email (a guest's id: it has none).
  const confirmWord = () => user.email ?? user.id;
  const confirmIn = h("input", { name: "confirm", autocomplete: "off", spellcheck: "false" });
  const deleteButton = h("button", { type: "submit", class: "danger", disabled: true }, "Delete account");
  const deleteForm = h("form", { class: "inline", "aria-label": "Delete account" },
    field(`Type ${confirmWord()} to confirm`, confirmIn), deleteButton);
  confirmIn.addEventListener("input", () => { deleteButton.disabled = confirmIn.value.trim() !== confirmWord(); });
  deleteForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (confirmIn.value.trim() !== confirmWord()) return;
    const email = accountName(user);
    const done = await guard(() => api.gql(`mutation ($userId: ID!) { deleteUser(userId: $userId) }`, { userId: id }), deleteButton);
    if (!done) {
      deleteButton.disabled = confirmIn.value.trim() !== confirmWord();
      return;
    }
    main.replaceChildren(h("h1", {}, "Account deleted"),
      notice(`${email} is deleted: its sessions, devices and codes are gone; only its id remains.`),
      h("p", {}, h("a", { href: "#/users" }, "Back to users")));
  });

  show(user);
  await reloadPasskeys();
  showIdentities((await guard(() => api.gql(IDENTITIES, { userId: id })))?.userIdentities);
  showDetail(await guard(() => loadDetail(async () => (await api.gql(SUBSCRIPTION, { id })).userSubscription)));
  const prefs = await guard(() => api.gql(`query ($userId: ID!) {
    userNotificationPreferences(userId: $userId) { ${PREFERENCES} } notificationCategories { name capPerDay } }`, { userId: id }));
  for (const c of prefs?.notificationCategories ?? []) if (c.capPerDay != null) caps.set(c.name, c.capPerDay);
  showPreferences(prefs?.userNotificationPreferences);
  await loadInboxCounts();
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/users" }, "Users"), " / account"),
    h("div", { class: "heading" }, title, badges),
    status,
    h("div", { class: "row" },
      section("Account", account),
      section("Subscription", subscription,
        h("h3", {}, "Manual grant"),
        h("p", { class: "muted" }, "An administrator's entitlement: it ends the trial and referral bonuses; a store purchase stays, and the better of the two is the plan."),
        subForm)),
    section("Entitlements", entitlements,
      h("div", { class: "actions" }, reconcile),
      h("h3", {}, "History"), history),
    section("Devices", devices),
    h("div", { class: "row" },
      section("Sessions", sessions, h("div", { class: "actions" }, endSessions)),
      section("Telegram", chat)),
    section("Second factors", factors, h("div", { class: "actions" }, resetMfa)),
    section("Passkeys", passkeyList),
    section("Sign-in identities", identities),
    section("Security log", securityLog),
    section("Notification preferences",
      h("p", { class: "muted" }, "Each category on or off per channel: a switch changes it at once. Critical categories are always on. A category's cap is the most of its sends the user gets a day (in their time zone); critical and urgent sends are never capped."),
      preferences,
      h("h3", {}, "Time zone and quiet hours"),
      h("p", { class: "muted" }, "Sends to the user inside the quiet hours, other than critical or urgent ones, are held until they end (in the user's time zone)."),
      schedule, scheduleForm),
    section("Inbox",
      h("p", { class: "muted" }, "What sends kept for the app to show, newest first. Archiving takes an item out of the user's inbox without marking it seen."),
      inboxCounts, h("div", { class: "actions" }, inboxView, archiveAll), inbox),
    section("Test notification", testForm, outcomes),
    h("div", { class: "row" },
      section("Access", access),
      section("Delete", h("p", { class: "muted" }, "Deletion erases the email and password, ends the sessions and removes the devices. It cannot be undone."), deleteForm)));
}
