// The app's endpoints on herald's RPCs (docs/app-contract.md): which RPC a request calls with which
// arguments, and how the RPC's answer or error becomes the endpoint's response. Plain JavaScript with no imports, so the edge
// functions (Deno) and herald's tests (Node, Tests/EdgeFunctions/drive.mjs) run the same code.
//
//   GET    /push-notification?limit=50&offset=0&type=reminder,prompt&unread_only=true  → get_notifications
//   PATCH  /push-notification              {"notification_ids":[…]}                   → mark_notifications_read
//   POST   /push-notification              SendNotificationRequest (service role)      → send_notification,
//                                          then send_notification_status until sent or failed (≤ 2 s)
//   POST   /notifications-register-device  {"push_token","device_type",…}             → register_device_token
//   DELETE /notifications-register-device?push_token=…                                → unregister_device_token
//   GET    /daily-forecast/2025-12-10     (or ?date=2025-12-10)                        → get_daily_forecast
//
// Why an edge function at all: PostgREST keeps `limit` and `offset` in a query string for itself (they
// page its own result), so `GET /rest/v1/rpc/get_notifications?limit=50` never hands 50 to the function.
// The app calls edge functions anyway (`/push-notification`); these call the RPCs with a JSON
// body, where every argument reaches the function by name.

/** The app contract's error codes and their HTTP status. */
export const ERROR_STATUS = Object.freeze({
  invalid_request: 400,
  invalid_token: 400,
  unauthorized: 401,
  forbidden: 403,
  user_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  validation_error: 422,
  push_disabled: 422,
  rate_limit_exceeded: 429,
  internal_error: 500,
});

/** The statuses an RPC's SQLSTATE PTxyz may name (the send's invalid_token is 422, registration's 400). */
const PT_STATUSES = new Set([400, 401, 403, 404, 422, 429, 500]);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The error body: {"error":{"code","message"}} (and `retry_after` for rate_limit_exceeded). */
export function failure(code, message, status = ERROR_STATUS[code] ?? 500, extra = {}) {
  return { response: { status, body: { error: { code, message: String(message ?? code), ...extra } } } };
}

/** A whole number from the query string; `fallback` when absent; undefined when not a whole number. */
function wholeNumber(params, name, fallback) {
  const raw = params.get(name);
  if (raw === null || raw.trim() === "") return fallback;
  if (!/^\s*-?\d{1,9}\s*$/.test(raw)) return undefined;
  return Number.parseInt(raw, 10);
}

/** true/false (also 1/0, yes/no) from the query string; `fallback` when absent; undefined otherwise. */
function flag(params, name, fallback) {
  const raw = params.get(name);
  if (raw === null || raw.trim() === "") return fallback;
  const v = raw.trim().toLowerCase();
  if (v === "true" || v === "1" || v === "yes") return true;
  if (v === "false" || v === "0" || v === "no") return false;
  return undefined;
}

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The endpoints herald's edge functions serve. */
const ENDPOINTS = new Set(["push-notification", "notifications-register-device", "daily-forecast"]);

/**
 * The endpoint a URL names and the path segments after it: the first segment that names one
 * (`/functions/v1/daily-forecast/2025-12-10` → `daily-forecast`, `["2025-12-10"]`); `endpoint` is
 * undefined when none does.
 */
export function endpointOf(url) {
  const segments = new URL(url, "http://localhost").pathname.split("/").filter((s) => s !== "");
  const at = segments.findIndex((s) => ENDPOINTS.has(s));
  return at < 0 ? { endpoint: undefined, rest: [] } : { endpoint: segments[at], rest: segments.slice(at + 1) };
}

/** A calendar date written YYYY-MM-DD that exists (not 2026-02-30), or undefined. */
function calendarDate(raw) {
  if (typeof raw !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(raw)) return undefined;
  const [y, m, d] = raw.split("-").map((n) => Number.parseInt(n, 10));
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d && y >= 1 ? raw : undefined;
}

/**
 * What a request calls: `{call: {fn, args}}`, or `{response}` when the request itself is wrong.
 * `body` is the parsed JSON body (undefined when there is none or it is not JSON).
 */
export function route(method, url, body) {
  const params = new URL(url, "http://localhost").searchParams;
  const { endpoint, rest } = endpointOf(url);
  const verb = String(method).toUpperCase();
  // Only the forecast takes a path after its name (its date).
  if (rest.length > 0 && endpoint !== "daily-forecast") return failure("invalid_request", "unknown endpoint");

  if (endpoint === "push-notification") {
    if (verb === "GET") {
      const limit = wholeNumber(params, "limit", 20);
      const offset = wholeNumber(params, "offset", 0);
      const unreadOnly = flag(params, "unread_only", false);
      if (limit === undefined) return failure("validation_error", "limit must be a whole number between 1 and 100");
      if (offset === undefined) return failure("validation_error", "offset must be a whole number, 0 or more");
      if (unreadOnly === undefined) return failure("validation_error", "unread_only must be true or false");
      const type = params.get("type");
      const args = { limit, offset, unread_only: unreadOnly };
      if (type !== null && type.trim() !== "") args.type = type;
      return { call: { fn: "get_notifications", args } };
    }
    if (verb === "PATCH") {
      const ids = isObject(body) ? body.notification_ids : undefined;
      if (!Array.isArray(ids) || ids.length === 0) {
        return failure("validation_error", "notification_ids must be a non-empty array of notification ids");
      }
      if (ids.length > 1000 || !ids.every((id) => typeof id === "string" && UUID.test(id))) {
        return failure("validation_error", "notification_ids must be notification ids (UUIDs), at most 1000");
      }
      return { call: { fn: "mark_notifications_read", args: { notification_ids: ids } } };
    }
    if (verb === "POST") {
      // The server-side send: the request is checked whole by send_notification; only the service role
      // may call it (`service`), and the answer waits for the push (`awaitSend`).
      if (!isObject(body)) return failure("invalid_request", "the body must be a JSON object (SendNotificationRequest)");
      return { call: { fn: "send_notification", args: { request: body } }, service: true };
    }
    return failure("method_not_allowed", "push-notification answers GET, PATCH and POST");
  }

  if (endpoint === "notifications-register-device") {
    if (verb === "POST") {
      if (!isObject(body)) return failure("validation_error", "the body must be a JSON object");
      const args = {};
      for (const name of ["push_token", "device_type", "device_name", "app_version", "locale"]) {
        const v = body[name];
        if (v === undefined || v === null) continue;
        if (typeof v !== "string") return failure("validation_error", `${name} must be a string`);
        args[name] = v;
      }
      if (!args.push_token) return failure("validation_error", "push_token is required");
      if (!args.device_type) return failure("validation_error", "device_type is required");
      return { call: { fn: "register_device_token", args } };
    }
    if (verb === "DELETE") {
      const token = params.get("push_token") ?? (isObject(body) && typeof body.push_token === "string" ? body.push_token : null);
      if (!token) return failure("validation_error", "push_token is required");
      return { call: { fn: "unregister_device_token", args: { push_token: token } } };
    }
    return failure("method_not_allowed", "notifications-register-device answers POST and DELETE");
  }

  if (endpoint === "daily-forecast") {
    if (verb !== "GET") return failure("method_not_allowed", "daily-forecast answers GET");
    if (rest.length > 1) return failure("invalid_request", "unknown endpoint");
    const date = calendarDate(rest.length === 1 ? rest[0] : params.get("date"));
    if (date === undefined) return failure("validation_error", "the date must be a calendar date, YYYY-MM-DD");
    return { call: { fn: "get_daily_forecast", args: { forecast_date: date } } };
  }

  return failure("invalid_request", "unknown endpoint");
}

/**
 * The endpoint's response for an RPC's outcome. `error` is PostgREST's error body ({code, message, details,
 * hint}) as supabase-js hands it over, or null; herald's functions raise SQLSTATE PTxyz with the
 * contract's error code as the message and the explanation as details (sql/013_app_contract.sql).
 */
export function respond(data, error) {
  if (!error) return { response: { status: 200, body: data ?? null } };
  const code = typeof error.code === "string" ? error.code : "";
  const message = typeof error.message === "string" ? error.message : "";
  const details = typeof error.details === "string" && error.details !== "" ? error.details : message;
  if (/^PT\d{3}$/.test(code) && Object.hasOwn(ERROR_STATUS, message)) {
    const status = Number(code.slice(2));
    if (message === "rate_limit_exceeded") return rateLimited(details);
    return failure(message, details, PT_STATUSES.has(status) ? status : ERROR_STATUS[message]);
  }
  // No JWT, or an expired one: PostgREST's own codes.
  if (code === "PGRST301" || code === "PGRST302" || code === "42501") return failure("unauthorized", "sign in first");
  // A value PostgreSQL could not read (a malformed uuid, a number out of range).
  if (code.startsWith("22")) return failure("validation_error", "an argument has the wrong form");
  // Anything else stays in the function's log, not in the answer.
  return failure("internal_error", "the notification service failed; try again");
}

/** The 429 body: the explanation and `retry_after` from the DETAIL's JSON ({"retry_after": 12, "message"}). */
function rateLimited(details) {
  let parsed = null;
  try {
    parsed = JSON.parse(details);
  } catch {
    parsed = null;
  }
  const wait = isObject(parsed) && Number.isSafeInteger(parsed.retry_after) && parsed.retry_after > 0 ? parsed.retry_after : 60;
  const message = isObject(parsed) && typeof parsed.message === "string"
    ? parsed.message : `Too many notifications sent. Retry after ${wait} seconds.`;
  return failure("rate_limit_exceeded", message, 429, { retry_after: wait });
}

/**
 * Whether a request carries the service role key: `X-Supabase-Service-Role: <key>` (the push API
 * contract's header) or `Authorization: Bearer <key>` (what Supabase's gateway checks). `header(name)`
 * reads a request header (null when absent). Compared in constant time.
 */
export function isServiceRole(header, serviceKey) {
  if (typeof serviceKey !== "string" || serviceKey.length < 16) return false;
  const bearer = /^Bearer\s+(\S+)$/i.exec(header("authorization") ?? "");
  return [header("x-supabase-service-role"), bearer?.[1]].some((given) => sameSecret(given, serviceKey));
}

function sameSecret(given, expected) {
  if (typeof given !== "string" || given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return diff === 0;
}

/** How long the send's answer waits for the push, and how often it looks. */
export const SEND_WAIT = Object.freeze({ waitMs: 2000, intervalMs: 100 });

/**
 * The send's answer, SendNotificationResponse: the RPC's answer (`sent`), completed by what the latest
 * status read says (`status`, or null before the first): `sent` with `sent_at` and `expo_receipt_id`,
 * `failed` with `error`, else `scheduled`.
 */
export function sendAnswer(sent, status) {
  const s = isObject(status) ? status : {};
  const body = {
    notification_id: sent.notification_id,
    user_id: sent.user_id,
    push_token: s.push_token ?? sent.push_token ?? null,
    status: s.status === "sent" || s.status === "failed" ? s.status : "scheduled",
    sent_at: s.status === "sent" ? (s.sent_at ?? null) : null,
    scheduled_at: sent.scheduled_at ?? null,
  };
  if (body.status === "sent" && typeof s.expo_receipt_id === "string") body.expo_receipt_id = s.expo_receipt_id;
  if (body.status === "failed") body.error = typeof s.error === "string" ? s.error : "the push failed";
  return { response: { status: 200, body } };
}

/**
 * POST /push-notification after routing: calls send_notification, then reads send_notification_status
 * every `intervalMs` until the push was sent or failed or `waitMs` has passed (a notification scheduled
 * later than that is answered `scheduled` at once). `rpc(fn, args)` resolves to {data, error} as
 * supabase-js does; `sleep(ms)` and `now()` are the clock's.
 */
export async function awaitSend(rpc, args, { waitMs = SEND_WAIT.waitMs, intervalMs = SEND_WAIT.intervalMs, sleep, now = Date.now } = {}) {
  const first = await rpc("send_notification", args);
  if (first.error || !isObject(first.data)) return respondSend(first.data, first.error);
  const sent = first.data;
  const deadline = now() + waitMs;
  if (typeof sent.scheduled_at === "number" && sent.scheduled_at > deadline) return sendAnswer(sent, null);
  let status = null;
  for (;;) {
    const read = await rpc("send_notification_status", { notification_id: sent.notification_id });
    if (!read.error && isObject(read.data)) status = read.data;
    if (status?.status === "sent" || status?.status === "failed" || now() + intervalMs > deadline) break;
    await sleep(intervalMs);
  }
  return sendAnswer(sent, status);
}

/** `respond` for the send: a refusal of the call itself (42501) is `forbidden`, not `unauthorized`. */
export function respondSend(data, error) {
  if (error && error.code === "42501") return failure("forbidden", "sending notifications needs the service role");
  if (!error && !isObject(data)) return failure("internal_error", "the notification service failed; try again");
  return respond(data, error);
}
