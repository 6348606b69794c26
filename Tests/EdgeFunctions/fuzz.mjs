// A seeded fuzz of the edge functions' routing (deploy/supabase/functions/_shared/app_contract.js): hostile
// methods, paths, query strings and bodies never throw, and every answer is a call of one of the four
// RPCs with well-formed arguments or one of seed 003's errors. Prints "ok N" or the first violation and
// exits 1. Run by EdgeFunctionTests: `node fuzz.mjs SEED COUNT`.
import { ERROR_STATUS, respond, route } from "../../deploy/supabase/functions/_shared/app_contract.js";

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
const FUNCTIONS = new Set(["get_notifications", "mark_notifications_read", "register_device_token", "unregister_device_token"]);
function fail(what, input, out) {
  process.stdout.write(`violation: ${what}\ninput: ${JSON.stringify(input)}\noutput: ${JSON.stringify(out)}\n`);
  process.exit(1);
}
for (let i = 0; i < count; i++) {
  const input = {
    method: pick(["GET", "PATCH", "POST", "DELETE", "PUT", "get", "", "HEAD"]),
    url: "https://ref.supabase.co/functions/v1/" + pick(["push-notification", "notifications-register-device", "x", ""]) +
      pick(["", "/", "?" + text(), "?limit=" + text() + "&offset=" + text() + "&unread_only=" + text()]),
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
    for (const k of ["limit", "offset"]) {
      const v = out.call.args[k];
      if (v !== undefined && (!Number.isSafeInteger(v) || Math.abs(v) > 999999999)) fail(k + " is not a whole number", input, out);
    }
  }
  const error = next() % 4 === 0 ? null : { code: pick(["PT422", "PT400", "PT999", "PGRST301", "22P02", "XX000", 7, null]),
    message: pick(["validation_error", "invalid_token", "secret-token-" + i, null, 3]), details: value() };
  let answer;
  try { answer = respond(value(), error); } catch (e) { fail("respond threw " + e, error, null); }
  const status = answer?.response?.status;
  if (!Number.isInteger(status)) fail("no status", error, answer);
  if (JSON.stringify(answer).includes("secret-token-") && !(typeof error?.code === "string" && /^PT\d{3}$/.test(error.code)))
    fail("an unexpected error's text reached the answer", error, answer);
}
process.stdout.write(`ok ${count}\n`);
