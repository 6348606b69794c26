// A seeded fuzz of the edge functions' routing (deploy/supabase/functions/_shared/app_contract.js): hostile
// methods, paths, query strings and bodies never throw, and every answer is a call of one of the six
// RPCs with well-formed arguments or one of seed 003's errors; the send's answers and its service role
// check hold against hostile outcomes and headers too. Prints "ok N" or the first violation and
// exits 1. Run by EdgeFunctionTests: `node fuzz.mjs SEED COUNT`.
import { ERROR_STATUS, isServiceRole, respond, respondSend, route, sendAnswer } from "../../deploy/supabase/functions/_shared/app_contract.js";

let state = (Number(process.argv[2] ?? 1) >>> 0) || 1;
const count = Number(process.argv[3] ?? 5000);
function next() { state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0; return state; }
const pick = (xs) => xs[next() % xs.length];
const pieces = ["limit", "offset", "type", "unread_only", "push_token", "=", "&", "%", "%zz", "%00", "-", "1", "0", "100",
  "101", "1e3", "9999999999", "-1", "true", "no", " ", "\u0000", "é", "😀", "reminder,prompt", ",", "?", "#", "/", "..",
  "ExponentPushToken[x]", "NaN", "Infinity", "0x10", "[]", "{}"];
const text = () => Array.from({ length: next() % 8 }, () => pick(pieces)).join("");
function value(depth = 0) {
  switch (next() % (depth > 2 ? 5 : 8)) {
    case 0: return null;
    case 1: return next() % 2 === 0;
    case 2: return pick([0, -1, 1.5, 1e308, -0, Number.MAX_SAFE_INTEGER, 42]);
    case 3: return text();
    case 4: return "3f2c4b1a-0000-4000-8000-00000000000" + (next() % 10);
    case 5: return Array.from({ length: next() % 4 }, () => value(depth + 1));
    default: {
      const o = {};
      for (let i = next() % 5; i > 0; i--) o[pick(["notification_ids", "push_token", "device_type", "locale", "__proto__", text()])] = value(depth + 1);
      return o;
    }
  }
}
const FUNCTIONS = new Set(["get_notifications", "mark_notifications_read", "register_device_token", "unregister_device_token",
  "send_notification", "get_daily_forecast"]);
function fail(what, input, out) {
  process.stdout.write(`violation: ${what}\ninput: ${JSON.stringify(input)}\noutput: ${JSON.stringify(out)}\n`);
  process.exit(1);
}
for (let i = 0; i < count; i++) {
  const input = {
    method: pick(["GET", "PATCH", "POST", "DELETE", "PUT", "get", "", "HEAD"]),
    url: "https://ref.supabase.co/functions/v1/" + pick(["push-notification", "notifications-register-device", "daily-forecast", "x", ""]) +
      pick(["", "/", "/" + text(), "/2026-01-25", "/2026-02-30", "?" + text(), "?date=" + text(),
            "?limit=" + text() + "&offset=" + text() + "&unread_only=" + text()]),
    body: next() % 3 === 0 ? undefined : value(),
  };
  let out;
  try { out = route(input.method, input.url, input.body); } catch (e) { fail("route threw " + e, input, null); }
  if (!!out.call === !!out.response) fail("neither or both of call and response", input, out);
  if (out.response) {
    const code = out.response.body?.error?.code;
    if (!Object.hasOwn(ERROR_STATUS, code) || ERROR_STATUS[code] !== out.response.status) fail("not a seed 003 error", input, out);
  } else {
    if (!FUNCTIONS.has(out.call.fn)) fail("unknown function", input, out);
    // The send alone needs the service role, and hands the body on whole.
    if ((out.call.fn === "send_notification") !== (out.service === true)) fail("the service role is not required where it must be", input, out);
    if (out.call.fn === "send_notification" && (out.call.args.request === null || typeof out.call.args.request !== "object"
        || Array.isArray(out.call.args.request))) fail("the send's request is not an object", input, out);
    // The forecast's date is a calendar date, YYYY-MM-DD, and the only argument.
    if (out.call.fn === "get_daily_forecast" && (Object.keys(out.call.args).join() !== "forecast_date"
        || !/^\d{4}-\d{2}-\d{2}$/.test(out.call.args.forecast_date)
        || Number.isNaN(Date.parse(out.call.args.forecast_date + "T00:00:00Z"))
        || new Date(out.call.args.forecast_date + "T00:00:00Z").toISOString().slice(0, 10) !== out.call.args.forecast_date)) {
      fail("the forecast's date is not a calendar date", input, out);
    }
    for (const k of ["limit", "offset"]) {
      const v = out.call.args[k];
      if (v !== undefined && (!Number.isSafeInteger(v) || Math.abs(v) > 999999999)) fail(k + " is not a whole number", input, out);
    }
  }
  const error = next() % 4 === 0 ? null : { code: pick(["PT422", "PT400", "PT429", "PT999", "PGRST301", "22P02", "42501", "XX000", 7, null]),
    message: pick(["validation_error", "invalid_token", "rate_limit_exceeded", "secret-token-" + i, null, 3]),
    details: pick([value(), '{"retry_after": 12}', '{"retry_after": "x"}', "{"]) };
  let answer;
  try { answer = respond(value(), error); } catch (e) { fail("respond threw " + e, error, null); }
  const status = answer?.response?.status;
  if (!Number.isInteger(status)) fail("no status", error, answer);
  if (JSON.stringify(answer).includes("secret-token-") && !(typeof error?.code === "string" && /^PT\d{3}$/.test(error.code)))
    fail("an unexpected error's text reached the answer", error, answer);
  let sendAnswered;
  try { sendAnswered = respondSend(value(), error); } catch (e) { fail("respondSend threw " + e, error, null); }
  if (!Number.isInteger(sendAnswered?.response?.status)) fail("no status from respondSend", error, sendAnswered);
  const status2 = value();
  let settled;
  try { settled = sendAnswer({ notification_id: "n", user_id: "u", push_token: "t" }, status2); } catch (e) { fail("sendAnswer threw " + e, status2, null); }
  if (!["sent", "failed", "scheduled"].includes(settled.response.body.status)) fail("not a send status", status2, settled);
  const key = "service-role-key-" + (i % 7) + "-0123456789";
  const given = pick([key, key + "x", key.slice(1), text(), null, "Bearer " + key]);
  const headers = { "x-supabase-service-role": pick([given, null]), authorization: pick([given, "Bearer " + given, null]) };
  const admitted = isServiceRole((name) => headers[name] ?? null, key);
  const exact = headers["x-supabase-service-role"] === key || headers.authorization === "Bearer " + key;
  if (admitted !== exact) fail("the service role check disagrees with an exact match", headers, admitted);
}
process.stdout.write(`ok ${count}\n`);
