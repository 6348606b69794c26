import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldWorker

/// What a pass reads of a batch's recipients cannot be made to fail their batch-mates: a stored value
/// is read within its limit whatever the row holds, and a recipient whose preferences and devices
/// cannot be read has their own rows failed while the others are sent.
@Suite struct RecipientContextTests {
    let logAll = ["HERALD_CHANNEL_PUSH": "log", "HERALD_CHANNEL_EMAIL": "log", "HERALD_CHANNEL_SMS": "log"]

    /// A profile's and a device's locale stored before the limits (2 MB each) are read as their first 35
    /// characters, which keep the language: the pass holds kilobytes, and the push goes out in Arabic.
    @Test func aLocaleStoredBeforeTheLimitIsReadWithinItAndTheLanguageKept() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let f = Fixtures(db: db)
        for sql: SQL in ["alter table user_profiles disable trigger user_profiles_text_lengths",
                         "alter table user_profiles drop constraint user_profiles_locale_length",
                         "alter table device_tokens disable trigger device_tokens_text_lengths",
                         "alter table device_tokens drop constraint device_tokens_locale_length"] {
            try db.execute(sql)
        }
        let huge = "ar-" + String(repeating: "x", count: 2_000_000)
        let user = try f.profile(locale: huge, push: true)
        let token = try f.token(user)
        try db.execute("update device_tokens set locale = \(huge) where id = \(token)")
        let id = try f.enqueue(to: user, channel: "push", kind: "reminder", payload: #"{"reminder_type":"daily"}"#, at: seedInstant)

        let store = QueueStore(db: try tdb.connect(), passId: "p")
        let due = try store.peekDue(limit: 10, now: seedInstant, channels: [.push])
        let ctx = try store.loadContext(for: due, now: seedInstant)
        #expect(ctx.profiles[user]?.locale.count == 35)
        #expect(ctx.deviceTokens[user]?.first?.locale?.count == 35)

        let (summary, code) = Worker(url: tdb.url, settings: logAll).run(now: seedInstant)
        #expect(code == .ok && summary.sent == 1)
        #expect(try f.row(id)["status"].string == "sent")
        let entry = try #require(try db.query("select title, title_ar, title_en from inbox where queue_id = \(id)").first)
        #expect(entry["title"].string == entry["title_ar"].string && entry["title"].string != entry["title_en"].string)
    }
}
