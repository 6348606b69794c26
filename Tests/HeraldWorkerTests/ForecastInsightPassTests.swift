import Foundation
import HeraldChannels
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Forecast words from the team's insight service (`HERALD_FORECAST_INSIGHT_URL`), through real passes
/// against a loopback fake: herald POSTs the date, place, weather and risk, signed as its webhooks are,
/// stores the words it answers and sends the summary; when it fails, is too slow or answers garbage,
/// herald's own words in the person's language fill in, so no forecast goes out without words.
@Suite struct ForecastInsightPassTests {
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let summary = "Pressure falls fast today: pace yourself and keep warm."
    static let answer = #"{"forecast_summary":"\#(summary)","why_explanation":"Falling pressure lets tissues swell.","comfort_tip":"Warm ginger tea keeps the qi moving.","daily_insight":{"summary_sentence":"\#(summary)","sign_off":"Gently does it."}}"#

    static func settings(_ insight: FakeHTTPServer, timeout: Int = 5) -> [String: String] {
        ["HERALD_FORECAST_INSIGHT_URL": insight.baseURL + "/insight", "HERALD_FORECAST_INSIGHT_SECRET": secret,
         "HERALD_FORECAST_INSIGHT_TIMEOUT_SECONDS": String(timeout)]
    }

    @Test func theServicesWordsAreStoredAndSent() throws {
        let weather = ForecastPrimingTests.Weather()
        defer { weather.server.shutdown() }
        let insight = try FakeHTTPServer { _ in .json(200, Self.answer) }
        defer { insight.shutdown() }
        try ForecastPrimingTests.setUp(weather, settings: Self.settings(insight)) { tdb, f, worker, user, outbox in

            let (primed, code) = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(code == .ok && primed.generated[.forecastInsights] == 1 && primed.generated[.forecastTemplatedWords] == 0)

            // One signed POST with the date, place, weather and risk.
            let request = try #require(insight.requests.first)
            #expect(insight.requests.count == 1 && request.method == "POST" && request.path == "/insight")
            let id = "forecast:\(user.lowercased):2026-01-25"
            #expect(request.header("webhook-id") == id)
            let timestamp = try #require(request.header("webhook-timestamp").flatMap(Int.init))
            #expect(request.header("webhook-signature")
                    == (try WebhookSigner(secrets: Self.secret)).signature(id: id, timestamp: timestamp, body: request.body))
            let body = try JSONValue.parse(request.text)
            #expect(body["date"] == "2026-01-25" && body["locale"] == "en" && body["user_id"] == .string(user.lowercased))
            #expect(body["place"]?["name"] == "London" && body["place"]?["latitude"]?.doubleValue == 51.5)
            #expect(body["risk"]?["level"] == "HIGH" && body["risk"]?["pressure_change_hpa"]?.doubleValue == -12)
            // The hours of the forecast's date and the next, on the person's clock.
            #expect(body["weather"]?["hourly"]?["pressure_msl"]?.arrayValue?.count == 48)
            #expect(body["weather"]?["hourly"]?["time"]?.arrayValue?.first == "2026-01-25T00:00")

            // Stored as the service gave them; the push's body is the summary.
            let stored = try f.db.query("""
                select forecast_summary, why_explanation, comfort_tip, daily_insight ->> 'sign_off' as sign_off, forecast_locale
                  from daily_forecasts where user_id = \(user)
                """).first
            #expect(stored?["forecast_summary"].string == Self.summary)
            #expect(stored?["why_explanation"].string == "Falling pressure lets tissues swell.")
            #expect(stored?["comfort_tip"].string == "Warm ginger tea keeps the qi moving.")
            #expect(stored?["sign_off"].string == "Gently does it." && stored?["forecast_locale"].string == "en")
            let (due, _) = worker.run(now: instant("2026-01-25T08:00:05Z"), drain: true) { $0.phases = [.forecasts, .deliver] }
            #expect(due.sent == 1 && insight.requests.count == 1)
            #expect(try ForecastPrimingTests.pushes(outbox).first?["body"] == .string("Today's flare risk: HIGH - " + Self.summary))
        }
    }

    /// Each way the service can let herald down leaves herald's own words, in the person's language
    /// (Arabic here), stored and sent.
    @Test(arguments: [
        ("fails", FakeResponse.json(500, #"{"error":"boom"}"#)),
        ("times out", FakeResponse.json(200, answer, delay: 3)),
        ("answers garbage", FakeResponse.text(200, "<html>Bad Gateway</html>")),
        ("answers the wrong shape", FakeResponse.json(200, #"{"forecast_summary":12,"why_explanation":"b","comfort_tip":"c"}"#)),
        ("answers hostile text", FakeResponse.json(200, #"{"forecast_summary":"a\u202Eb","why_explanation":"b","comfort_tip":"c"}"#)),
    ])
    func heraldsOwnWordsFillInWhenTheService(what: String, response: FakeResponse) throws {
        let weather = ForecastPrimingTests.Weather()
        defer { weather.server.shutdown() }
        let insight = try FakeHTTPServer { _ in response }
        defer { insight.shutdown() }
        try ForecastPrimingTests.setUp(weather, settings: Self.settings(insight, timeout: 1), locale: "ar") { tdb, f, worker, user, outbox in

            let (primed, _) = worker.run(now: instant("2026-01-25T07:05:00Z")) { $0.phases = [.forecasts] }
            #expect(primed.generated[.forecastInsightFailed] == 1 && primed.generated[.forecastTemplatedWords] == 1, "\(what)")
            #expect(primed.generated[.forecasts] == 1, "\(what)")
            let words = ForecastWords.templated(risk: .high, locale: "ar")
            let stored = try f.db.query("""
                select forecast_summary, why_explanation, comfort_tip, forecast_locale from daily_forecasts where user_id = \(user)
                """).first
            #expect(stored?["forecast_summary"].string == words.summary && stored?["why_explanation"].string == words.why, "\(what)")
            #expect(stored?["comfort_tip"].string == words.comfortTip && stored?["forecast_locale"].string == "ar", "\(what)")
            _ = worker.run(now: instant("2026-01-25T08:00:05Z"), drain: true) { $0.phases = [.deliver] }
            #expect(try ForecastPrimingTests.pushes(outbox).first?["body"] == .string("خطر النوبات اليوم: مرتفع - " + words.summary), "\(what)")
        }
    }

    /// The service's URL without its secret (or the other way round) is a configuration error: exit 1,
    /// nothing touched.
    @Test func theServiceNeedsItsSigningSecret() throws {
        try withTestDatabase { (tdb) throws in
            for settings in [["HERALD_FORECAST_INSIGHT_URL": "https://insight.example/forecast"],
                             ["HERALD_FORECAST_INSIGHT_SECRET": Self.secret],
                             ["HERALD_FORECAST_INSIGHT_URL": "ftp://insight.example", "HERALD_FORECAST_INSIGHT_SECRET": Self.secret],
                             ["HERALD_FORECAST_INSIGHT_URL": "https://insight.example", "HERALD_FORECAST_INSIGHT_SECRET": "whsec_!!"]] {
                let (s, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant)
                #expect(code == .configuration, "\(settings)")
                #expect(s.error?.contains("HERALD_FORECAST_INSIGHT_") == true, "\(s.error ?? "")")
            }
        }
    }
}
