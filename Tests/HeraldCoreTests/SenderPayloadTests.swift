import Foundation
import Testing
@testable import HeraldCore

/// What a sender's payload (the server-side send, `send_notification`) puts on the device: its text in
/// the device's language, falling back to English.
@Suite struct SenderPayloadTests {
    let en = Preferences(userId: alice, locale: "en")
    let ar = Preferences(userId: alice, locale: "ar")
    let sent = #"{"title_en":"New Assignment","title_ar":"تكليف جديد","body_en":"Germany dossier","body_ar":"ملف ألمانيا","deep_link":"intldossier://dossiers/660e","data":{"dossier_id":"660e","count":3,"nested":{"a":[1,2]},"queue_id":"forged"},"badge_increment":2,"sound":"default"}"#

    func row(_ payload: String, kind: String = "assignment", priority: Priority = .high) -> QueueItem {
        item(kind: kind, priority: priority, payload: payload, scheduledAt: utc(2026, 1, 25))
    }

    /// The text follows the locale: Arabic for `ar`, English otherwise, and English when the
    /// recipient's own language is missing or empty (never the bare key's absence).
    @Test func theTextFollowsTheLocaleAndFallsBackToEnglish() {
        let r = Renderer()
        let arabic = r.render(row(sent), preferences: ar, unreadInApp: 0)
        #expect(arabic.title == "تكليف جديد" && arabic.body == "ملف ألمانيا")
        let english = r.render(row(sent), preferences: en, unreadInApp: 0)
        #expect(english.title == "New Assignment" && english.body == "Germany dossier")
        let portuguese = r.render(row(sent), preferences: Preferences(userId: alice, locale: "pt-BR"), unreadInApp: 0)
        #expect(portuguese.title == "New Assignment", "no Portuguese text: English")
        let emptyArabic = row(#"{"title_en":"Hello","title_ar":"","body_en":"World","title":"Plain"}"#)
        let fallback = r.render(emptyArabic, preferences: ar, unreadInApp: 0)
        #expect(fallback.title == "Hello", "an empty Arabic title: English before the plain title")
        #expect(fallback.body == "World")
        let plainOnly = r.render(row(#"{"title":"Plain","body":"Text"}"#), preferences: ar, unreadInApp: 0)
        #expect(plainOnly.title == "Plain" && plainOnly.body == "Text")
    }
}
