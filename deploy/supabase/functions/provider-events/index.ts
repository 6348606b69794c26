// herald's provider-events endpoint (docs/delivery-truth.md): a Supabase edge function (Deno) that
// stores what SendGrid, Twilio and WhatsApp post, raw, in `provider_events`, and answers 200 at once.
// It verifies nothing: herald's `events` phase verifies every signature against the body exactly as
// stored, with keys that never leave the worker, and applies only what verifies.
//
//   supabase functions deploy provider-events --no-verify-jwt    # providers cannot send a Supabase JWT
//   supabase secrets set PROVIDER_EVENTS_PUBLIC_URL=https://<ref>.supabase.co/functions/v1/provider-events
//   supabase secrets set WHATSAPP_VERIFY_TOKEN=<random>           # only for WhatsApp's subscription check
//
// Providers call …/provider-events/sendgrid, …/provider-events/twilio or …/provider-events/whatsapp.
// SUPABASE_URL and SUPABASE_SERVICE_ROLE_KEY are set by Supabase in every edge function.

import { createClient } from "jsr:@supabase/supabase-js@2";

const PROVIDERS = new Set(["sendgrid", "twilio", "whatsapp"]);

// Only what verification needs (and the content type, for the record). Authorization, cookies and
// Supabase's own headers are never stored.
const KEPT_HEADERS = [
  "content-type",
  "x-twilio-signature",
  "x-twilio-email-event-webhook-signature",
  "x-twilio-email-event-webhook-timestamp",
  "x-hub-signature-256",
];

// herald refuses larger bodies unread; refuse them here too. SendGrid batches events, far below this.
const MAX_BODY_BYTES = 1 << 20;

const supabase = createClient(
  Deno.env.get("SUPABASE_URL") ?? "",
  Deno.env.get("SUPABASE_SERVICE_ROLE_KEY") ?? "",
  { auth: { persistSession: false, autoRefreshToken: false } },
);

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

Deno.serve(async (req: Request): Promise<Response> => {
  const url = new URL(req.url);
  const provider = url.pathname.split("/").filter((s) => s.length > 0).pop() ?? "";
  if (!PROVIDERS.has(provider)) return text(404, "unknown provider");

  // WhatsApp (Meta) checks a webhook's URL once, when it is configured: echo hub.challenge when the
  // verify token matches.
  if (req.method === "GET" && provider === "whatsapp") {
    const expected = Deno.env.get("WHATSAPP_VERIFY_TOKEN");
    const mode = url.searchParams.get("hub.mode");
    const token = url.searchParams.get("hub.verify_token");
    const challenge = url.searchParams.get("hub.challenge") ?? "";
    if (expected && mode === "subscribe" && token === expected) return text(200, challenge);
    return text(403, "forbidden");
  }
  if (req.method !== "POST") return text(405, "method not allowed");

  const declared = Number(req.headers.get("content-length") ?? "0");
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) return text(413, "too large");
  const raw = new Uint8Array(await req.arrayBuffer());
  if (raw.byteLength > MAX_BODY_BYTES) return text(413, "too large");

  // The body is stored as text, byte for byte: it must be UTF-8 (providers send UTF-8 JSON or forms)
  // and hold no NUL, which a PostgreSQL text column cannot.
  let body: string;
  try {
    body = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(raw);
  } catch {
    return text(400, "body is not UTF-8");
  }
  if (body.includes("\u0000")) return text(400, "body holds NUL");

  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = req.headers.get(name);
    if (value !== null) headers[name] = value;
  }

  // Twilio signs the URL it called. Whether req.url inside the edge runtime is that public URL is
  // unconfirmed, so the public base is configured and the query string appended.
  const base = (Deno.env.get("PROVIDER_EVENTS_PUBLIC_URL") ?? "").replace(/\/+$/, "");
  const storedUrl = base ? `${base}/${provider}${url.search}` : req.url;

  const { error } = await supabase.from("provider_events").insert({ provider, url: storedUrl, headers, body });
  if (error) {
    // A 5xx makes the provider retry later (SendGrid and Twilio do); nothing is lost.
    console.error("provider-events: insert failed", error.message);
    return text(500, "not stored");
  }
  return text(200, "ok");
});
