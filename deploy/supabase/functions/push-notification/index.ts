// The app's `push-notification` endpoint on herald's RPCs (see ../_shared/app_contract.js for the routes).
//
//   supabase functions deploy push-notification
import { serveAppContract } from "../_shared/serve.ts";

serveAppContract();
