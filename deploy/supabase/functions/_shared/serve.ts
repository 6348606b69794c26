// The edge functions of the app's endpoints (push-notification, notifications-register-device):
// each request becomes one call of herald's RPC as the signed-in caller, whose JWT is passed on, so
// PostgREST runs the function as that user (auth.uid()) and row-level security holds. The routing and
// the answers are in app_contract.js, which herald's tests run.
//
//   supabase functions deploy push-notification
//   supabase functions deploy notifications-register-device
//
// SUPABASE_URL and SUPABASE_ANON_KEY are set by Supabase in every edge function.

import { createClient } from "jsr:@supabase/supabase-js@2";
import { failure, respond, route } from "./app_contract.js";

const MAX_BODY_BYTES = 64 * 1024;

function answer(r: { status: number; body: unknown }): Response {
  return new Response(JSON.stringify(r.body), {
    status: r.status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}

async function readBody(req: Request): Promise<unknown> {
  if (req.method === "GET" || req.method === "HEAD") return undefined;
  const text = await req.text();
  if (text.length > MAX_BODY_BYTES || text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function serveAppContract(): void {
  Deno.serve(async (req: Request): Promise<Response> => {
    const routed = route(req.method, req.url, await readBody(req));
    if (routed.response) return answer(routed.response);

    const authorization = req.headers.get("Authorization");
    if (!authorization || !/^Bearer\s+\S+$/i.test(authorization)) {
      return answer(failure("unauthorized", "missing or invalid JWT token").response);
    }
    const supabase = createClient(Deno.env.get("SUPABASE_URL") ?? "", Deno.env.get("SUPABASE_ANON_KEY") ?? "", {
      global: { headers: { Authorization: authorization } },
      auth: { persistSession: false, autoRefreshToken: false },
    });
    const { fn, args } = routed.call;
    const { data, error } = await supabase.rpc(fn, args);
    if (error && !/^PT\d{3}$/.test(error.code ?? "")) {
      // The code only: the message may quote an argument (a push token).
      console.error(JSON.stringify({ level: "error", msg: "rpc failed", fn, code: error.code }));
    }
    return answer(respond(data, error).response);
  });
}
