import Foundation
import Testing
@testable import HeraldCore

@Suite struct RendererTests {
    let queueId = UUID(uuidString: "00000000-0000-0000-0000-0000000000a1")!
    let en = Preferences(userId: alice, locale: "en")
    let ar = Preferences(userId: alice, locale: "ar")
    let alertPayload = #"{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7,"severity":"attention","baseline_value":420,"recent_value":315,"deviation_percent":-25.0}"#

    func alertRow(priority: Priority = .normal) -> QueueItem {
        item(about: bob, alert: episodeId, priority: priority, payload: alertPayload, scheduledAt: utc(2026, 1, 25), id: queueId)
    }

    /// What a payload puts into a push's `data` is cut: a 5,000-character field, a 5 KB deep link or
    /// action titles would otherwise overflow APNs's and FCM's 4 KB, which fails the push for good.
    @Test func payloadFieldsInDataAreCut() throws {
        let long = String(repeating: "x", count: 5_000)
        let alert = item(about: bob, alert: episodeId, payload: #"{"metric_type":"\#(long)","baseline_value":1e400,"recent_value":{"a":1},"deviation_percent":-25}"#,
                         scheduledAt: utc(2026, 1, 25), id: queueId)
        let n = Renderer().render(alert, preferences: en, unreadInApp: 0)
        #expect((n.data["metric"]?.stringValue?.utf8.count ?? 0) <= Renderer.maxDataValueBytes)
        #expect(n.data["metric"] != nil)
        #expect(n.data["baseline"] == nil, "out of range: left out")
        #expect(n.data["recent"] == nil, "an object: left out")
        #expect(n.data["deviation"] == .number(-25))
        let reminder = item(kind: "reminder", payload: #"{"title":"T","body":"B","deep_link":"herald://\#(long)","actions":[{"id":"a","title":"\#(long)"}]}"#,
                            scheduledAt: utc(2026, 1, 25))
        let r = Renderer().render(reminder, preferences: en, unreadInApp: 0)
        #expect(r.deepLink == "herald://inbox", "a 5 KB link falls back to the inbox")
        #expect(r.actions.allSatisfy { $0.title.utf8.count <= 64 })
        let forecast = item(kind: "daily_forecast", payload: #"{"date":"\#(long)","risk_level":"\#(long)"}"#, scheduledAt: utc(2026, 1, 25))
        let f = Renderer().render(forecast, preferences: en, unreadInApp: 0)
        #expect((f.data["risk_level"]?.stringValue?.utf8.count ?? 0) <= Renderer.maxDataValueBytes)
        #expect((f.data["date"]?.stringValue?.utf8.count ?? 0) <= Renderer.maxDataValueBytes)
        for bad in [#"herald://a\u202Eb"#, #"herald://a\u0007b"#, "herald://a b"] {   // JSON escapes
            let odd = item(kind: "reminder", payload: #"{"deep_link":"\#(bad)"}"#, scheduledAt: utc(2026, 1, 25))
            #expect(Renderer().render(odd, preferences: en, unreadInApp: 0).deepLink == "herald://inbox", "\(bad)")
        }
    }

    @Test func alertIsGenericByDefault() {
        let n = Renderer().render(alertRow(), preferences: en, unreadInApp: 2)
        #expect(n.title == "Health update")
        #expect(n.body == "There is a new update about someone in your family. Open the app to see it.")
        #expect(!n.body.contains("Sleep") && !n.body.contains("25"))
        #expect(n.deepLink == "herald://alerts/00000000-0000-0000-0000-0000000000e1")
        #expect(n.badge == 3)
        #expect(n.locale == "en")
        #expect(n.sound == "default")
        #expect(n.data["kind"] == "pattern_alert")
        #expect(n.data["queue_id"] == "00000000-0000-0000-0000-0000000000a1")
        #expect(n.data["deep_link"] == "herald://alerts/00000000-0000-0000-0000-0000000000e1")
        #expect(n.data["metric"] == "sleep_minutes")
        #expect(n.data["pattern"] == "drop_vs_baseline")
        #expect(n.data["level"] == 7)
        #expect(n.data["severity"] == "attention")
        #expect(n.data["baseline"] == 420)
        #expect(n.data["recent"] == 315)
        #expect(n.data["deviation"] == -25)
    }

    @Test func alertInArabicIsGenericToo() {
        let n = Renderer().render(alertRow(), preferences: ar, unreadInApp: 0)
        #expect(n.title == "تحديث صحي")
        #expect(n.body == "هناك تحديث جديد عن أحد أفراد عائلتك. افتح التطبيق للاطلاع عليه.")
        #expect(n.locale == "ar")
        #expect(n.badge == 1)
    }

    @Test func detailedWhenTheOperatorOptsIn() {
        let r = Renderer(options: RenderOptions(detailedLockScreen: true))
        let n = r.render(alertRow(), preferences: en, unreadInApp: 0)
        #expect(n.body.hasPrefix("Sleep is down 25% for 7 days"))
        let a = r.render(alertRow(), preferences: ar, unreadInApp: 0)
        #expect(a.body.hasPrefix("انخفض النوم بنسبة 25% خلال 7 أيام"))
        var rise = alertRow()
        rise.payloadText = #"{"metric_type":"resting_hr","pattern_type":"rise_vs_baseline","level":14,"deviation_percent":21.6}"#
        #expect(r.render(rise, preferences: en, unreadInApp: 0).body.hasPrefix("Resting heart rate is up 22% for 14 days"))
        #expect(r.render(rise, preferences: ar, unreadInApp: 0).body.hasPrefix("ارتفع معدل ضربات القلب أثناء الراحة بنسبة 22% خلال 14 يومًا"))
        // Missing figures: back to the generic text rather than a half sentence.
        rise.payloadText = #"{"metric_type":"steps"}"#
        #expect(r.render(rise, preferences: en, unreadInApp: 0).title == "Health update")
    }

    @Test func forecastFollowsSeed004() {
        let summary = "Significant pressure drop expected. Take extra care today and rest."
        let row = item(kind: "daily_forecast", payload: #"{"date":"2026-01-25","risk_level":"HIGH","summary":"\#(summary)"}"#,
                       scheduledAt: utc(2026, 1, 25))
        let n = Renderer().render(row, preferences: en, unreadInApp: 0)
        #expect(n.title == "Daily Flare Forecast")
        #expect(n.body == "Today's flare risk: HIGH - " + String(summary.prefix(50)))
        #expect(n.body == "Today's flare risk: HIGH - Significant pressure drop expected. Take extra car")
        #expect(n.deepLink == "herald://forecast/2026-01-25")
        #expect(n.data["date"] == "2026-01-25")
        #expect(n.data["risk_level"] == "HIGH")
        #expect(n.data["type"] == "daily_forecast")
        let noSummary = item(kind: "daily_forecast", payload: #"{"date":"2026-01-25","risk_level":"LOW"}"#, scheduledAt: utc(2026, 1, 25))
        // No summary (a forecast made from the weather): seed 004's example text for the level, whole.
        #expect(Renderer().render(noSummary, preferences: en, unreadInApp: 0).body
                == "Today's flare risk: LOW - Steady pressure expected. Your body may feel more balanced today.")
        #expect(Renderer().render(noSummary, preferences: ar, unreadInApp: 0).body
                == "خطر النوبات اليوم: منخفض - يُتوقع ضغط جوي مستقر. قد يشعر جسمك بتوازن أكبر اليوم.")
    }

    @Test func promptFollowsSeed002() {
        let n = Renderer().render(item(kind: "prompt", scheduledAt: utc(2026, 1, 25)), preferences: en, unreadInApp: 0)
        #expect(n.title == "Meditation Check-in")
        #expect(n.body == "In the View?")
        #expect(n.category == "PROMPT_CATEGORY")
        let a = Renderer().render(item(kind: "prompt", scheduledAt: utc(2026, 1, 25)), preferences: ar, unreadInApp: 0)
        #expect(a.category == "PROMPT_CATEGORY")
        #expect(a.title != n.title)
    }

    @Test func reminderUsesThePayloadTextInTheRecipientsLanguage() {
        let payload = #"{"title":"Take your dose","body":"Lactose, day 2","title_ar":"تناول جرعتك","body_ar":"اللاكتوز، اليوم الثاني"}"#
        let row = item(kind: "reminder", payload: payload, scheduledAt: utc(2026, 1, 25))
        let n = Renderer().render(row, preferences: en, unreadInApp: 0)
        #expect(n.title == "Take your dose" && n.body == "Lactose, day 2")
        let a = Renderer().render(row, preferences: ar, unreadInApp: 0)
        #expect(a.title == "تناول جرعتك" && a.body == "اللاكتوز، اليوم الثاني")
        #expect(n.deepLink == "herald://inbox")
        // Only the English text: Arabic readers get it rather than nothing.
        let onlyEn = item(kind: "reminder", payload: #"{"title":"Take your dose"}"#, scheduledAt: utc(2026, 1, 25))
        let b = Renderer().render(onlyEn, preferences: ar, unreadInApp: 0)
        #expect(b.title == "Take your dose")
        #expect(b.body == "لديك تذكير. افتح التطبيق للاطلاع عليه.")
    }

    @Test func genericTextWhenThePayloadHasNone() {
        let n = Renderer().render(item(kind: "system", scheduledAt: utc(2026, 1, 25)), preferences: en, unreadInApp: 4)
        #expect(n.title == "Notification")
        #expect(n.badge == 5)
        let r = Renderer().render(item(kind: "reminder", scheduledAt: utc(2026, 1, 25)), preferences: ar, unreadInApp: 0)
        #expect(r.title == "تذكير")
    }

    /// Seed 001's reminder types each have their own text in every language when the payload has none;
    /// the payload's text still wins.
    @Test(arguments: ["en", "ar", "pt-BR"])
    func eachReminderTypeHasItsOwnText(locale: String) {
        let prefs = Preferences(userId: alice, locale: locale)
        func render(_ payload: String) -> RenderedNotification {
            Renderer().render(item(kind: "reminder", payload: payload, scheduledAt: utc(2026, 1, 25)), preferences: prefs, unreadInApp: 0)
        }
        let generic = render("{}")
        let typed = [
            render(#"{"reminder_type":"daily"}"#), render(#"{"reminder_type":"dose","dose_at":"2026-01-25T10:00:00Z"}"#),
            render(#"{"reminder_type":"washout","washout_event":"start"}"#),
            render(#"{"reminder_type":"washout","washout_event":"end"}"#), render(#"{"reminder_type":"test_start"}"#),
        ]
        #expect(Set(typed.map(\.title)).count == typed.count, "five texts, one per type and washout event")
        #expect(typed.allSatisfy { $0.title != generic.title && !$0.body.isEmpty })
        #expect(render(#"{"reminder_type":"dose","title":"Step 2","body":"now"}"#).title == "Step 2")
        #expect(render(#"{"reminder_type":"no such type"}"#).title == generic.title)
        if locale == "en" { #expect(typed[1].title == "Dose reminder") }
        if locale == "ar" { #expect(typed[1].title == "تذكير بالجرعة") }
        if locale == "pt-BR" { #expect(typed[1].title == "Lembrete de dose") }
    }

    @Test func deepLinksFromThePayloadMustUseTheAppScheme() {
        let own = item(kind: "system", payload: #"{"deep_link":"herald://settings"}"#, scheduledAt: utc(2026, 1, 25))
        #expect(Renderer().render(own, preferences: en, unreadInApp: 0).deepLink == "herald://settings")
        let foreign = item(kind: "system", payload: #"{"deep_link":"javascript:alert(1)"}"#, scheduledAt: utc(2026, 1, 25))
        #expect(Renderer().render(foreign, preferences: en, unreadInApp: 0).deepLink == "herald://inbox")
        let custom = Renderer(options: RenderOptions(deepLinkScheme: "flare"))
        #expect(custom.render(foreign, preferences: en, unreadInApp: 0).deepLink == "flare://inbox")
    }

    @Test func otherLocalesFallBackToEnglishAndLowPriorityIsSilent() {
        let fr = Preferences(userId: alice, locale: "fr")
        let n = Renderer().render(alertRow(priority: .low), preferences: fr, unreadInApp: 0)
        #expect(n.locale == "en")
        #expect(n.title == "Health update")
        #expect(n.sound == nil)
        #expect(Renderer().render(alertRow(), preferences: Preferences(userId: alice, locale: "ar-SA"), unreadInApp: 0).locale == "ar")
    }
}
