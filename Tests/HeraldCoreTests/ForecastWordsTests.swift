import Foundation
import Testing
@testable import HeraldCore

/// A forecast's words and when it is made: herald's own words in the person's language, the push body
/// made of the summary, and the dates whose forecast a pass prepares within the lead.
@Suite struct ForecastWordsTests {
    /// herald's own words: the design's example summary for the risk, an explanation, a comfort tip and
    /// the design's daily insight object, all in the person's language.
    @Test(arguments: RiskLevel.allCases)
    func heraldsOwnWordsSpeakThePersonsLanguage(risk: RiskLevel) {
        for (locale, lang) in [("en-GB", "en"), ("ar", "ar"), ("pt-BR", "pt-BR")] {
            let w = ForecastWords.templated(risk: risk, locale: locale)
            #expect(w.locale == lang)
            #expect(w.summary == Templates.forecastSummary(Templates.language(locale), risk: risk.rawValue))
            #expect(!w.why.isEmpty && !w.comfortTip.isEmpty && w.why != w.comfortTip)
            #expect(w.dailyInsight["summary_sentence"] == .string(w.summary))
            #expect(w.dailyInsight["why_line"] == .string(w.why))
            #expect(w.dailyInsight["comfort_tip"] == .string(w.comfortTip))
            #expect(w.dailyInsight["sign_off"]?.stringValue?.isEmpty == false)
        }
        // Arabic words are Arabic.
        #expect(ForecastWords.templated(risk: risk, locale: "ar").comfortTip.unicodeScalars.contains { (0x0600...0x06FF).contains($0.value) })
    }

    /// The push's body is the forecast's summary after its risk, whole, where the summary is in the
    /// recipient's language; elsewhere the fixed text for the risk in theirs. The deep link names the date.
    @Test func thePushBodyIsTheSummaryInTheRecipientsLanguage() {
        let summary = "Pressure falls fast today: pace yourself, keep warm and rest when your body asks for it."
        let row = item(kind: "daily_forecast", payload: #"{"date":"2026-01-25","risk_level":"HIGH","summary":"\#(summary)","summary_locale":"en"}"#,
                       scheduledAt: utc(2026, 1, 25, 8))
        let en = Renderer().render(row, preferences: Preferences(userId: alice, locale: "en"), unreadInApp: 0)
        #expect(en.body == "Today's flare risk: HIGH - " + summary)
        #expect(en.deepLink == "herald://forecast/2026-01-25")
        #expect(en.data["date"] == "2026-01-25")
        let ar = Renderer().render(row, preferences: Preferences(userId: alice, locale: "ar"), unreadInApp: 0)
        #expect(ar.body == "خطر النوبات اليوم: مرتفع - يُتوقع انخفاض كبير في الضغط الجوي. اعتنِ بنفسك جيدًا اليوم.")
    }

    /// The weather is fetched within the lead before the notification time; a time that has passed
    /// stays until its date is over; tomorrow's comes in once its own lead begins.
    @Test(arguments: [
        // (now in London, notification time, lead in minutes, dates prepared)
        ("2026-01-25T06:59:59Z", "08:00", 60, [String]()),
        ("2026-01-25T07:00:00Z", "08:00", 60, ["2026-01-25"]),
        ("2026-01-25T07:59:00Z", "08:00", 0, []),
        ("2026-01-25T08:00:00Z", "08:00", 0, ["2026-01-25"]),
        ("2026-01-25T23:59:00Z", "08:00", 60, ["2026-01-25"]),
        ("2026-01-25T23:30:00Z", "00:15", 60, ["2026-01-25", "2026-01-26"]),
        ("2026-01-25T23:30:00Z", "24:00", 60, ["2026-01-25", "2026-01-26"]),
    ])
    func datesToPrepare(now: String, time: String, leadMinutes: Int, expected: [String]) {
        let london = zone("Europe/London")
        let dates = FlareForecast.datesToPrepare(now: ISO8601.parse(now)!, zone: london, notificationTime: t(time),
                                                 lead: Double(leadMinutes) * 60)
        #expect(dates.map(\.date.description) == expected)
        for (date, at) in dates {
            #expect(at == Zone.instant(of: date, DailyTime.timeOfDay(t(time)), in: london))
        }
    }

    /// Across the spring-forward night the lead is an hour of real time before the new wall time.
    @Test func theLeadIsRealTimeAcrossADSTChange() {
        let ny = zone("America/New_York")   // 2026-03-08: 02:00 EST jumps to 03:00 EDT; 08:00 EDT is 12:00 UTC
        #expect(FlareForecast.datesToPrepare(now: utc(2026, 3, 8, 10, 59), zone: ny, notificationTime: t("08:00"), lead: 3600).isEmpty)
        #expect(FlareForecast.datesToPrepare(now: utc(2026, 3, 8, 11), zone: ny, notificationTime: t("08:00"), lead: 3600)
            .map(\.at) == [utc(2026, 3, 8, 12)])
    }
}
