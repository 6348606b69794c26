import Foundation
import Testing
@testable import HeraldCore

/// What a sender's payload (the server-side send, `send_notification`) puts on the device beyond its
/// text: its own `data` keys, the badge grown by `badge_increment`, the sound it asks for; and its text in
/// the device's language, falling back to English.
@Suite struct SenderPayloadTests {
    let en = Preferences(userId: alice, locale: "en")
    let ar = Preferences(userId: alice, locale: "ar")
    let sent = #"{"title_en":"New Assignment","title_ar":"تكليف جديد","body_en":"Germany dossier","body_ar":"ملف ألمانيا","deep_link":"intldossier://dossiers/660e","data":{"dossier_id":"660e","count":3,"nested":{"a":[1,2]},"queue_id":"forged"},"badge_increment":2,"sound":"default"}"#

    func row(_ payload: String, kind: String = "assignment", priority: Priority = .high) -> QueueItem {
        item(kind: kind, priority: priority, payload: payload, scheduledAt: utc(2026, 1, 25))
    }

    /// The sender's data keys reach the device as they were sent, beside `notification_type` and
    /// `notification_id`; a key of herald's own (here `queue_id`) keeps herald's value.
    @Test func theSendersDataTravelsBesideTheNotificationsTypeAndId() {
        let r = Renderer(options: RenderOptions(deepLinkScheme: "intldossier"))
        let item = row(sent)
        let n = r.render(item, preferences: en, unreadInApp: 0)
        let id = item.id.uuidString.lowercased()
        #expect(n.data["dossier_id"] == .string("660e"))
        #expect(n.data["count"] == .number(3))
        #expect(n.data["nested"] == .object(["a": .array([.number(1), .number(2)])]))
        #expect(n.data["notification_type"] == .string("assignment"))
        #expect(n.data["notification_id"] == .string(id))
        #expect(n.data["queue_id"] == .string(id), "herald's key wins over the sender's")
        #expect(n.data["deep_link"] == .string("intldossier://dossiers/660e"))
        #expect(n.deepLink == "intldossier://dossiers/660e")
    }

    /// A deep link in another scheme than the app's is not followed: the inbox's link replaces it.
    @Test func aDeepLinkOutsideTheAppsSchemeFallsBackToTheInbox() {
        let n = Renderer().render(row(sent), preferences: en, unreadInApp: 0)
        #expect(n.deepLink == "herald://inbox")
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

    /// The badge is the unread count plus the notification's increment (default 1; 0 leaves it).
    @Test func theBadgeGrowsByTheIncrement() {
        let r = Renderer()
        #expect(r.render(row(sent), preferences: en, unreadInApp: 4).badge == 6)
        #expect(r.render(row(#"{"title_en":"x"}"#), preferences: en, unreadInApp: 4).badge == 5)
        #expect(r.render(row(#"{"title_en":"x","badge_increment":0}"#), preferences: en, unreadInApp: 4).badge == 4)
        #expect(r.render(row(#"{"title_en":"x","badge_increment":1e9}"#), preferences: en, unreadInApp: 0).badge == 100)
    }

    /// `sound`: "default", "custom" (the app's file, HERALD_CUSTOM_SOUND), null for none; absent, the
    /// priority decides (a low one plays none).
    @Test func theSoundIsTheOneAskedFor() {
        let r = Renderer(options: RenderOptions(customSound: "chime.caf"))
        #expect(r.render(row(#"{"sound":"custom"}"#), preferences: en, unreadInApp: 0).sound == "chime.caf")
        #expect(r.render(row(#"{"sound":null}"#), preferences: en, unreadInApp: 0).sound == nil)
        #expect(r.render(row(#"{"sound":"default"}"#, priority: .low), preferences: en, unreadInApp: 0).sound == "default")
        #expect(r.render(row(#"{}"#), preferences: en, unreadInApp: 0).sound == "default")
        #expect(r.render(row(#"{}"#, priority: .low), preferences: en, unreadInApp: 0).sound == nil)
    }

    /// A `data` object larger than the send accepts (a row written some other way) is left out, so the
    /// push still fits; the notification's own keys stay.
    @Test func anOversizedDataObjectIsLeftOut() {
        let big = String(repeating: "x", count: Renderer.maxSenderDataBytes)
        let n = Renderer().render(row(#"{"data":{"big":"\#(big)"}}"#), preferences: en, unreadInApp: 0)
        #expect(n.data["big"] == nil)
        #expect(n.data["notification_type"] == .string("assignment"))
    }
}
