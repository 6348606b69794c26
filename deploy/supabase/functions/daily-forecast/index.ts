// The app's `daily-forecast` endpoint on herald's RPCs (see ../_shared/app_contract.js for the routes):
// GET /functions/v1/daily-forecast/2025-12-10, the signed-in user's forecast for that date.
//
//   supabase functions deploy daily-forecast
import { serveAppContract } from "../_shared/serve.ts";

serveAppContract();
