// Runs the edge functions' routing (deploy/supabase/functions/_shared/app_contract.js) for herald's
// tests: reads one JSON request (one line) from stdin and prints what the module answers.
//   {"op":"route","method":"GET","url":"https://x/functions/v1/push-notification?limit=50"}
//   {"op":"respond","data":…,"error":{"code":"PT422","message":"validation_error","details":"…"}}
//   {"op":"respond_send",…}   the same for the send (a refused call is forbidden, not unauthorized)
//   {"op":"post","url":"…","body":{…},"headers":{"x-supabase-service-role":"…"},"service_key":"…",
//    "wait_ms":2000,"interval_ms":100}
// "post" runs a whole request as serve.ts does: the routing, the service role check, and for the send
// every RPC call of `awaitSend`, each printed as one line {"call":{"fn","args"}} and answered by one line
// {"data":…,"error":…} on stdin (the test runs it against PostgreSQL); then one line {"response":…}.
import { createInterface } from "node:readline";
import { awaitSend, failure, isServiceRole, respond, respondSend, route } from "../../deploy/supabase/functions/_shared/app_contract.js";

const lines = createInterface({ input: process.stdin, terminal: false })[Symbol.asyncIterator]();
async function nextLine() {
  const { value, done } = await lines.next();
  if (done) throw new Error("stdin ended before an answer");
  return JSON.parse(value);
}
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");

async function post(request) {
  const routed = route("POST", request.url, request.body);
  if (routed.response) return routed;
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  if (routed.service && !isServiceRole((name) => headers[name] ?? null, request.service_key)) {
    return failure("forbidden", "not authorized to send notifications (service role required)");
  }
  const rpc = async (fn, args) => {
    print({ call: { fn, args } });
    const answer = await nextLine();
    return { data: answer.data ?? null, error: answer.error ?? null };
  };
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  return awaitSend(rpc, routed.call.args, { waitMs: request.wait_ms, intervalMs: request.interval_ms, sleep });
}

const request = await nextLine();
if (request.op === "route") print(route(request.method, request.url, request.body));
else if (request.op === "respond") print(respond(request.data, request.error ?? null));
else if (request.op === "respond_send") print(respondSend(request.data, request.error ?? null));
else print(await post(request));
process.exit(0);
