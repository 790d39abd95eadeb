/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /** Any JSON value. */
  JSON: { input: unknown; output: unknown; }
  /** An instant in ISO 8601 / RFC 3339, always UTC, e.g. 2026-11-29T10:00:00Z. */
  Time: { input: string; output: string; }
};

/** Accounts; deleted ones are not counted. */
export type AccountCounts = {
  __typename?: 'AccountCounts';
  disabled: Scalars['Int']['output'];
  /** Created in the last 24 hours. */
  newLast24h: Scalars['Int']['output'];
  total: Scalars['Int']['output'];
  verified: Scalars['Int']['output'];
};

/** The service at a glance, for the operator console. */
export type AdminOverview = {
  __typename?: 'AdminOverview';
  accounts: AccountCounts;
  /** The Telegram bot, as messengerBotStatus reports it. */
  bot: MessengerBotStatus;
  broadcasts: BroadcastCounts;
  devices: DeviceCounts;
  /** The rate limiter of the replica that answered. */
  rateLimiter: RateLimiterState;
  /** The server's version. */
  version: Scalars['String']['output'];
  webhooks: WebhookCounts;
};

/** An API key of another service, without its secret. */
export type ApiKey = {
  __typename?: 'ApiKey';
  createdAt: Scalars['Time']['output'];
  expiresAt?: Maybe<Scalars['Time']['output']>;
  id: Scalars['ID']['output'];
  /** Updated at most once a minute. */
  lastUsedAt?: Maybe<Scalars['Time']['output']>;
  name: Scalars['String']['output'];
  /** Requests per rate-limit window (a minute), charged to the apikey tier. */
  rateLimit: Scalars['Int']['output'];
  revokedAt?: Maybe<Scalars['Time']['output']>;
  /** Among accounts:read, accounts:write, notifications:send, messenger:send, webhooks:manage. */
  scopes: Array<Scalars['String']['output']>;
};

/** Who a broadcast reaches; an omitted or empty field does not narrow it. */
export type AudienceInput = {
  /** Plan names, such as trial. */
  plans?: InputMaybe<Array<Scalars['String']['input']>>;
  /** Any of android, ios, web, huawei. */
  platforms?: InputMaybe<Array<Scalars['String']['input']>>;
  /** active or expired, as of when the job is created. */
  subscriptionStatus?: InputMaybe<Scalars['String']['input']>;
};

/** What a sign-in page may offer besides the email and password. */
export type AuthMethods = {
  __typename?: 'AuthMethods';
  /** Passkeys are on (HERALD_WEBAUTHN_RP_ID set); false: every passkey operation answers PASSKEYS_NOT_CONFIGURED. */
  passkeys: Scalars['Boolean']['output'];
};

export type AuthPayload = {
  __typename?: 'AuthPayload';
  /** A JWT (EdDSA) to send as Authorization: Bearer <accessToken>. */
  accessToken: Scalars['String']['output'];
  /** Seconds until the access token expires. */
  expiresIn: Scalars['Int']['output'];
  /** An opaque token for refreshToken; single use. */
  refreshToken: Scalars['String']['output'];
  /** Always Bearer. */
  tokenType: Scalars['String']['output'];
};

/** A banned client address. */
export type Ban = {
  __typename?: 'Ban';
  createdAt: Scalars['Time']['output'];
  /** An IPv4 address, or an IPv6 /64. */
  ip: Scalars['String']['output'];
  reason: Scalars['String']['output'];
};

export type BanConnection = {
  __typename?: 'BanConnection';
  nodes: Array<Ban>;
  pageInfo: PageInfo;
};

/** Broadcasts not yet finished. */
export type BroadcastCounts = {
  __typename?: 'BroadcastCounts';
  /** Messenger broadcasts running or queued. */
  messengerRunning: Scalars['Int']['output'];
  /** Push notification jobs queued. */
  queued: Scalars['Int']['output'];
  /** Push notification jobs running. */
  running: Scalars['Int']['output'];
  /** Push notification jobs waiting for their sendAt. */
  scheduled: Scalars['Int']['output'];
};

/** A broadcast's email part, counted apart from its devices: one email per account of the audience. */
export type BroadcastEmailCounts = {
  __typename?: 'BroadcastEmailCounts';
  /** Accounts already at the category's cap that day (counted once per broadcast with their devices). */
  capped: Scalars['Int']['output'];
  /** Accounts without a verified real address (a guest's placeholder, an address not yet verified). */
  noEmailAddress: Scalars['Int']['output'];
  /** Accounts that turned the category's email off. */
  optedOut: Scalars['Int']['output'];
  /** Emails queued, one per account with a verified real address (each then sent by the email channel's job, at its owner's due time: a held email is queued with its due time). */
  queued: Scalars['Int']['output'];
};

export type BroadcastResult = {
  __typename?: 'BroadcastResult';
  jobId: Scalars['String']['output'];
  message: Scalars['String']['output'];
  /** queued, or scheduled with sendAt */
  status: Scalars['String']['output'];
  /** Active devices with a valid token when the job was queued (0 for a broadcast without the push channel; its emails are counted as they are queued, in the job's email counters). */
  totalRecipients: Scalars['Int']['output'];
};

export type CategoryPreferences = {
  __typename?: 'CategoryPreferences';
  category: Scalars['String']['output'];
  channels: ChannelSwitches;
  /** security and billing: always on. */
  critical: Scalars['Boolean']['output'];
};

/** Which channels a category reaches the user on. */
export type ChannelSwitches = {
  __typename?: 'ChannelSwitches';
  email: Scalars['Boolean']['output'];
  inbox: Scalars['Boolean']['output'];
  push: Scalars['Boolean']['output'];
  telegram: Scalars['Boolean']['output'];
  webPush: Scalars['Boolean']['output'];
};

export type CreateApiKeyInput = {
  /** When the key stops working; null: never. */
  expiresAt?: InputMaybe<Scalars['Time']['input']>;
  /** 1 to 100 characters, e.g. billing. */
  name: Scalars['String']['input'];
  /** Requests per minute; default HERALD_RATE_LIMIT_APIKEY. */
  rateLimit?: InputMaybe<Scalars['Int']['input']>;
  /** One or more of accounts:read, accounts:write, notifications:send, messenger:send, webhooks:manage. */
  scopes: Array<Scalars['String']['input']>;
};

export type CreateWebhookEndpointInput = {
  /** At most 500 characters. */
  description?: InputMaybe<Scalars['String']['input']>;
  /** One or more event types of webhookEventTypes. */
  eventTypes: Array<Scalars['String']['input']>;
  url: Scalars['String']['input'];
};

export type CreatedApiKey = {
  __typename?: 'CreatedApiKey';
  apiKey: ApiKey;
  /** hk_<id>_<secret>: send as Authorization: Bearer … or X-API-Key. Shown only here. */
  key: Scalars['String']['output'];
};

export type CreatedWebhookEndpoint = {
  __typename?: 'CreatedWebhookEndpoint';
  endpoint: WebhookEndpoint;
  /** whsec_ and base64: the key of the signatures. Shown only here. */
  secret: Scalars['String']['output'];
};

export type Device = {
  __typename?: 'Device';
  active: Scalars['Boolean']['output'];
  createdAt: Scalars['Time']['output'];
  deviceId: Scalars['String']['output'];
  lastSeenAt: Scalars['Time']['output'];
  name: Scalars['String']['output'];
  /** android, ios, web or huawei. */
  platform: Scalars['String']['output'];
  /** Null once the device was removed or its token moved to another device. */
  pushToken?: Maybe<Scalars['String']['output']>;
  /** valid or invalid. */
  pushTokenStatus: Scalars['String']['output'];
  userId: Scalars['ID']['output'];
};

export type DeviceConnection = {
  __typename?: 'DeviceConnection';
  nodes: Array<Device>;
  pageInfo: PageInfo;
};

/** Active devices. Each is in one of tokensValid, tokensInvalid and tokensMissing. */
export type DeviceCounts = {
  __typename?: 'DeviceCounts';
  /** android, ios, web and huawei (zero included), then any other platform. */
  byPlatform: Array<PlatformCount>;
  /** A token a push provider called dead (pushTokenStatus invalid). */
  tokensInvalid: Scalars['Int']['output'];
  /** No token: it moved to another device (pushTokenStatus invalid, pushToken null). */
  tokensMissing: Scalars['Int']['output'];
  /** pushTokenStatus valid. */
  tokensValid: Scalars['Int']['output'];
  total: Scalars['Int']['output'];
};

/** How the send to one device, or to the linked Telegram chat, went. */
export type DeviceSendOutcome = {
  __typename?: 'DeviceSendOutcome';
  /** push, telegram or email. */
  channel: Scalars['String']['output'];
  /** The linked chat's id (channel telegram); null for a device. */
  chatId?: Maybe<Scalars['String']['output']>;
  /** null for the Telegram chat and the email. */
  deviceId?: Maybe<Scalars['String']['output']>;
  /** The error code of an outcome other than sent. */
  error?: Maybe<Scalars['String']['output']>;
  /** android, ios, web or huawei; telegram for the chat; email for the email. */
  platform: Scalars['String']['output'];
  /** sent, invalid_token (the device is marked) or failed; for the chat sent, failed or blocked (the user blocked the bot); for the email queued (a job sends it). */
  status: Scalars['String']['output'];
};

/** What the old address's cancel link did (cancelEmailChange). */
export type EmailChangeCancel = {
  __typename?: 'EmailChangeCancel';
  /** Whether a pending change was dropped; false when none was left (confirmed, replaced or cancelled already). */
  cancelled: Scalars['Boolean']['output'];
};

/** An email change waiting for its code (changeEmail). */
export type EmailChangeRequest = {
  __typename?: 'EmailChangeRequest';
  message: Scalars['String']['output'];
  /** The new address the code went to. */
  pendingEmail: Scalars['String']['output'];
};

/** One right to a plan: a store purchase, an administrator's grant, the trial or a referral bonus. */
export type Entitlement = {
  __typename?: 'Entitlement';
  autoRenew: Scalars['Boolean']['output'];
  /** The store's environment (Production, Sandbox); null for other sources. */
  environment?: Maybe<Scalars['String']['output']>;
  expiresAt: Scalars['Time']['output'];
  /** While state is grace, when access ends unless the payment recovers. */
  graceEndsAt?: Maybe<Scalars['Time']['output']>;
  id: Scalars['ID']['output'];
  plan: Scalars['String']['output'];
  /** The store's product (the App Store product id, the Play subscription id, the Stripe price); empty for grants, the trial and referrals. */
  productId: Scalars['String']['output'];
  /** app_store, google_play, stripe, admin, trial or referral. */
  source: Scalars['String']['output'];
  startedAt: Scalars['Time']['output'];
  /** trial, active, grace, on_hold, paused, cancelled, expired, refunded or revoked. */
  state: Scalars['String']['output'];
  updatedAt: Scalars['Time']['output'];
};

/** One change of an account's entitlements. */
export type EntitlementChange = {
  __typename?: 'EntitlementChange';
  at: Scalars['Time']['output'];
  /** What made the change: a store's notification (app_store:DID_RENEW), purchase, restore, reconcile, past_refund (a refund of an earlier App Store period: the state unchanged, expiresAt the refunded period's end), admin, signup, referral, expiry, replaced. */
  cause: Scalars['String']['output'];
  entitlementId: Scalars['ID']['output'];
  expiresAt: Scalars['Time']['output'];
  /** The state before; null for a new entitlement. */
  from?: Maybe<Scalars['String']['output']>;
  id: Scalars['ID']['output'];
  plan: Scalars['String']['output'];
  source: Scalars['String']['output'];
  to: Scalars['String']['output'];
};

/** One provider identity of an account. */
export type Identity = {
  __typename?: 'Identity';
  createdAt: Scalars['Time']['output'];
  /** The address the provider gave (an Apple private relay address when the user hid theirs). */
  email: Scalars['String']['output'];
  id: Scalars['ID']['output'];
  lastUsedAt?: Maybe<Scalars['Time']['output']>;
  privateRelay: Scalars['Boolean']['output'];
  /** apple or google. */
  provider: Scalars['String']['output'];
};

export type IdentityProvider =
  | 'apple'
  | 'google';

export type IdentityRemoved = {
  __typename?: 'IdentityRemoved';
  identityId: Scalars['ID']['output'];
  removed: Scalars['Boolean']['output'];
};

/** The counts of the inbox (items not archived, not expired) a badge shows. */
export type InboxCounts = {
  __typename?: 'InboxCounts';
  unread: Scalars['Int']['output'];
  unseen: Scalars['Int']['output'];
};

/** A live event of the inbox: the counts as they are, and the item kept when one was. */
export type InboxEvent = {
  __typename?: 'InboxEvent';
  item?: Maybe<InboxItem>;
  unread: Scalars['Int']['output'];
  unseen: Scalars['Int']['output'];
};

/** One item of a user's in-app inbox. */
export type InboxItem = {
  __typename?: 'InboxItem';
  archivedAt?: Maybe<Scalars['Time']['output']>;
  body: Scalars['String']['output'];
  category: Scalars['String']['output'];
  createdAt: Scalars['Time']['output'];
  /** The notification's data ({} when none). */
  data: Scalars['JSON']['output'];
  /** After it the item is no longer listed or counted, and is deleted. */
  expiresAt: Scalars['Time']['output'];
  /** A UUIDv7: id order is the order items were kept. */
  id: Scalars['ID']['output'];
  readAt?: Maybe<Scalars['Time']['output']>;
  seenAt?: Maybe<Scalars['Time']['output']>;
  title: Scalars['String']['output'];
};

export type InboxItemConnection = {
  __typename?: 'InboxItemConnection';
  nodes: Array<InboxItem>;
  pageInfo: PageInfo;
};

/**
 * A mark an inbox item is given. The values are the REST paths' and the
 * items' words, lower case as the variables' JSON strings ("seen").
 */
export type InboxMark =
  /** Out of the inbox, into the archive (also marks it seen). */
  | 'archived'
  | 'read'
  | 'seen';

/** A wall-clock time on a date, read in each recipient's time zone. */
export type LocalTime = {
  __typename?: 'LocalTime';
  /** YYYY-MM-DD. */
  date: Scalars['String']['output'];
  /** HH:MM. */
  time: Scalars['String']['output'];
};

/** A wall-clock time on a date, read in each recipient's time zone: a date (YYYY-MM-DD) and a time (HH:MM); either malformed is VALIDATION_ERROR naming sendAtLocal.date or sendAtLocal.time, and one past in every zone or more than 30 days ahead names sendAtLocal. */
export type LocalTimeInput = {
  date: Scalars['String']['input'];
  time: Scalars['String']['input'];
};

export type MessengerBotStatus = {
  __typename?: 'MessengerBotStatus';
  botName?: Maybe<Scalars['String']['output']>;
  botUsername?: Maybe<Scalars['String']['output']>;
  connected: Scalars['Boolean']['output'];
  subscriberCount: Scalars['Int']['output'];
  webhookUrl?: Maybe<Scalars['String']['output']>;
};

/** A messenger broadcast job. */
export type MessengerBroadcast = {
  __typename?: 'MessengerBroadcast';
  /** Chats that answered 403 (blocked the bot); they are marked blocked. */
  blocked: Scalars['Int']['output'];
  createdAt: Scalars['Time']['output'];
  /** Why a failed job failed. */
  error?: Maybe<Scalars['String']['output']>;
  failed: Scalars['Int']['output'];
  finishedAt?: Maybe<Scalars['Time']['output']>;
  id: Scalars['ID']['output'];
  sent: Scalars['Int']['output'];
  startedAt?: Maybe<Scalars['Time']['output']>;
  /** queued, running, completed, failed or cancelled. */
  status: Scalars['String']['output'];
  /** Chats subscribed (and in the audience, if any) when the job was created. */
  totalRecipients: Scalars['Int']['output'];
};

export type MessengerButton = {
  text: Scalars['String']['input'];
  /** http or https. */
  url: Scalars['String']['input'];
};

/** One change of a chat's subscription to the bot. */
export type MessengerEvent = {
  __typename?: 'MessengerEvent';
  at: Scalars['Time']['output'];
  /** subscribe, unsubscribe, block or unblock. */
  kind: Scalars['String']['output'];
  /** The chat as it is after the change. */
  subscriber: MessengerSubscriber;
};

export type MessengerLink = {
  __typename?: 'MessengerLink';
  expiresAt: Scalars['Time']['output'];
  /** https://t.me/<bot>?start=<one-time token> */
  url: Scalars['String']['output'];
};

export type MessengerMessageOptions = {
  /** Rows of inline URL buttons. */
  buttons?: InputMaybe<Array<Array<MessengerButton>>>;
  /** Send a document with the message as its caption (at most 1024 characters). */
  documentUrl?: InputMaybe<Scalars['String']['input']>;
  /** Send a photo with the message as its caption (at most 1024 characters). */
  imageUrl?: InputMaybe<Scalars['String']['input']>;
  /** Deliver without a notification sound. */
  silent?: InputMaybe<Scalars['Boolean']['input']>;
};

/** A message as the bot would send it. */
export type MessengerPreview = {
  __typename?: 'MessengerPreview';
  /** Exactly the text sent with parse_mode HTML. */
  html: Scalars['String']['output'];
  /** The visible text's length as Telegram counts it (UTF-16 units) against its limits: 4096 for a message, 1024 for a caption. */
  length: Scalars['Int']['output'];
};

export type MessengerSubscriber = {
  __typename?: 'MessengerSubscriber';
  chatId: Scalars['String']['output'];
  firstName?: Maybe<Scalars['String']['output']>;
  /** The deep-link payload sent with /start, if any. */
  startPayload?: Maybe<Scalars['String']['output']>;
  /** subscribed, unsubscribed or blocked. */
  status: Scalars['String']['output'];
  subscribedSince: Scalars['Time']['output'];
  /** The account the chat is linked to (messengerLinkUrl), null when none. */
  userId?: Maybe<Scalars['ID']['output']>;
  username?: Maybe<Scalars['String']['output']>;
};

export type MessengerSubscriberConnection = {
  __typename?: 'MessengerSubscriberConnection';
  nodes: Array<MessengerSubscriber>;
  pageInfo: PageInfo;
};

/** A confirmed TOTP factor. */
export type MfaConfirmed = {
  __typename?: 'MfaConfirmed';
  factor: MfaFactor;
  /** Ten single-use recovery codes, shown this once; empty when the account kept its earlier ones. */
  recoveryCodes: Array<Scalars['String']['output']>;
  /** The caller's session at aal2. */
  session: AuthPayload;
};

/** One second factor of an account. */
export type MfaFactor = {
  __typename?: 'MfaFactor';
  confirmedAt?: Maybe<Scalars['Time']['output']>;
  createdAt: Scalars['Time']['output'];
  id: Scalars['ID']['output'];
  /** totp. */
  kind: Scalars['String']['output'];
  lastUsedAt?: Maybe<Scalars['Time']['output']>;
  name: Scalars['String']['output'];
  /** pending (waiting for its first code) or active. */
  status: Scalars['String']['output'];
};

/** A removed factor. */
export type MfaFactorRemoved = {
  __typename?: 'MfaFactorRemoved';
  factorId: Scalars['ID']['output'];
  removed: Scalars['Boolean']['output'];
};

/** An admin's reset of a user's second factors. */
export type MfaReset = {
  __typename?: 'MfaReset';
  factorsRemoved: Scalars['Int']['output'];
  userId: Scalars['ID']['output'];
};

/** An account's second factors. */
export type MfaStatus = {
  __typename?: 'MfaStatus';
  /** Whether a factor is active or the account has a passkey (logins then need it). */
  enabled: Scalars['Boolean']['output'];
  factors: Array<MfaFactor>;
  /** How many passkeys the account has (each a factor; myPasskeys lists the caller's). */
  passkeys: Scalars['Int']['output'];
  recoveryCodesLeft: Scalars['Int']['output'];
};

/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type Mutation = {
  __typename?: 'Mutation';
  /**
   * Record an App Store purchase or restore for the caller: the StoreKit 2
   * signed transaction (a JWS) the app got, verified through its certificate
   * chain. Answers the caller's subscription as mySubscription does.
   * BILLING_NOT_CONFIGURED when the App Store is not connected;
   * BILLING_SIGNATURE_INVALID for a forged or malformed signature;
   * BILLING_WRONG_APP for another app or environment;
   * PURCHASE_OWNED_ELSEWHERE for a purchase of another account.
   */
  appleTransaction: SubscriptionDetail;
  /**
   * Archive every item of a user's inbox, up to and including upTo when
   * given (what the operator was shown, not what arrived since), without
   * marking them seen; answers the counts after it.
   */
  archiveUserInbox: InboxCounts;
  /**
   * Archive one of a user's items: out of their inbox, into their archive,
   * not marked seen (archivedAt set; seenAt and readAt as they were). The
   * user's live subscribers get the new counts. USER_NOT_FOUND for an
   * unknown user; INBOX_ITEM_NOT_FOUND for an unknown or expired id, or
   * another user's item.
   */
  archiveUserInboxItem: InboxItem;
  /**
   * Ban a client address: every request from it is refused (BANNED) on every
   * replica within a few seconds. ip is an IPv4 address, or an IPv6 address
   * whose /64 is banned (or that /64 itself); anything else is
   * VALIDATION_ERROR naming ip. reason: at most 500 characters, default
   * "banned by an operator". Banning a banned address answers its ban as it
   * is (the first reason stays).
   */
  banAddress: Ban;
  /** Begin a passwordless sign-in: options with no allowed credentials (the authenticator offers its own). */
  beginPasskeyLogin: PasskeyOptions;
  /** Begin a passkey's assertion completing a login that answered MFA_REQUIRED (its challengeToken). */
  beginPasskeyMfa: PasskeyOptions;
  /**
   * Begin registering a passkey for the caller: a discoverable credential
   * (resident key required), user verification preferred. Needs aal2 while
   * the account has a second factor (a passkey is one).
   */
  beginPasskeyRegistration: PasskeyOptions;
  /** Begin a passkey's assertion stepping the caller's session up to aal2 (MFA_NOT_ENABLED without a passkey). */
  beginPasskeyStepUp: PasskeyOptions;
  /**
   * The old address's cancel link (the token of its ?token=): drops the
   * pending change it names. false when none was left to cancel;
   * VALIDATION_ERROR (token) for a damaged or expired token.
   */
  cancelEmailChange: EmailChangeCancel;
  /** Stop a queued or running messenger broadcast before its next batch; a finished one is answered as it is. */
  cancelMessengerBroadcast: MessengerBroadcast;
  /** Stop a queued or running broadcast between batches. */
  cancelNotificationJob: NotificationJob;
  /**
   * Change the caller's email: a 6-digit code goes to the new address and a
   * notice, with a link that cancels, to the current one. Nothing changes
   * until confirmEmailChange. EMAIL_EXISTS when another account has the
   * address; VALIDATION_ERROR (email) when it is the current one; the resend
   * limits as RATE_LIMITED.
   */
  changeEmail: EmailChangeRequest;
  /**
   * Change the caller's password, confirmed by the current one
   * (INVALID_CREDENTIALS when wrong; WEAK_PASSWORD for a weak new one):
   * every other session ends and the account's address is told.
   */
  changePassword: PasswordChange;
  /**
   * Complete a login that answered MFA_REQUIRED: its challengeToken (single
   * use, five minutes) and a TOTP or recovery code. The session is at aal2.
   */
  completeMfaLogin: AuthPayload;
  /**
   * Complete a login that answered MFA_REQUIRED with a passkey's assertion
   * begun by beginPasskeyMfa: a session at aal2 (amr pwd and webauthn).
   */
  completeMfaLoginWithPasskey: AuthPayload;
  /**
   * Type the new address's code: it becomes the account's email, verified,
   * every other session ends and the old address is told.
   * INVALID_VERIFICATION_CODE / VERIFICATION_CODE_EXPIRED as for verifyEmail.
   */
  confirmEmailChange: User;
  /**
   * Confirm an enrolled TOTP factor with its first code: it becomes active,
   * the first factor answers ten recovery codes (shown this once), and the
   * caller's session steps up to aal2 (the new tokens are in session).
   */
  confirmTotp: MfaConfirmed;
  /** Create an API key for another service; the key is in the answer this once. */
  createApiKey: CreatedApiKey;
  /** Register a webhook endpoint; its signing secret is in the answer this once. */
  createWebhookEndpoint: CreatedWebhookEndpoint;
  /**
   * Delete the caller's own account (as deleteUser), confirmed by its password;
   * the last enabled admin is LAST_ADMIN. An account without a password (made
   * by Apple or Google, or a guest) confirms by a session signed in within
   * HERALD_RECENT_SIGN_IN instead (RECENT_SIGN_IN_REQUIRED otherwise).
   */
  deleteAccount: Scalars['Boolean']['output'];
  /**
   * Delete an account: its sessions end, its devices and codes go, its email
   * and password are erased, and only its id and deletion time remain. The
   * email can sign up again. An account holding admin needs a caller holding
   * admin; the last enabled admin is LAST_ADMIN.
   */
  deleteUser: Scalars['Boolean']['output'];
  /** Delete a webhook endpoint; its pending deliveries are dropped. */
  deleteWebhookEndpoint: Scalars['Boolean']['output'];
  /**
   * Disable an account: its sessions end, it cannot log in (ACCOUNT_DISABLED
   * once the password is right) and its devices get no pushes. Disabling a
   * disabled account changes nothing. An account holding admin needs a caller
   * holding admin (an API key gets INSUFFICIENT_PERMISSIONS naming admin); the
   * last enabled admin is LAST_ADMIN.
   */
  disableUser: UserRecord;
  /**
   * Let a disabled account log in again; its ended sessions stay ended. An
   * account holding admin needs a caller holding admin.
   */
  enableUser: UserRecord;
  /**
   * Start a TOTP factor: the secret, the otpauth:// URI and a QR code (PNG
   * data URL), shown this once. It guards logins once confirmTotp confirms it.
   */
  enrollTotp: TotpEnrollment;
  /**
   * Finish a passwordless sign-in with the credential navigator.credentials.get
   * answered: a session at aal2 (amr webauthn).
   */
  finishPasskeyLogin: AuthPayload;
  /**
   * Finish a registration with the credential navigator.credentials.create
   * answered (challengeId may be left out: the credential names its
   * challenge). PASSKEY_REGISTRATION_FAILED (extensions.reason) when it does
   * not verify.
   */
  finishPasskeyRegistration: Passkey;
  /**
   * Record a Google Play purchase or restore for the caller, read from Google
   * Play by its purchase token. Answers the caller's subscription as
   * mySubscription does. BILLING_NOT_CONFIGURED when Google Play is not
   * connected; PURCHASE_NOT_FOUND when Google Play does not know the token;
   * BILLING_WRONG_APP when it is a purchase of another product;
   * PURCHASE_OWNED_ELSEWHERE for a purchase of another account.
   */
  googlePurchase: SubscriptionDetail;
  /**
   * Lift the ban on a client address (an IPv6 address lifts its /64); it
   * holds on every replica within a few seconds. BAN_NOT_FOUND when it is
   * not banned.
   */
  liftBan: Scalars['Boolean']['output'];
  /** Link a provider identity to the caller's account (IDENTITY_IN_USE when it is another account's; needs aal2 while the account has a second factor). */
  linkIdentity: Identity;
  /** Exchange an email and password of a verified account for tokens. After repeated failures for the address (with a CAPTCHA provider), needs X-Captcha-Token. */
  login: AuthPayload;
  /** End the caller's session: its refresh token and access tokens stop working. */
  logout: Scalars['Boolean']['output'];
  /**
   * Mark every item of the caller's that lacks the mark, up to and including
   * upTo when given (what the app has shown, not what arrived since); answers
   * the counts after it.
   */
  markAllInbox: InboxCounts;
  /**
   * Mark one of the caller's items (read and archived also mark it seen; a
   * mark already given keeps its first time). INBOX_ITEM_NOT_FOUND for an
   * unknown or expired id, or another user's item.
   */
  markInboxItem: InboxItem;
  /**
   * A one-time link that connects the caller's account to their Telegram
   * chat: opening it and pressing Start in the bot links the chat (valid 15
   * minutes, once). MESSENGER_NOT_CONNECTED without a working bot.
   */
  messengerLinkUrl: MessengerLink;
  /**
   * Read each of the account's store purchases again from its store now and
   * record what the store says (a missed notification corrected); answers
   * the subscription as userSubscription does. A store not connected, or
   * without its server API, is skipped. USER_NOT_FOUND for an unknown or
   * deleted account.
   */
  reconcileSubscription: UserSubscriptionDetail;
  /** Deliver an event to an endpoint again, with the same webhook-id and a new run of retries: only to an endpoint it was sent to (subscribed to its type and existing when it was written; a ping, its endpoint), else WEBHOOK_EVENT_NOT_SUBSCRIBED. */
  redeliverWebhookEvent: Scalars['Boolean']['output'];
  /** Exchange a refresh token for new tokens; the old refresh token stops working. */
  refreshToken: AuthPayload;
  /** Replace the caller's recovery codes with ten new ones, shown this once (needs aal2). */
  regenerateRecoveryCodes: RecoveryCodes;
  /** Register one of the caller's devices (201 on REST); a push token held by another device moves here. */
  registerDevice: Device;
  /** Deactivate one of the caller's devices. */
  removeDevice: Scalars['Boolean']['output'];
  /** Remove one of the caller's factors (needs aal2 while a factor is active); the last one takes the recovery codes with it. */
  removeMfaFactor: MfaFactorRemoved;
  /** Remove one of the caller's passkeys (needs aal2 while the account has a second factor). */
  removePasskey: PasskeyRemoved;
  /**
   * Remove one passkey of a user (an operator's action: the user's security
   * log records passkey_removed with the operator as the actor).
   * PASSKEY_NOT_FOUND for a passkey the user does not have.
   */
  removeUserPasskey: PasskeyRemoved;
  /** Rename one of the caller's passkeys. */
  renamePasskey: Passkey;
  /** Email a password reset code. Answers true whether or not the account exists. With a CAPTCHA provider, needs X-Captcha-Token. */
  requestPasswordReset: Scalars['Boolean']['output'];
  /** Email a new verification code (cooldown and hourly cap per email). With a CAPTCHA provider, needs X-Captcha-Token. */
  resendVerificationEmail: Scalars['Boolean']['output'];
  /** Set a new password with the emailed code; every session of the account ends. */
  resetPassword: Scalars['Boolean']['output'];
  /** Remove every second factor and recovery code of a user (audited: the security.mfa_reset webhook event). */
  resetUserMfa: MfaReset;
  /** Revoke an API key; it is refused at once, on every replica. Revoking twice changes nothing. */
  revokeApiKey: ApiKey;
  /** End one of the caller's own sessions. */
  revokeSession: Scalars['Boolean']['output'];
  /**
   * End every session of an account; answers how many were live. An account
   * holding admin needs a caller holding admin.
   */
  revokeSessions: Scalars['Int']['output'];
  /** Give an endpoint a new secret, in the answer this once; the previous one goes on signing beside it for 24 hours. */
  rotateWebhookSecret: CreatedWebhookEndpoint;
  /**
   * Queue a Markdown message to every chat subscribed to the bot now, as a
   * durable job paced under Telegram's limits. With audience, only to the
   * subscribed chats linked to accounts in it (an empty audience: every
   * linked chat). A chat answering 403 is marked blocked and counted; the
   * job goes on.
   */
  sendMessengerBroadcast: MessengerBroadcast;
  /** Send a Markdown message through the Telegram bot to a chat (numeric id or @channel). */
  sendMessengerMessage: SendMessengerMessageResult;
  /** Push a notification to one device now. */
  sendNotificationByDeviceId: SendNotificationResult;
  /**
   * Push a notification now to a bare push token, without a device record: an
   * operator's test of a token. INVALID_PUSH_TOKEN when the provider calls it
   * dead (nothing is marked); VALIDATION_ERROR for an unknown platform or a
   * malformed token.
   */
  sendNotificationByToken: SendNotificationResult;
  /**
   * Queue a push notification to every active device with a valid token. With
   * sendAt (at most 30 days ahead) the job is scheduled and starts then, on any
   * replica; cancelNotificationJob cancels it before. category names the
   * notification category (default "service"): a device whose owner turned it
   * off on the device's channel when the job reaches it is skipped and counted
   * in the job's skipped.optedOut. A capped category (product:3/day) counts
   * the broadcast once against each user it reaches; the devices of a user
   * who already had the day's cap are skipped and counted in the job's
   * skipped.capped. inbox: true also keeps it in the inbox of
   * every account the audience reaches (an active device in it) that allows
   * the category on the inbox channel: one item each, written once by the
   * job when it starts. Unless urgent is true or the category is critical
   * (security, billing), a device whose owner is inside their quiet hours
   * when the job reaches it is held (counted in the job's held) and sent by
   * the same job at the end of the owner's window. sendAtLocal ({date:
   * "2026-12-24", time: "09:00"}, not with sendAt) sends it at that time in
   * each recipient's time zone (UTC without one): one job, scheduled at the
   * first zone's time, holding each device until its owner's. channels are
   * push (the default: every device in the audience) and email: one email to
   * each account the audience reaches that has a verified real address,
   * however many devices it has (the notification template in the account's
   * locale, with the unsubscribe link), counted in the job's email.queued;
   * the accounts skipped are counted in its email counters. An email is due
   * when its owner's devices would be (sendAtLocal, then quiet hours unless
   * urgent or critical) and queued to go then; a cancelled broadcast's
   * emails not yet sent are not sent. Another channel is INVALID_INPUT.
   */
  sendNotificationToAll: BroadcastResult;
  /**
   * Push a notification now to every active device of the user with a valid
   * token: one outcome per device. channels defaults to ["push"]; with
   * "telegram" the subject and content also go to the user's linked,
   * subscribed Telegram chat (one more outcome); with "email" a background job
   * emails them to the account's verified address (one more outcome, status
   * "queued", which counts as done; the email carries a one-click unsubscribe
   * link unless the category is security or billing). An account without a
   * verified address gets no email and no outcome for it. USER_NOT_FOUND for an
   * unknown user; a user with no such device, chat or address is status
   * "no_recipients".
   * category names the notification category (default "service"; INVALID_INPUT
   * for one the deployment does not have): a channel the user turned it off on
   * is skipped and counted in skipped.optedOut. Inside the user's quiet hours
   * a send of a category other than security and billing is held (status
   * "held", heldUntil) and delivered when they end, unless urgent. A send of a
   * category with a digest (HERALD_NOTIFICATION_DIGESTS) is folded into the
   * user's digest of it (status "digested", heldUntil), unless urgent. inbox: true
   * also keeps it in the user's in-app inbox when the user allows the category
   * on the inbox channel (one more outcome, channel "inbox", status "sent";
   * turned off: counted in skipped.optedOut); a user with no device then still
   * gets the item, and the send is "sent", not "no_recipients". A category
   * capped in HERALD_NOTIFICATION_CATEGORIES (product:3/day) skips the capped
   * channels (push, web push, Telegram, email) once the user had its cap that
   * day, counted in skipped.capped; critical categories and urgent sends are
   * never capped.
   */
  sendNotificationToUser: SendToUserResult;
  /** Send a webhook.ping event to an endpoint; returns the event's id (its webhook-id). */
  sendWebhookPing: Scalars['ID']['output'];
  /**
   * Set the language of the caller's emails, from the next one on: a BCP 47
   * tag such as en, de or pt-BR, kept canonical (pt_br becomes pt-BR). A
   * language with no templates yet gets English emails until it has some.
   * VALIDATION_ERROR naming locale for a malformed or empty tag.
   */
  setLocale: User;
  /**
   * Set an account's plan and expiry (the billing hook). The same call twice
   * is one change. Device limits follow at once: devices over a lowered limit
   * stay, but no new one is admitted.
   */
  setSubscription: UserRecord;
  /**
   * Set the language of an account's emails, as setLocale does for the
   * caller. VALIDATION_ERROR naming locale for a malformed tag.
   */
  setUserLocale: UserRecord;
  /** Enable or disable an endpoint. A disabled endpoint gets no deliveries; enabling it forgets its failures. */
  setWebhookEndpointEnabled: WebhookEndpoint;
  /**
   * Sign in as the guest of an app install (installId: 8 to 128 letters,
   * digits, '-', '_' or '.', the same for every call of one install): a new
   * account with the trial and no email (accountCreated), or the install's
   * guest again. Needs X-Captcha-Token when a CAPTCHA is configured.
   */
  signInAsGuest: SignIn;
  /**
   * Sign in with a provider's id_token: to the account holding the identity;
   * to the account of the same email when both the provider and the account
   * verified it (the identity is linked); else to a new account, verified
   * (accountCreated). IDENTITY_EMAIL_UNVERIFIED when the email's account or
   * the provider has not verified the address; IDENTITY_TOKEN_INVALID
   * (extensions.reason) for a token that does not verify; MFA_REQUIRED for an
   * account with a second factor. authorizationCode (Apple) is exchanged once
   * for the token Apple requires revoked when the account is deleted.
   */
  signInWithProvider: SignIn;
  /**
   * Create an unverified account with a trial subscription and email a 6-digit verification code.
   * locale (a BCP 47 tag such as en, de or pt-BR) is the language of the account's emails;
   * when absent, the request's Accept-Language decides; English when no language is shipped for it.
   * With a CAPTCHA provider configured, needs the X-Captcha-Token header (CAPTCHA_REQUIRED, CAPTCHA_FAILED).
   */
  signup: SignupResult;
  /**
   * A Stripe Checkout URL where the caller buys productId (a Stripe price id
   * mapped to a plan). BILLING_NOT_CONFIGURED when Stripe is not connected;
   * PRODUCT_UNKNOWN for a price mapped to no plan.
   */
  stripeCheckout: Scalars['String']['output'];
  /**
   * The URL of Stripe's customer portal, where the caller manages what they
   * bought on the web. BILLING_NOT_CONFIGURED when Stripe is not connected;
   * SUBSCRIPTION_NOT_FOUND when they bought nothing there.
   */
  stripePortal: Scalars['String']['output'];
  /** Unlink one of the caller's identities: LAST_SIGN_IN_METHOD when nothing else signs in to the account. */
  unlinkIdentity: IdentityRemoved;
  /** Unlink the caller's Telegram chat (it stays subscribed); false when none was linked. */
  unlinkMessenger: Scalars['Boolean']['output'];
  /**
   * Turn categories on or off per channel for the caller, set the time zone
   * (an IANA name; "" for UTC) or the quiet hours; answers the preferences
   * after the change.
   */
  updateMyNotificationPreferences: NotificationPreferences;
  /** Give a device a new push token; the token becomes valid again. */
  updatePushToken: Device;
  /** The same for a user (USER_NOT_FOUND for an unknown user). */
  updateUserNotificationPreferences: NotificationPreferences;
  /**
   * Upgrade the caller's guest account with an email and password: it keeps
   * its devices, subscription and history, and the address is verified by
   * the usual emailed code. NOT_A_GUEST for an account that is not one.
   */
  upgradeGuest: User;
  /** Confirm the emailed code; the account becomes verified. */
  verifyEmail: Scalars['Boolean']['output'];
  /** Step the caller's session up to aal2 with a TOTP or recovery code: new tokens for the same session. */
  verifyMfa: AuthPayload;
  /**
   * Step the caller's session up to aal2 with the assertion of a ceremony
   * beginPasskeyStepUp began: new tokens for the same session (webauthn added
   * to its amr). A wrong assertion counts in the lockout.
   */
  verifyMfaWithPasskey: AuthPayload;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationAppleTransactionArgs = {
  signedTransaction: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationArchiveUserInboxArgs = {
  upTo?: InputMaybe<Scalars['ID']['input']>;
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationArchiveUserInboxItemArgs = {
  id: Scalars['ID']['input'];
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationBanAddressArgs = {
  ip: Scalars['String']['input'];
  reason?: InputMaybe<Scalars['String']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationBeginPasskeyMfaArgs = {
  challengeToken: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationCancelEmailChangeArgs = {
  token: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationCancelMessengerBroadcastArgs = {
  id: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationCancelNotificationJobArgs = {
  id: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationChangeEmailArgs = {
  email: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationChangePasswordArgs = {
  currentPassword: Scalars['String']['input'];
  newPassword: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationCompleteMfaLoginArgs = {
  challengeToken: Scalars['String']['input'];
  code: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationCompleteMfaLoginWithPasskeyArgs = {
  challengeId: Scalars['ID']['input'];
  challengeToken: Scalars['String']['input'];
  credential: Scalars['JSON']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationConfirmEmailChangeArgs = {
  code: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationConfirmTotpArgs = {
  code: Scalars['String']['input'];
  factorId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationCreateApiKeyArgs = {
  input: CreateApiKeyInput;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationCreateWebhookEndpointArgs = {
  input: CreateWebhookEndpointInput;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationDeleteAccountArgs = {
  password?: InputMaybe<Scalars['String']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationDeleteUserArgs = {
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationDeleteWebhookEndpointArgs = {
  id: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationDisableUserArgs = {
  reason?: InputMaybe<Scalars['String']['input']>;
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationEnableUserArgs = {
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationEnrollTotpArgs = {
  name?: InputMaybe<Scalars['String']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationFinishPasskeyLoginArgs = {
  challengeId: Scalars['ID']['input'];
  credential: Scalars['JSON']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationFinishPasskeyRegistrationArgs = {
  challengeId?: InputMaybe<Scalars['ID']['input']>;
  credential: Scalars['JSON']['input'];
  name?: InputMaybe<Scalars['String']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationGooglePurchaseArgs = {
  productId: Scalars['String']['input'];
  purchaseToken: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationLiftBanArgs = {
  ip: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationLinkIdentityArgs = {
  authorizationCode?: InputMaybe<Scalars['String']['input']>;
  idToken: Scalars['String']['input'];
  nonce: Scalars['String']['input'];
  provider: IdentityProvider;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationLoginArgs = {
  email: Scalars['String']['input'];
  password: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationMarkAllInboxArgs = {
  mark: InboxMark;
  upTo?: InputMaybe<Scalars['ID']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationMarkInboxItemArgs = {
  id: Scalars['ID']['input'];
  mark: InboxMark;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationReconcileSubscriptionArgs = {
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRedeliverWebhookEventArgs = {
  endpointId: Scalars['ID']['input'];
  eventId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRefreshTokenArgs = {
  refreshToken: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRegisterDeviceArgs = {
  input: RegisterDeviceInput;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRemoveDeviceArgs = {
  deviceId: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRemoveMfaFactorArgs = {
  factorId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRemovePasskeyArgs = {
  passkeyId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRemoveUserPasskeyArgs = {
  passkeyId: Scalars['ID']['input'];
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRenamePasskeyArgs = {
  name: Scalars['String']['input'];
  passkeyId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRequestPasswordResetArgs = {
  email: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationResendVerificationEmailArgs = {
  email: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationResetPasswordArgs = {
  code: Scalars['String']['input'];
  email: Scalars['String']['input'];
  newPassword: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationResetUserMfaArgs = {
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRevokeApiKeyArgs = {
  id: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRevokeSessionArgs = {
  id: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRevokeSessionsArgs = {
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationRotateWebhookSecretArgs = {
  id: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSendMessengerBroadcastArgs = {
  audience?: InputMaybe<AudienceInput>;
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  message: Scalars['String']['input'];
  options?: InputMaybe<MessengerMessageOptions>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSendMessengerMessageArgs = {
  chatId: Scalars['String']['input'];
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  message: Scalars['String']['input'];
  options?: InputMaybe<MessengerMessageOptions>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSendNotificationByDeviceIdArgs = {
  deviceId: Scalars['String']['input'];
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  notification: NotificationInput;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSendNotificationByTokenArgs = {
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  notification: NotificationInput;
  platform: Scalars['String']['input'];
  pushToken: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSendNotificationToAllArgs = {
  audience?: InputMaybe<AudienceInput>;
  category?: InputMaybe<Scalars['String']['input']>;
  channels?: InputMaybe<Array<Scalars['String']['input']>>;
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  inbox?: InputMaybe<Scalars['Boolean']['input']>;
  notification: NotificationInput;
  sendAt?: InputMaybe<Scalars['Time']['input']>;
  sendAtLocal?: InputMaybe<LocalTimeInput>;
  urgent?: InputMaybe<Scalars['Boolean']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSendNotificationToUserArgs = {
  category?: InputMaybe<Scalars['String']['input']>;
  channels?: InputMaybe<Array<Scalars['String']['input']>>;
  idempotencyKey?: InputMaybe<Scalars['String']['input']>;
  inbox?: InputMaybe<Scalars['Boolean']['input']>;
  notification: NotificationInput;
  urgent?: InputMaybe<Scalars['Boolean']['input']>;
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSendWebhookPingArgs = {
  endpointId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSetLocaleArgs = {
  locale: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSetSubscriptionArgs = {
  expiresAt: Scalars['Time']['input'];
  plan: Scalars['String']['input'];
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSetUserLocaleArgs = {
  locale: Scalars['String']['input'];
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSetWebhookEndpointEnabledArgs = {
  enabled: Scalars['Boolean']['input'];
  id: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSignInAsGuestArgs = {
  installId: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSignInWithProviderArgs = {
  authorizationCode?: InputMaybe<Scalars['String']['input']>;
  idToken: Scalars['String']['input'];
  nonce: Scalars['String']['input'];
  provider: IdentityProvider;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationSignupArgs = {
  email: Scalars['String']['input'];
  locale?: InputMaybe<Scalars['String']['input']>;
  password: Scalars['String']['input'];
  referral?: InputMaybe<Scalars['String']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationStripeCheckoutArgs = {
  productId: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationUnlinkIdentityArgs = {
  identityId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationUpdateMyNotificationPreferencesArgs = {
  quietHours?: InputMaybe<QuietHoursInput>;
  settings?: InputMaybe<Array<NotificationSettingInput>>;
  timeZone?: InputMaybe<Scalars['String']['input']>;
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationUpdatePushTokenArgs = {
  deviceId: Scalars['String']['input'];
  pushToken: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationUpdateUserNotificationPreferencesArgs = {
  quietHours?: InputMaybe<QuietHoursInput>;
  settings?: InputMaybe<Array<NotificationSettingInput>>;
  timeZone?: InputMaybe<Scalars['String']['input']>;
  userId: Scalars['ID']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationUpgradeGuestArgs = {
  email: Scalars['String']['input'];
  password: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationVerifyEmailArgs = {
  code: Scalars['String']['input'];
  email: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationVerifyMfaArgs = {
  code: Scalars['String']['input'];
};


/**
 * Every send and broadcast (sendNotificationByDeviceId, sendNotificationToUser,
 * sendNotificationToAll, sendMessengerMessage) takes an optional
 * idempotencyKey (1 to 255 printable ASCII characters): the same key with the
 * same arguments from the same caller within 24 hours answers the first
 * answer again and sends nothing; with other arguments it is
 * IDEMPOTENCY_KEY_REUSED (409).
 */
export type MutationVerifyMfaWithPasskeyArgs = {
  challengeId: Scalars['ID']['input'];
  credential: Scalars['JSON']['input'];
};

/** A category of the deployment's catalogue. */
export type NotificationCategory = {
  __typename?: 'NotificationCategory';
  /** The most sends of the category a user gets a day (its cap); null when uncapped. Critical categories and urgent sends are never capped. */
  capPerDay?: Maybe<Scalars['Int']['output']>;
  /** security and billing: they cannot be turned off and pass through quiet hours. */
  critical: Scalars['Boolean']['output'];
  name: Scalars['String']['output'];
};

export type NotificationInput = {
  /** Notification body. */
  content: Scalars['String']['input'];
  /** Additional payload for the app (FCM receives non-string values as JSON text). */
  data?: InputMaybe<Scalars['JSON']['input']>;
  /** How the providers deliver it (see docs/notifications.md's table). */
  options?: InputMaybe<PushOptionsInput>;
  /** Notification title. */
  subject: Scalars['String']['input'];
};

export type NotificationJob = {
  __typename?: 'NotificationJob';
  /** The notification category it is sent in. */
  category: Scalars['String']['output'];
  /** Its channels: push, email, or both (sendNotificationToAll's channels). */
  channels: Array<Scalars['String']['output']>;
  createdAt: Scalars['Time']['output'];
  /** Its email part (zeros without the email channel); skipped counts devices only. */
  email: BroadcastEmailCounts;
  /** Why a failed job failed. */
  error?: Maybe<Scalars['String']['output']>;
  failed: Scalars['Int']['output'];
  finishedAt?: Maybe<Scalars['Time']['output']>;
  /** Devices waiting now for the end of their owner's quiet hours (0 once the job completes); each is counted again where its outcome lands. */
  held: Scalars['Int']['output'];
  id: Scalars['ID']['output'];
  /** Whether it keeps inbox items (sendNotificationToAll's inbox). */
  inbox: Scalars['Boolean']['output'];
  /** The inbox items it wrote, one per account (0 until it starts). */
  inboxItems: Scalars['Int']['output'];
  invalidTokens: Scalars['Int']['output'];
  /** When a scheduled job starts. */
  sendAt?: Maybe<Scalars['Time']['output']>;
  /** The wall-clock time it is due at in each recipient's time zone (sendNotificationToAll's sendAtLocal). */
  sendAtLocal?: Maybe<LocalTime>;
  sent: Scalars['Int']['output'];
  /** Recipients not sent to, per reason. */
  skipped: SkipCounts;
  startedAt?: Maybe<Scalars['Time']['output']>;
  /** queued, scheduled (until sendAt), running, completed, failed or cancelled. */
  status: Scalars['String']['output'];
  subject: Scalars['String']['output'];
  totalRecipients: Scalars['Int']['output'];
  /** Whether it passes through quiet hours (sendNotificationToAll's urgent). */
  urgent: Scalars['Boolean']['output'];
};

export type NotificationJobConnection = {
  __typename?: 'NotificationJobConnection';
  nodes: Array<NotificationJob>;
  pageInfo: PageInfo;
};

export type NotificationPreferences = {
  __typename?: 'NotificationPreferences';
  /** Every category of the deployment, in catalogue order. */
  categories: Array<CategoryPreferences>;
  /** The user's quiet hours; null for none. */
  quietHours?: Maybe<QuietHours>;
  /** The user's IANA time zone; null for none (UTC). */
  timeZone?: Maybe<Scalars['String']['output']>;
};

/** One change: a category's channel (push, telegram, email, webPush or inbox) on or off. */
export type NotificationSettingInput = {
  category: Scalars['String']['input'];
  channel: Scalars['String']['input'];
  enabled: Scalars['Boolean']['input'];
};

/** Cursor pagination: pass endCursor as after for the next page. */
export type PageInfo = {
  __typename?: 'PageInfo';
  endCursor?: Maybe<Scalars['String']['output']>;
  hasNextPage: Scalars['Boolean']['output'];
};

/** One passkey of an account. */
export type Passkey = {
  __typename?: 'Passkey';
  /** The authenticator model's AAGUID (all zeros when it does not say). */
  aaguid: Scalars['String']['output'];
  /** The attestation statement format it registered with (none, packed…). */
  attestationFormat: Scalars['String']['output'];
  /** Whether it is synced. */
  backedUp: Scalars['Boolean']['output'];
  /** Whether it may be synced (iCloud Keychain, Google Password Manager). */
  backupEligible: Scalars['Boolean']['output'];
  /** Sign-ins refused because its signature counter went backwards. */
  counterRegressions: Scalars['Int']['output'];
  createdAt: Scalars['Time']['output'];
  id: Scalars['ID']['output'];
  lastUsedAt?: Maybe<Scalars['Time']['output']>;
  name: Scalars['String']['output'];
  transports: Array<Scalars['String']['output']>;
};

/** A passkey ceremony begun. */
export type PasskeyOptions = {
  __typename?: 'PasskeyOptions';
  /** Names the ceremony when finishing it. */
  challengeId: Scalars['ID']['output'];
  expiresAt: Scalars['Time']['output'];
  /** The options for navigator.credentials.create or .get (PublicKeyCredentialCreationOptions or PublicKeyCredentialRequestOptions, binary members in base64url). */
  publicKey: Scalars['JSON']['output'];
};

/** A removed passkey. */
export type PasskeyRemoved = {
  __typename?: 'PasskeyRemoved';
  passkeyId: Scalars['ID']['output'];
  removed: Scalars['Boolean']['output'];
};

/** A password change (changePassword). */
export type PasswordChange = {
  __typename?: 'PasswordChange';
  /** How many of the account's other sessions ended. */
  sessionsEnded: Scalars['Int']['output'];
};

export type PlatformCount = {
  __typename?: 'PlatformCount';
  count: Scalars['Int']['output'];
  platform: Scalars['String']['output'];
};

/** Delivery options, mapped to FCM and APNs as docs/notifications.md's table says. */
export type PushOptionsInput = {
  /** The app icon's badge (iOS), the notification count (Android); 0 to 99999. */
  badge?: InputMaybe<Scalars['Int']['input']>;
  /** The Android notification channel. */
  channelId?: InputMaybe<Scalars['String']['input']>;
  /** A silent data push: nothing is shown, the app is woken with the data. */
  contentAvailable?: InputMaybe<Scalars['Boolean']['input']>;
  /** An https image shown with the notification. */
  imageUrl?: InputMaybe<Scalars['String']['input']>;
  /** high or normal; default: the provider's (high for an alert). */
  priority?: InputMaybe<Scalars['String']['input']>;
  /** A sound name, default for the system sound. */
  sound?: InputMaybe<Scalars['String']['input']>;
  /** Groups notifications on iOS. */
  threadId?: InputMaybe<Scalars['String']['input']>;
  /** Seconds a provider keeps an undelivered push, 0 (now or never) to 2419200 (28 days). */
  ttl?: InputMaybe<Scalars['Int']['input']>;
};

export type Query = {
  __typename?: 'Query';
  /** The service at a glance, for the operator console. */
  adminOverview: AdminOverview;
  /** Every API key, revoked ones too, newest first. Secrets are never shown again. */
  apiKeys: Array<ApiKey>;
  /**
   * What a sign-in page may offer besides the email and password on this
   * server (passkeys on or off). Public.
   */
  authMethods: AuthMethods;
  /** Banned client addresses, newest first (first: default 50, at most 500). */
  bans: BanConnection;
  /**
   * Devices, with cursor pagination. A user sees their own active devices
   * (userId must be empty or their own id); an admin sees any user's devices
   * (every device without userId), active or not.
   */
  devices: DeviceConnection;
  /** The caller's referral code, to share with friends. */
  getReferralCode: Scalars['String']['output'];
  /** The caller's account. */
  me: User;
  /** The Telegram bot's connection; the not-connected shape when there is no working bot. */
  messengerBotStatus: MessengerBotStatus;
  /** A messenger broadcast job. JOB_NOT_FOUND when unknown. */
  messengerBroadcast: MessengerBroadcast;
  /**
   * A message as the bot would send it: its Markdown converted to the HTML
   * sent with parse_mode HTML, and the length Telegram counts against its
   * limits. INVALID_MESSAGE for what a send refuses before formatting (empty,
   * over 4096 characters); a length over a limit is answered.
   */
  messengerPreview: MessengerPreview;
  /**
   * Chats that started the bot, newest subscription first: every status, or
   * only status (subscribed, unsubscribed or blocked; anything else is
   * VALIDATION_ERROR). first: default 50, at most 100.
   */
  messengerSubscribers: MessengerSubscriberConnection;
  /** The caller's provider identities, oldest first. */
  myIdentities: Array<Identity>;
  /**
   * The caller's inbox, newest first (first: default 20, at most 100; after: a
   * page's endCursor): the items not archived, or with archived: true the
   * archive; with unreadOnly: true only the items not read. Expired items are
   * not listed.
   */
  myInbox: InboxItemConnection;
  /** The caller's inbox counts (items not archived, not expired), for a badge. */
  myInboxCounts: InboxCounts;
  /** The caller's second factors and how many recovery codes are left. */
  myMfa: MfaStatus;
  /** The caller's notification preferences: every category with every channel. */
  myNotificationPreferences: NotificationPreferences;
  /** The caller's passkeys, oldest first. */
  myPasskeys: Array<Passkey>;
  /** The caller's security log, newest first (first: default 20, at most 100; after: a page's endCursor). */
  mySecurityLog: SecurityEventConnection;
  /** The caller's live sessions (neither ended nor expired), newest first. */
  mySessions: Array<Session>;
  /**
   * The caller's subscription and the entitlements it comes from (REST GET
   * /api/v1/subscription). SUBSCRIPTION_NOT_FOUND when the account has none.
   */
  mySubscription: SubscriptionDetail;
  /** The categories a send may name, in catalogue order: the built-in ones, then the operator's (HERALD_NOTIFICATION_CATEGORIES). */
  notificationCategories: Array<NotificationCategory>;
  /** A broadcast job. */
  notificationJob: NotificationJob;
  /** Broadcast jobs, newest first. */
  notificationJobs: NotificationJobConnection;
  /**
   * The operators' log, newest first: the entries of no account, an API key
   * created or revoked at the herald command line (actor cli). Keys created
   * or revoked by an admin user are in that user's log (actor user).
   */
  operatorSecurityLog: SecurityEventConnection;
  /** One account, by id or by email: exactly one of the two. */
  user: UserRecord;
  /** A user's provider identities, oldest first (USER_NOT_FOUND for an unknown user). */
  userIdentities: Array<Identity>;
  /**
   * A user's inbox, newest first, as myInbox lists it (first, after, archived,
   * unreadOnly the same). USER_NOT_FOUND for an unknown user.
   */
  userInbox: InboxItemConnection;
  /** A user's inbox counts (USER_NOT_FOUND for an unknown user). */
  userInboxCounts: InboxCounts;
  /** A user's second factors (the console's user page). USER_NOT_FOUND for an unknown user. */
  userMfa: MfaStatus;
  /** A user's notification preferences (USER_NOT_FOUND for an unknown user). */
  userNotificationPreferences: NotificationPreferences;
  /** A user's passkeys, oldest first (the console's user page). USER_NOT_FOUND for an unknown user. */
  userPasskeys: Array<Passkey>;
  /** A user's security log, newest first (USER_NOT_FOUND for an unknown user). */
  userSecurityLog: SecurityEventConnection;
  /**
   * An account's subscription, its entitlements and their history, newest
   * change first (at most 100). USER_NOT_FOUND for an unknown or deleted
   * account; SUBSCRIPTION_NOT_FOUND when it has no entitlement.
   */
  userSubscription: UserSubscriptionDetail;
  /**
   * Accounts, newest first, with cursor pagination (first: default 50, at most
   * 500). query matches the beginning of the email (never a guest's
   * placeholder), or the whole id; status is the subscription's (active or
   * expired); guest true lists the guest accounts (not upgraded yet), false
   * the others; deleted accounts are never listed.
   */
  users: UserRecordConnection;
  /**
   * The Web Push application server key (VAPID, RFC 8292): base64url of the
   * uncompressed P-256 public key, the applicationServerKey a page passes to
   * pushManager.subscribe before registering the subscription as a web
   * device. Public. null when Web Push is not configured on this server
   * (HERALD_VAPID_PRIVATE_KEY_FILE unset).
   */
  vapidPublicKey?: Maybe<Scalars['String']['output']>;
  /** The server's version. */
  version: Scalars['String']['output'];
  /** Delivery attempts to an endpoint, newest first: status, duration, error. first: 1 to 100, default 20. */
  webhookDeliveries: WebhookDeliveryConnection;
  /** One webhook endpoint; WEBHOOK_NOT_FOUND when there is none. */
  webhookEndpoint: WebhookEndpoint;
  /** Every webhook endpoint, oldest first. Secrets are never shown again. */
  webhookEndpoints: Array<WebhookEndpoint>;
  /** The event types an endpoint can subscribe to. */
  webhookEventTypes: Array<Scalars['String']['output']>;
};


export type QueryBansArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryDevicesArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  userId?: InputMaybe<Scalars['ID']['input']>;
};


export type QueryMessengerBroadcastArgs = {
  id: Scalars['ID']['input'];
};


export type QueryMessengerPreviewArgs = {
  message: Scalars['String']['input'];
};


export type QueryMessengerSubscribersArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  status?: InputMaybe<Scalars['String']['input']>;
};


export type QueryMyInboxArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  archived?: InputMaybe<Scalars['Boolean']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  unreadOnly?: InputMaybe<Scalars['Boolean']['input']>;
};


export type QueryMySecurityLogArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryNotificationJobArgs = {
  id: Scalars['ID']['input'];
};


export type QueryNotificationJobsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryOperatorSecurityLogArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryUserArgs = {
  email?: InputMaybe<Scalars['String']['input']>;
  id?: InputMaybe<Scalars['ID']['input']>;
};


export type QueryUserIdentitiesArgs = {
  userId: Scalars['ID']['input'];
};


export type QueryUserInboxArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  archived?: InputMaybe<Scalars['Boolean']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  unreadOnly?: InputMaybe<Scalars['Boolean']['input']>;
  userId: Scalars['ID']['input'];
};


export type QueryUserInboxCountsArgs = {
  userId: Scalars['ID']['input'];
};


export type QueryUserMfaArgs = {
  userId: Scalars['ID']['input'];
};


export type QueryUserNotificationPreferencesArgs = {
  userId: Scalars['ID']['input'];
};


export type QueryUserPasskeysArgs = {
  userId: Scalars['ID']['input'];
};


export type QueryUserSecurityLogArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  userId: Scalars['ID']['input'];
};


export type QueryUserSubscriptionArgs = {
  id: Scalars['ID']['input'];
};


export type QueryUsersArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  disabled?: InputMaybe<Scalars['Boolean']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  guest?: InputMaybe<Scalars['Boolean']['input']>;
  plan?: InputMaybe<Scalars['String']['input']>;
  query?: InputMaybe<Scalars['String']['input']>;
  status?: InputMaybe<Scalars['String']['input']>;
  verified?: InputMaybe<Scalars['Boolean']['input']>;
};


export type QueryWebhookDeliveriesArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  endpointId: Scalars['ID']['input'];
  first?: InputMaybe<Scalars['Int']['input']>;
};


export type QueryWebhookEndpointArgs = {
  id: Scalars['ID']['input'];
};

/** A daily window in the user's time zone inside which non-critical sends are held until it ends. */
export type QuietHours = {
  __typename?: 'QuietHours';
  end: Scalars['String']['output'];
  start: Scalars['String']['output'];
};

/**
 * Quiet hours: enabled false turns them off; true sets them to start–end
 * (HH:MM each, in the user's time zone; start after end wraps midnight).
 */
export type QuietHoursInput = {
  enabled: Scalars['Boolean']['input'];
  end?: InputMaybe<Scalars['String']['input']>;
  start?: InputMaybe<Scalars['String']['input']>;
};

/** How the replica's rate limiter counts. */
export type RateLimiterState = {
  __typename?: 'RateLimiterState';
  /** redis (counters shared by every replica) or memory (this replica's own). */
  backend: Scalars['String']['output'];
  /** Redis is configured but unreachable: this replica counts in memory meanwhile. */
  degraded: Scalars['Boolean']['output'];
  /** Why it is degraded; null when it is not. */
  reason?: Maybe<Scalars['String']['output']>;
};

/** New recovery codes, shown this once. */
export type RecoveryCodes = {
  __typename?: 'RecoveryCodes';
  recoveryCodes: Array<Scalars['String']['output']>;
};

export type RegisterDeviceInput = {
  name?: InputMaybe<Scalars['String']['input']>;
  /** android, ios, web or huawei. */
  platform: Scalars['String']['input'];
  /**
   * The FCM, APNs or Huawei Push Kit token; for web, the browser's
   * PushSubscription as JSON ({"endpoint":"https://…","keys":{"p256dh":"…",
   * "auth":"…"}}), checked (VALIDATION_ERROR naming pushToken) and stored in
   * a canonical form.
   */
  pushToken: Scalars['String']['input'];
};

/** One entry of an account's security log. */
export type SecurityEvent = {
  __typename?: 'SecurityEvent';
  /** user (the account's owner), system, admin:<id> (an operator's account id or API key id), or cli (the herald command line, in the operators' log). */
  actor: Scalars['String']['output'];
  at: Scalars['Time']['output'];
  /** A small map of strings: method, sessionId, reason, action… */
  detail: Scalars['JSON']['output'];
  id: Scalars['ID']['output'];
  /** The client address ('' when unknown). */
  ip: Scalars['String']['output'];
  /** login_ok, login_failed, logout, mfa_enrolled… (docs/security.md lists them); the webhook event security.<kind>. */
  kind: Scalars['String']['output'];
  /** ok, failed or refused. */
  outcome: Scalars['String']['output'];
  userAgent: Scalars['String']['output'];
};

export type SecurityEventConnection = {
  __typename?: 'SecurityEventConnection';
  nodes: Array<SecurityEvent>;
  pageInfo: PageInfo;
};

export type SendMessengerMessageResult = {
  __typename?: 'SendMessengerMessageResult';
  /** Telegram's message id. */
  messageId: Scalars['String']['output'];
  success: Scalars['Boolean']['output'];
};

export type SendNotificationResult = {
  __typename?: 'SendNotificationResult';
  message: Scalars['String']['output'];
  /** sent */
  status: Scalars['String']['output'];
};

export type SendToUserResult = {
  __typename?: 'SendToUserResult';
  /** When a send held by the user's quiet hours goes out (status held), or the digest it joined (status digested). */
  heldUntil?: Maybe<Scalars['Time']['output']>;
  message: Scalars['String']['output'];
  outcomes: Array<DeviceSendOutcome>;
  /** The devices and the chat not sent to, per reason. */
  skipped: SkipCounts;
  /** sent (every recipient; a queued email counts), partial, failed (none), no_recipients (no device with a valid token, no linked chat, no verified address, or the category turned off on every channel asked) , held (the user's quiet hours: heldUntil) or digested (folded into the user's digest of the category, HERALD_NOTIFICATION_DIGESTS, sent at heldUntil). */
  status: Scalars['String']['output'];
  userId: Scalars['ID']['output'];
};

/** One login of the caller, as the server saw its client. */
export type Session = {
  __typename?: 'Session';
  createdAt: Scalars['Time']['output'];
  /** This is the session of the request's own token. */
  current: Scalars['Boolean']['output'];
  id: Scalars['ID']['output'];
  /** The client's address as the server saw it (after trusted proxies). */
  ip: Scalars['String']['output'];
  /** The login, then each refresh. */
  lastUsedAt: Scalars['Time']['output'];
  /** As sent at the last login or refresh; empty when none was. */
  userAgent: Scalars['String']['output'];
};

/** A sign-in that may create the account: with a provider's id_token, or as a guest. */
export type SignIn = {
  __typename?: 'SignIn';
  /** Whether this sign-in created the account. */
  accountCreated: Scalars['Boolean']['output'];
  session: AuthPayload;
};

export type SignupResult = {
  __typename?: 'SignupResult';
  message: Scalars['String']['output'];
  success: Scalars['Boolean']['output'];
};

/** Recipients of a send or a broadcast not sent to, per reason. */
export type SkipCounts = {
  __typename?: 'SkipCounts';
  /**
   * The user already had the category's cap of sends that day (a category
   * capped in HERALD_NOTIFICATION_CATEGORIES, e.g. product:3/day): every
   * capped channel of the send (push, web push, Telegram, email; not the
   * inbox) was skipped. A broadcast counts each device of such a user when
   * its walk reaches it; the broadcast itself counts once against each
   * user it reaches.
   */
  capped: Scalars['Int']['output'];
  /** The user turned the send's category off on that channel. */
  optedOut: Scalars['Int']['output'];
};

/**
 * Subscriptions are served over WebSocket at /graphql with the
 * graphql-transport-ws protocol (the graphql-ws library's); credentials go in
 * connection_init's payload. See docs/notifications.md, "Live progress".
 */
export type Subscription = {
  __typename?: 'Subscription';
  /**
   * The caller's own inbox: the counts at subscription, then an event for
   * every item kept (with the item) and every change of the counts, from
   * whichever replica made it. The inbox followed is the credential's
   * account's; there is no argument to name another.
   */
  inboxChanged: InboxEvent;
  /**
   * A messenger broadcast's status and counters: the job as it is at
   * subscription, then each change (at most two a second) from whichever
   * replica works it, and the final state at once; the subscription completes
   * after it. JOB_NOT_FOUND for an unknown id.
   */
  messengerBroadcastUpdated: MessengerBroadcast;
  /** The bot's subscriber changes (/start, /stop, blocked, unblocked), from any replica, as they are recorded. */
  messengerEvents: MessengerEvent;
  /**
   * A broadcast job's status and counters: the job as it is at subscription,
   * then each change (at most two a second) from whichever replica works it,
   * and the final state at once; the subscription completes after it.
   * JOB_NOT_FOUND for an unknown id.
   */
  notificationJobUpdated: NotificationJob;
};


/**
 * Subscriptions are served over WebSocket at /graphql with the
 * graphql-transport-ws protocol (the graphql-ws library's); credentials go in
 * connection_init's payload. See docs/notifications.md, "Live progress".
 */
export type SubscriptionMessengerBroadcastUpdatedArgs = {
  id: Scalars['ID']['input'];
};


/**
 * Subscriptions are served over WebSocket at /graphql with the
 * graphql-transport-ws protocol (the graphql-ws library's); credentials go in
 * connection_init's payload. See docs/notifications.md, "Live progress".
 */
export type SubscriptionNotificationJobUpdatedArgs = {
  id: Scalars['ID']['input'];
};

/** The caller's subscription (as User.subscription) and the entitlements it comes from. */
export type SubscriptionDetail = {
  __typename?: 'SubscriptionDetail';
  /** The plan renews by itself at expiresAt (false once it has expired). */
  autoRenew: Scalars['Boolean']['output'];
  entitlements: Array<Entitlement>;
  expiresAt: Scalars['Time']['output'];
  /** Set while a store retries a failed payment and the account keeps access: access ends then unless the payment recovers. Null otherwise. */
  graceEndsAt?: Maybe<Scalars['Time']['output']>;
  /** trial, basic or premium. */
  plan: Scalars['String']['output'];
  /** Where the plan comes from: app_store, google_play, stripe, admin, trial or referral; empty when the account has no entitlement. */
  source: Scalars['String']['output'];
  /** active until expiresAt, expired from then on. */
  status: Scalars['String']['output'];
};

/** A TOTP factor waiting for its first code. */
export type TotpEnrollment = {
  __typename?: 'TotpEnrollment';
  factor: MfaFactor;
  /** The URI as a QR code: a PNG data URL. */
  qrCode: Scalars['String']['output'];
  /** The secret in base32, for typing in. */
  secret: Scalars['String']['output'];
  /** The otpauth:// URI authenticator apps read. */
  uri: Scalars['String']['output'];
};

export type User = {
  __typename?: 'User';
  createdAt: Scalars['Time']['output'];
  /** Null while the account has no address of its own: a guest, or a guest upgraded with a passkey until it adds one (changeEmail). */
  email?: Maybe<Scalars['String']['output']>;
  emailVerified: Scalars['Boolean']['output'];
  /** A guest account (signInAsGuest): no email (null) and no password until it upgrades (upgradeGuest, a passkey, or Apple or Google). */
  guest: Scalars['Boolean']['output'];
  id: Scalars['ID']['output'];
  /** The language of the account's emails, a BCP 47 tag such as de or pt-BR (setLocale); null when none was given: English. */
  locale?: Maybe<Scalars['String']['output']>;
  /** A login found the password in a breach corpus (HERALD_PWNED_PASSWORDS_URL): ask for a new one. A password change or reset clears it. */
  passwordChangeRequired: Scalars['Boolean']['output'];
  referralCode: Scalars['String']['output'];
  subscription: UserSubscription;
};

/** An account as the admin API shows it: what me shows, and more. */
export type UserRecord = {
  __typename?: 'UserRecord';
  createdAt: Scalars['Time']['output'];
  /** Active devices. */
  deviceCount: Scalars['Int']['output'];
  disabled: Scalars['Boolean']['output'];
  disabledAt?: Maybe<Scalars['Time']['output']>;
  /** The reason given when it was disabled; null when none. */
  disabledReason?: Maybe<Scalars['String']['output']>;
  /** Null while the account has no address of its own (a guest, or a guest upgraded with a passkey). */
  email?: Maybe<Scalars['String']['output']>;
  emailVerified: Scalars['Boolean']['output'];
  /** When the account confirmed its email; null until then. */
  emailVerifiedAt?: Maybe<Scalars['Time']['output']>;
  /** A guest account, not yet upgraded. */
  guest: Scalars['Boolean']['output'];
  id: Scalars['ID']['output'];
  lastLoginAt?: Maybe<Scalars['Time']['output']>;
  /** The language of the account's emails (setUserLocale); null when none was given: English. */
  locale?: Maybe<Scalars['String']['output']>;
  /** The Telegram chat linked to the account (messengerLinkUrl), whatever its status; null when none. Read for a whole page at once, as sessions. */
  messengerChat?: Maybe<MessengerSubscriber>;
  /** A login found the password in a breach corpus: the user is asked for a new one. */
  passwordChangeRequired: Scalars['Boolean']['output'];
  referralCode: Scalars['String']['output'];
  /** Sessions neither ended nor expired. */
  sessionCount: Scalars['Int']['output'];
  /** The live sessions (current is always false here), newest first. Read for a whole users page at once: one query per page, not per account. */
  sessions: Array<Session>;
  subscription: UserSubscription;
};

export type UserRecordConnection = {
  __typename?: 'UserRecordConnection';
  nodes: Array<UserRecord>;
  pageInfo: PageInfo;
};

/** An account's plan: the best of its live entitlements (most devices, then the longest). */
export type UserSubscription = {
  __typename?: 'UserSubscription';
  /** The plan renews by itself at expiresAt (false once it has expired). */
  autoRenew: Scalars['Boolean']['output'];
  expiresAt: Scalars['Time']['output'];
  /** Set while a store retries a failed payment and the account keeps access: access ends then unless the payment recovers. Null otherwise. */
  graceEndsAt?: Maybe<Scalars['Time']['output']>;
  /** trial, basic or premium. */
  plan: Scalars['String']['output'];
  /** Where the plan comes from: app_store, google_play, stripe, admin, trial or referral; empty when the account has no entitlement. */
  source: Scalars['String']['output'];
  /** active until expiresAt, expired from then on. */
  status: Scalars['String']['output'];
};

/** An account's subscription (as UserRecord.subscription), the entitlements it comes from and their history. */
export type UserSubscriptionDetail = {
  __typename?: 'UserSubscriptionDetail';
  /** The plan renews by itself at expiresAt (false once it has expired). */
  autoRenew: Scalars['Boolean']['output'];
  entitlements: Array<Entitlement>;
  expiresAt: Scalars['Time']['output'];
  /** Set while a store retries a failed payment and the account keeps access: access ends then unless the payment recovers. Null otherwise. */
  graceEndsAt?: Maybe<Scalars['Time']['output']>;
  /** The last 100 changes of the account's entitlements, newest first. */
  history: Array<EntitlementChange>;
  /** trial, basic or premium. */
  plan: Scalars['String']['output'];
  /** Where the plan comes from: app_store, google_play, stripe, admin, trial or referral; empty when the account has no entitlement. */
  source: Scalars['String']['output'];
  /** active until expiresAt, expired from then on. */
  status: Scalars['String']['output'];
};

/** Webhook endpoints. */
export type WebhookCounts = {
  __typename?: 'WebhookCounts';
  disabled: Scalars['Int']['output'];
  /** Enabled, with a failed attempt since their last success (failingSince set). */
  failing: Scalars['Int']['output'];
  total: Scalars['Int']['output'];
};

/** One delivery attempt of an event to an endpoint. */
export type WebhookDelivery = {
  __typename?: 'WebhookDelivery';
  /** 1 for the first attempt of a delivery, then each retry. */
  attempt: Scalars['Int']['output'];
  createdAt: Scalars['Time']['output'];
  durationMs: Scalars['Int']['output'];
  /** Null on success. The class of the failure, never the raw error: timeout (no answer in time), unreachable (no connection: refused, reset, no route, a name that does not resolve, or an address or port not allowed), tls (the handshake failed or the certificate was not accepted), http_status (an answer other than 2xx; statusCode says which). */
  error?: Maybe<Scalars['String']['output']>;
  /** The event's webhook-id. */
  eventId: Scalars['ID']['output'];
  eventType: Scalars['String']['output'];
  id: Scalars['ID']['output'];
  /** The receiver's HTTP status; null when no answer came. */
  statusCode?: Maybe<Scalars['Int']['output']>;
  success: Scalars['Boolean']['output'];
};

export type WebhookDeliveryConnection = {
  __typename?: 'WebhookDeliveryConnection';
  nodes: Array<WebhookDelivery>;
  pageInfo: PageInfo;
};

/** A receiver of signed webhook events (Standard Webhooks). */
export type WebhookEndpoint = {
  __typename?: 'WebhookEndpoint';
  createdAt: Scalars['Time']['output'];
  description: Scalars['String']['output'];
  disabledAt?: Maybe<Scalars['Time']['output']>;
  /** Why a disabled endpoint is: an operator, a 410 Gone, or five days of failed attempts. */
  disabledReason?: Maybe<Scalars['String']['output']>;
  enabled: Scalars['Boolean']['output'];
  eventTypes: Array<Scalars['String']['output']>;
  /** The first failed attempt since the last success. */
  failingSince?: Maybe<Scalars['Time']['output']>;
  id: Scalars['ID']['output'];
  /** After a rotation: until when the previous secret still signs. */
  previousSecretExpiresAt?: Maybe<Scalars['Time']['output']>;
  /** https (http only with HERALD_WEBHOOKS_ALLOW_INSECURE). */
  url: Scalars['String']['output'];
};

export type InboxChangedSubscriptionVariables = Exact<{ [key: string]: never; }>;


export type InboxChangedSubscription = { inboxChanged: { unseen: number, unread: number, item: { id: string, title: string, body: string, data: unknown, category: string, createdAt: string, seenAt: string | null, readAt: string | null, archivedAt: string | null, expiresAt: string } | null } };

export type MeQueryVariables = Exact<{ [key: string]: never; }>;


export type MeQuery = { me: { id: string, email: string | null } };

export type NotificationJobUpdatedSubscriptionVariables = Exact<{
  id: string | number;
}>;


export type NotificationJobUpdatedSubscription = { notificationJobUpdated: { id: string, status: string, subject: string, totalRecipients: number, sent: number, failed: number, invalidTokens: number, createdAt: string, startedAt: string | null, finishedAt: string | null, error: string | null } };
