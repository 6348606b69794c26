// The app's endpoints on herald's RPCs (docs/app-contract.md): which RPC a request calls with which
// arguments, and how the RPC's answer or error becomes the endpoint's response. Plain JavaScript with no imports, so the edge
// functions (Deno) and herald's tests (Node, Tests/EdgeFunctions/drive.mjs) run the same code.
//
//   GET    /push-notification?limit=50&offset=0&type=reminder,prompt&unread_only=true  → get_notifications
//   PATCH  /push-notification              {"notification_ids":[…]}                   → mark_notifications_read
//   POST   /notifications-register-device  {"push_token","device_type",…}             → register_device_token
//   DELETE /notifications-register-device?push_token=…                                → unregister_device_token
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
  method_not_allowed: 405,
  validation_error: 422,
  internal_error: 500,
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The error body: {"error":{"code","message"}}. */
export function failure(code, message) {
  const status = ERROR_STATUS[code] ?? 500;
  return { response: { status, body: { error: { code, message: String(message ?? code) } } } };
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

/** The endpoint a URL names: the last path segment (`/functions/v1/push-notification` → `push-notification`). */
export function endpointOf(url) {
  const path = new URL(url, "http://localhost").pathname.replace(/\/+$/, "");
  return path.slice(path.lastIndexOf("/") + 1);
}

/**
 * What a request calls: `{call: {fn, args}}`, or `{response}` when the request itself is wrong.
 * `body` is the parsed JSON body (undefined when there is none or it is not JSON).
 */
export function route(method, url, body) {
  const params = new URL(url, "http://localhost").searchParams;
  const endpoint = endpointOf(url);
  const verb = String(method).toUpperCase();

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
    return failure("method_not_allowed", "push-notification answers GET and PATCH");
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
  if (/^PT\d{3}$/.test(code) && Object.hasOwn(ERROR_STATUS, message)) return failure(message, details);
  // No JWT, or an expired one: PostgREST's own codes.
  if (code === "PGRST301" || code === "PGRST302" || code === "42501") return failure("unauthorized", "sign in first");
  // A value PostgreSQL could not read (a malformed uuid, a number out of range).
  if (code.startsWith("22")) return failure("validation_error", "an argument has the wrong form");
  // Anything else stays in the function's log, not in the answer.
  return failure("internal_error", "the notification service failed; try again");
}
