// The app's `notifications-register-device` endpoint on herald's RPCs (see ../_shared/app_contract.js for the routes).
//
//   supabase functions deploy notifications-register-device
import { serveAppContract } from "../_shared/serve.ts";

serveAppContract();
