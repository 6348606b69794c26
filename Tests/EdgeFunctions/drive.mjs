// Runs the edge functions' routing (deploy/supabase/functions/_shared/app_contract.js) for herald's
// tests: reads one JSON request from stdin and prints what the module answers.
//   {"op":"route","method":"GET","url":"https://x/functions/v1/push-notification?limit=50"}
//   {"op":"respond","data":…,"error":{"code":"PT422","message":"validation_error","details":"…"}}
import { respond, route } from "../../deploy/supabase/functions/_shared/app_contract.js";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const request = JSON.parse(input);
const out = request.op === "route"
  ? route(request.method, request.url, request.body)
  : respond(request.data, request.error ?? null);
process.stdout.write(JSON.stringify(out));
