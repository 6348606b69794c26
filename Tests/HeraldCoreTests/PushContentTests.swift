import Foundation
import Testing
@testable import HeraldCore

/// Content: pt-BR beside en and ar, the token's locale winning for push, times by locale,
/// the forecast summaries per risk level, and the push contract's silent/image/actions fields.
@Suite struct PushContentTests {
    let en = Preferences(userId: alice, locale: "en")
    let ar = Preferences(userId: alice, locale: "ar")
    let pt = Preferences(userId: alice, locale: "pt-BR")
    let day = utc(2026, 1, 25)

    // MARK: Languages and locale choice

    @Test func languageOfALocale() {
        #expect(Renderer.language(for: "pt-BR") == "pt-BR")
        #expect(Renderer.language(for: "pt") == "pt-BR")
        #expect(Renderer.language(for: "PT_br") == "pt-BR")
        #expect(Renderer.language(for: "ar-SA") == "ar")
        #expect(Renderer.language(for: "en-US") == "en")
        #expect(Renderer.language(for: "de") == "en")
        #expect(Renderer.languages == ["en", "ar", "pt-BR"])
    }

    @Test func everyKindHasPortugueseText() {
        let r = Renderer()
        let prompt = r.render(item(kind: "prompt", scheduledAt: day), preferences: pt, unreadInApp: 0)
        #expect(prompt.title == "Pausa para meditação")
        #expect(prompt.body == "Você está presente?")
        #expect(prompt.locale == "pt-BR")
        let alert = r.render(item(kind: "pattern_alert", about: bob, alert: episodeId, scheduledAt: day), preferences: pt, unreadInApp: 0)
        #expect(alert.title == "Atualização de saúde")
        #expect(alert.body == "Há uma nova atualização sobre alguém da sua família. Abra o app para ver.")
        let reminder = r.render(item(kind: "reminder", scheduledAt: day), preferences: pt, unreadInApp: 0)
        #expect(reminder.title == "Lembrete")
        let system = r.render(item(kind: "system", scheduledAt: day), preferences: pt, unreadInApp: 0)
        #expect(system.title == "Notificação")
        let detailed = Renderer(options: RenderOptions(detailedLockScreen: true)).render(
            item(kind: "pattern_alert", alert: episodeId,
                 payload: #"{"metric_type":"sleep_minutes","pattern_type":"drop_vs_baseline","level":7,"deviation_percent":-25}"#,
                 scheduledAt: day), preferences: pt, unreadInApp: 0)
        #expect(detailed.title == "Alerta: Sono")
        #expect(detailed.body == "Sono: queda de 25% em 7 dias. Abra o app para saber mais.")
    }

    @Test func payloadTextInPortuguese() {
        let row = item(kind: "reminder", payload: #"{"title":"Walk","title_pt":"Caminhada","body":"Time to walk","body_ar":"وقت المشي"}"#,
                       scheduledAt: day)
        let n = Renderer().render(row, preferences: pt, unreadInApp: 0)
        #expect(n.title == "Caminhada")
        #expect(n.body == "Time to walk")  // no body_pt: the plain text
        #expect(Renderer().render(row, preferences: ar, unreadInApp: 0).body == "وقت المشي")
    }

    @Test func theTokensLocaleWinsForPush() {
        let phone = Destination(provider: .expo, address: "ExponentPushToken[x]", locale: "pt-BR")
        #expect(Renderer.locale(profile: "en", destination: phone) == "pt-BR")
        #expect(Renderer.locale(profile: "ar", destination: Destination(provider: .apns, address: "a", locale: "en-US")) == "en-US")
        // No token locale, or not a push destination: the profile's.
        #expect(Renderer.locale(profile: "ar", destination: Destination(provider: .fcm, address: "f")) == "ar")
        #expect(Renderer.locale(profile: "ar", destination: Destination(provider: .fcm, address: "f", locale: " ")) == "ar")
        #expect(Renderer.locale(profile: "ar", destination: Destination(provider: .twilio, address: "+1", locale: "en")) == "ar")
        #expect(Renderer.locale(profile: "ar", destination: nil) == "ar")

        let row = item(kind: "prompt", scheduledAt: day)
        let n = Renderer().render(row, preferences: ar, unreadInApp: 0, destination: phone)
        #expect(n.title == "Pausa para meditação")
        #expect(n.locale == "pt-BR")
        // The old entry point is unchanged: the profile's locale.
        #expect(Renderer().render(row, preferences: ar, unreadInApp: 0).locale == "ar")
        #expect(Renderer().render(row, preferences: ar, unreadInApp: 0, locale: "en").title == "Meditation Check-in")
    }

    // MARK: Time

    @Test func timesByLocale() {
        let evening = LocalTime(hour: 20, minute: 30)
        #expect(Renderer.formatTime(evening, locale: "en-US") == "8:30 PM")
        #expect(Renderer.formatTime(evening, locale: "pt-BR") == "20:30")
        #expect(Renderer.formatTime(evening, locale: "ar") == "20:30")
        #expect(Renderer.formatTime(LocalTime(hour: 0, minute: 5), locale: "en") == "12:05 AM")
        #expect(Renderer.formatTime(LocalTime(hour: 12, minute: 0), locale: "en") == "12:00 PM")
        #expect(Renderer.formatTime(LocalTime(hour: 7, minute: 5), locale: "pt-BR") == "07:05")
        #expect(Renderer.formatTime(LocalTime(hour: 23, minute: 59), locale: "en") == "11:59 PM")
    }

    @Test func reminderTimesInTheRecipientsClock() {
        let row = item(kind: "reminder", payload: #"{"time":"20:30"}"#, scheduledAt: day)
        #expect(Renderer().render(row, preferences: en, unreadInApp: 0).body == "You have a reminder at 8:30 PM. Open the app to see it.")
        #expect(Renderer().render(row, preferences: pt, unreadInApp: 0).body == "Você tem um lembrete às 20:30. Abra o app para ver.")
        #expect(Renderer().render(row, preferences: ar, unreadInApp: 0).body.contains("20:30"))
        let placeholder = item(kind: "reminder", payload: #"{"time":"08:00","body":"Dose at {time}","body_pt":"Dose às {time}"}"#,
                               scheduledAt: day)
        #expect(Renderer().render(placeholder, preferences: en, unreadInApp: 0).body == "Dose at 8:00 AM")
        #expect(Renderer().render(placeholder, preferences: pt, unreadInApp: 0).body == "Dose às 08:00")
        // A malformed time is ignored, never a crash.
        let bad = item(kind: "reminder", payload: #"{"time":"25:99","body":"at {time}"}"#, scheduledAt: day)
        #expect(Renderer().render(bad, preferences: en, unreadInApp: 0).body == "at {time}")
    }

    // MARK: Forecasts (seed 004)

    @Test(arguments: [
        ("LOW", "en", "Today's flare risk: LOW - Steady pressure expected. Your body may feel more balanced today."),
        ("MODERATE", "en", "Today's flare risk: MODERATE - Pressure changes ahead. Chinese medicine recommends gentle movement."),
        ("HIGH", "en", "Today's flare risk: HIGH - Significant pressure drop expected. Take extra care today."),
        ("LOW", "ar", "خطر النوبات اليوم: منخفض - يُتوقع ضغط جوي مستقر. قد يشعر جسمك بتوازن أكبر اليوم."),
        ("MODERATE", "ar", "خطر النوبات اليوم: متوسط - تغيّرات في الضغط الجوي قادمة. يوصي الطب الصيني بالحركة اللطيفة."),
        ("HIGH", "ar", "خطر النوبات اليوم: مرتفع - يُتوقع انخفاض كبير في الضغط الجوي. اعتنِ بنفسك جيدًا اليوم."),
        ("LOW", "pt-BR", "Risco de crise hoje: BAIXO - Pressão estável prevista. Seu corpo pode se sentir mais equilibrado hoje."),
        ("MODERATE", "pt-BR", "Risco de crise hoje: MODERADO - Mudanças de pressão à vista. A medicina chinesa recomenda movimentos leves."),
        ("HIGH", "pt-BR", "Risco de crise hoje: ALTO - Queda significativa de pressão prevista. Cuide-se bem hoje."),
    ])
    func forecastFromWeatherCarriesASummary(risk: String, locale: String, expected: String) {
        // What ForecastGenerator enqueues for a forecast made from the weather: a risk level, no summary.
        let row = item(kind: "daily_forecast", payload: #"{"date":"2026-01-25","risk_level":"\#(risk)"}"#, scheduledAt: day)
        let n = Renderer().render(row, preferences: Preferences(userId: alice, locale: locale), unreadInApp: 0)
        #expect(n.body == expected)
        #expect(n.data["risk_level"] == .string(risk))
    }

    @Test func forecastTitleAndOwnSummaryInPortuguese() {
        let row = item(kind: "daily_forecast",
                       payload: #"{"date":"2026-01-25","risk_level":"HIGH","summary":"Big drop","summary_pt":"Grande queda"}"#,
                       scheduledAt: day)
        let n = Renderer().render(row, preferences: pt, unreadInApp: 0)
        #expect(n.title == "Previsão diária de crises")
        #expect(n.body == "Risco de crise hoje: ALTO - Grande queda")
        #expect(Renderer().render(row, preferences: en, unreadInApp: 0).body == "Today's flare risk: HIGH - Big drop")
        // An unknown level has no summary of ours.
        let odd = item(kind: "daily_forecast", payload: #"{"risk_level":"EXTREME"}"#, scheduledAt: day)
        #expect(Renderer().render(odd, preferences: en, unreadInApp: 0).body == "Today's flare risk: EXTREME")
    }

    // MARK: Push contract fields

    @Test func silentByKindOrPayloadFlagButNeverCritical() {
        let silentPrompts = Renderer(options: RenderOptions(silentKinds: ["prompt"]))
        #expect(silentPrompts.render(item(kind: "prompt", scheduledAt: day), preferences: en, unreadInApp: 0).silent)
        #expect(!silentPrompts.render(item(kind: "reminder", scheduledAt: day), preferences: en, unreadInApp: 0).silent)
        #expect(!Renderer().render(item(kind: "prompt", scheduledAt: day), preferences: en, unreadInApp: 0).silent)
        let flagged = item(kind: "system", payload: #"{"silent":true}"#, scheduledAt: day)
        #expect(Renderer().render(flagged, preferences: en, unreadInApp: 0).silent)
        let critical = item(kind: "system", severity: .critical, payload: #"{"silent":true}"#, scheduledAt: day)
        #expect(!Renderer().render(critical, preferences: en, unreadInApp: 0).silent)
    }

    @Test func imageAndActionsPassThrough() {
        let payload = #"""
        {"title":"Dose","image_url":"https://example.com/pill.png","category":"DOSE_CATEGORY",
         "actions":[{"id":"taken","title":"Taken","title_pt":"Tomei","action":"dose_marked_taken"},
                    {"id":"snooze","title":"Later"},{"title":"no id"},{"id":"","title":"empty"}]}
        """#
        let n = Renderer().render(item(kind: "reminder", payload: payload, scheduledAt: day), preferences: pt, unreadInApp: 0)
        #expect(n.imageURL == "https://example.com/pill.png")
        #expect(n.data["image_url"] == "https://example.com/pill.png")
        #expect(n.category == "DOSE_CATEGORY")
        #expect(n.actions == [NotificationAction(id: "taken", title: "Tomei", action: "dose_marked_taken"),
                              NotificationAction(id: "snooze", title: "Later", action: "snooze")])
        #expect(n.data["actions"]?.jsonText.contains("dose_marked_taken") == true)
        // Only https images; the kind's default category otherwise.
        let http = item(kind: "reminder", payload: #"{"image_url":"http://example.com/a.png","category":"bad category!"}"#, scheduledAt: day)
        let m = Renderer().render(http, preferences: en, unreadInApp: 0)
        #expect(m.imageURL == nil && m.data["image_url"] == nil)
        #expect(m.category == "REMINDER_CATEGORY")
        #expect(m.actions.isEmpty && m.data["actions"] == nil)
    }

    @Test func everyKindHasACategory() {
        for kind in Kind.allCases {
            let n = Renderer().render(item(kind: kind.rawValue, scheduledAt: day), preferences: en, unreadInApp: 0)
            #expect(n.category == Renderer.defaultCategory[kind], "\(kind)")
            #expect(n.category != nil)
        }
    }
}
