import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The words of the forecasts: from the team's insight service where it is configured and answers in
/// time with words it may use (`ForecastInsight.parse`), else herald's own in the person's language
/// (`ForecastWords.templated`). The requests are made first, concurrently and outside any transaction;
/// then one statement stores the words.
extension ForecastGenerator {
    /// Gives every forecast of `wordless` its words and stores them; returns whether it stored any.
    func writeWords(_ wordless: [Candidate], _ forecasts: Forecasts, started: Date, result: inout Result) throws -> Bool {
        var words = askInsight(wordless, forecasts, started: started, result: &result)
        for c in wordless where words[c.forecastKey] == nil {
            guard let risk = forecasts[c.forecastKey]?.riskLevel(thresholds) else { continue }
            words[c.forecastKey] = ForecastWords.templated(risk: risk, locale: c.locale)
            result.templatedWords += 1
        }
        let rows: [JSONValue] = wordless.compactMap { c in
            guard let w = words[c.forecastKey], let risk = forecasts[c.forecastKey]?.riskLevel(thresholds) else { return nil }
            return ["user_id": .string(c.user.lowercased), "forecast_date": .string(c.date.description),
                    "risk_level": .string(risk.rawValue), "summary": .string(w.summary), "why": .string(w.why),
                    "tip": .string(w.comfortTip), "insight": w.dailyInsight, "locale": .string(w.locale)]
        }
        guard !rows.isEmpty else { return false }
        // A forecast another pass gave words meanwhile keeps them.
        try db.execute("""
            update daily_forecasts d
               set risk_level = coalesce(d.risk_level, x.risk_level), forecast_summary = x.summary,
                   why_explanation = coalesce(d.why_explanation, x.why), comfort_tip = coalesce(d.comfort_tip, x.tip),
                   daily_insight = coalesce(d.daily_insight, x.insight), forecast_locale = x.locale, updated_at = now()
              from jsonb_to_recordset(\(JSONValue.array(rows).pgJSONText)::jsonb) as x(
                     user_id uuid, forecast_date date, risk_level text, summary text, why text, tip text, insight jsonb, locale text)
             where d.user_id = x.user_id and d.forecast_date = x.forecast_date and coalesce(d.forecast_summary, '') = ''
            """)
        return true
    }

    /// The insight service's words for each forecast it answered usably, by `forecastKey`; the
    /// failures are counted and logged (status or reason only: never the answer's text). Empty without
    /// a service.
    private func askInsight(_ wordless: [Candidate], _ forecasts: Forecasts, started: Date,
                            result: inout Result) -> [String: ForecastWords] {
        guard let service = insight else { return [:] }
        var asked: [Candidate] = []
        var requests: [HTTPRequest] = []
        for c in wordless {
            guard let f = forecasts[c.forecastKey], let risk = f.riskLevel(thresholds) else { continue }
            let body = ForecastInsight.requestBody(
                user: c.user, date: c.date, locale: c.locale, notificationTime: c.notificationTime,
                latitude: c.latitude, longitude: c.longitude, placeName: c.locationName, hourly: f.hourly,
                risk: risk, pressureChangeHPa: f.change)
            asked.append(c)
            requests.append(service.request(id: Self.dedupeKey(c.user, c.date), body: body, now: now))
        }
        var words: [String: ForecastWords] = [:]
        let unstarted = transport.perform(requests, shouldStart: { _ in mayStart(since: started) }) { index, response in
            let c = asked[index]
            let failure: String
            switch response {
            case .success(let r) where (200..<300).contains(r.status):
                do {
                    words[c.forecastKey] = try ForecastInsight.parse(r.body, locale: c.locale)
                    result.insights += 1
                    return
                } catch {
                    failure = "\(error)"
                }
            case .success(let r):
                failure = "answered \(r.status)"
            case .failure(let error):
                failure = "\(error)"
            }
            result.insightFailures += 1
            logger.warning("the forecast insight service gave no words; herald's own are used", metadata: [
                "user_id": .string(c.user.lowercased), "date": .string(c.date.description), "reason": .string(failure)])
        }
        if !unstarted.isEmpty {
            logger.warning("the forecast insight requests ran out of their time in this pass; herald's own words are used",
                           metadata: ["not_asked": "\(unstarted.count)", "budget_s": "\(fetchBudget)"])
        }
        return words
    }
}
