// The edge functions of the app's endpoints (push-notification, notifications-register-device,
// daily-forecast):
// each request becomes one call of herald's RPC as the signed-in caller, whose JWT is passed on, so
// PostgREST runs the function as that user (auth.uid()) and row-level security holds. The server-side
// send (POST /push-notification) is the exception: it needs the service role key (X-Supabase-Service-Role,
// or Authorization: Bearer), calls send_notification as the service role, and waits up to 2 s for the
// push. The routing and the answers are in app_contract.js, which herald's tests run.
//
//   supabase functions deploy push-notification
//   supabase functions deploy notifications-register-device
//   supabase functions deploy daily-forecast
//
// SUPABASE_URL, SUPABASE_ANON_KEY and SUPABASE_SERVICE_ROLE_KEY are set by Supabase in every edge function.

import { createClient } from "jsr:@supabase/supabase-js@2";
import { awaitSend, failure, isServiceRole, respond, route } from "./app_contract.js";

const MAX_BODY_BYTES = 64 * 1024;

function answer(r: { status: number; body: any }): Response {
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  const wait = r.body?.error?.retry_after;
  if (r.status === 429 && Number.isSafeInteger(wait)) headers["retry-after"] = String(wait);
  return new Response(JSON.stringify(r.body), { status: r.status, headers });
}

// POST /push-notification: the service role's send, answered once the push went out or failed, or
// after 2 s as scheduled.
async function send(req: Request, args: Record<string, unknown>): Promise<Response> {
  const serviceKey = Deno.env.get("SUPABASE_SERVICE_ROLE_KEY") ?? "";
  if (!isServiceRole((name: string) => req.headers.get(name), serviceKey)) {
    return answer(failure("forbidden", "not authorized to send notifications (service role required)").response);
  }
  const supabase = createClient(Deno.env.get("SUPABASE_URL") ?? "", serviceKey, {
    auth: { persistSession: false, autoRefreshToken: false },
  });
  const rpc = async (fn: string, a: Record<string, unknown>) => {
    const { data, error } = await supabase.rpc(fn, a);
    if (error && !/^PT\d{3}$/.test(error.code ?? "")) {
      console.error(JSON.stringify({ level: "error", msg: "rpc failed", fn, code: error.code }));
    }
    return { data, error };
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  return answer((await awaitSend(rpc, args, { sleep })).response);
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
    if (routed.service) return send(req, routed.call.args);

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
