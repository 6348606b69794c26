import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// The forecast the app opens after a tap (the daily flare forecast's `GET /user/daily-forecast/{date}`):
/// `get_daily_forecast(forecast_date)` for signed-in callers, on a database set up like Supabase,
/// called as PostgREST calls it.
@Suite struct ForecastAppContractTests {
    /// Expects the error `code` as PostgREST reads it: SQLSTATE `state`, the code as the message, an
    /// explanation in DETAIL.
    static func fails(_ db: PGConnection, _ sql: SQL, _ code: String, _ state: String,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try db.query(sql)
            Issue.record("expected \(code), but it succeeded", sourceLocation: sourceLocation)
        } catch let error as PGError {
            #expect(error.sqlState == state && error.message == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.detail?.isEmpty == false, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    /// The owner reads their forecast with its weather (Open-Meteo's hourly columns as a list of hours)
    /// and words; someone else's date, or a date with no forecast, is `not_found` (HTTP 404); no date is
    /// a `validation_error`; `anon` cannot call it.
    @Test func theOwnerReadsTheirForecastAndAnotherUserGetsNotFound() throws {
        try SecurityTests.supabase { tdb, db in
            let (owner, other) = (UUID(), UUID())
            try db.execute("insert into user_profiles (user_id) values (\(owner)), (\(other))")
            try db.execute("""
                insert into daily_forecasts (user_id, forecast_date, location_latitude, location_longitude, location_name,
                                             hourly_forecast, risk_level, pressure_change_hpa, forecast_summary,
                                             why_explanation, comfort_tip, daily_insight, forecast_locale, created_at)
                values (\(owner), '2026-01-25', 51.5, -0.1, 'London',
                        '{"time":["2026-01-25T00:00","2026-01-25T01:00"],"pressure_msl":[1013.5,1012.0],"temperature_2m":[4.0,null]}',
                        'MODERATE', -6.5, 'Pressure changes ahead.', 'Falling pressure.', 'Move gently.',
                        '{"summary_sentence":"Pressure changes ahead.","sign_off":"Take care today."}', 'en',
                        '2026-01-25T07:00:04Z')
                """)

            try SecurityTests.act(db, as: "authenticated", owner, claimsJSON: true)
            let text = try db.query("select get_daily_forecast('2026-01-25')::text as f").first?["f"].string ?? "null"
            let f = try JSONValue.parse(text)
            #expect(f["date"] == "2026-01-25")
            #expect(f["fetched_at"] == "2026-01-25T07:00:04Z")
            #expect(f["locale"] == "en")
            #expect(f["flare_forecast"]?["risk"] == "MODERATE")
            #expect(f["flare_forecast"]?["forecast"] == "Pressure changes ahead.")
            #expect(f["flare_forecast"]?["why"] == "Falling pressure.")
            #expect(f["flare_forecast"]?["comfort_tip"] == "Move gently.")
            #expect(f["flare_forecast"]?["daily_insight"]?["sign_off"] == "Take care today.")
            #expect(f["flare_forecast"]?["pressure_change_hpa"]?.doubleValue == -6.5)
            #expect(f["location"]?["name"] == "London")
            #expect(f["weather"]?["hourly"] == [
                ["time": "2026-01-25T00:00", "pressure_msl": 1013.5, "temperature_2m": 4.0],
                ["time": "2026-01-25T01:00", "pressure_msl": 1012.0, "temperature_2m": .null],
            ])
            Self.fails(db, "select get_daily_forecast('2026-01-26')", "not_found", "PT404")
            Self.fails(db, "select get_daily_forecast(null)", "validation_error", "PT422")

            try SecurityTests.act(db, as: "authenticated", other)
            Self.fails(db, "select get_daily_forecast('2026-01-25')", "not_found", "PT404")
            // Nor can the other user read the table around the function.
            SecurityTests.refused(db, "select * from daily_forecasts", "other reads daily_forecasts")

            try SecurityTests.act(db, as: "authenticated", nil)
            Self.fails(db, "select get_daily_forecast('2026-01-25')", "unauthorized", "PT401")
            try SecurityTests.act(db, as: "anon", owner)
            SecurityTests.refused(db, "select get_daily_forecast('2026-01-25')", "anon reads a forecast",
                                  message: "permission denied for function")
        }
    }
}
