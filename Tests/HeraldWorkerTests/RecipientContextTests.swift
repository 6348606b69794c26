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
        try withTestDatabase { tdb in
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

    /// Replaces the unread count the context reads with one that fails for `recipients`: a statement
    /// that fails for one person, as a damaged row would make it.
    static func failContextLoad(of recipients: [UUID], in db: PGConnection) throws {
        // A function's body is text, not a statement: the ids are written into it.
        let ids = "'{" + recipients.map(\.lowercased).joined(separator: ",") + "}'"
        try db.execute("""
            create or replace function herald_unread_entries(users uuid[]) returns table (user_id uuid, unread int)
            language plpgsql stable set search_path = public, pg_temp as $$
            #variable_conflict use_column
            begin
              if users && \(unescaped: ids)::uuid[] then
                raise exception 'could not read block 7 of relation inbox';
              end if;
              return query select i.user_id, count(*)::int from inbox i
                            where i.user_id = any(users) and not i.is_read and i.delivered_at is not null
                            group by i.user_id;
            end
            $$
            """)
    }

    /// One recipient whose context cannot be loaded fails their own rows, with a readable last_error,
    /// to be tried again after the backoff; the batch-mates' rows of the same batch are sent.
    @Test func aRecipientWhoseContextCannotBeLoadedFailsAloneAndTheBatchMatesAreSent() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let (broken, fine) = (try f.profile(push: true), try f.profile(push: true))
            try f.token(broken)
            try f.token(fine)
            let brokenRows = try (0..<2).map { _ in try f.enqueue(to: broken, channel: "push", kind: "message", at: seedInstant) }
            let fineRows = try (0..<3).map { _ in try f.enqueue(to: fine, channel: "push", kind: "message", at: seedInstant) }
            try Self.failContextLoad(of: [broken], in: db)

            let (summary, code) = Worker(url: tdb.url, settings: logAll).run(now: seedInstant)
            #expect(code == .ok)
            #expect(summary.batches == 1 && summary.sent == 3 && summary.failed == 2, "\(summary)")
            for id in fineRows { #expect(try f.row(id)["status"].string == "sent") }
            for id in brokenRows {
                let row = try f.row(id)
                #expect(row["status"].string == "failed" && row["permanent"].bool == false)
                #expect(row["last_error"].string == "the recipient's preferences and devices could not be read: P0001: could not read block 7 of relation inbox")
                #expect((row["run_after"].date ?? .distantPast) > seedInstant)
            }
        }
    }

    /// A failure every recipient of the batch meets is no one recipient's: the pass fails as before
    /// and no row is failed for it.
    @Test func aFailureEveryRecipientMeetsFailsThePassNotTheRows() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let people = [try f.profile(push: true), try f.profile(push: true)]
            for p in people { try f.token(p) }
            let rows = try people.map { try f.enqueue(to: $0, channel: "push", at: seedInstant) }
            try Self.failContextLoad(of: people, in: db)

            let (summary, code) = Worker(url: tdb.url, settings: logAll).run(now: seedInstant)
            #expect(code == .database)
            #expect(summary.failed == 0)
            for id in rows { #expect(try f.row(id)["status"].string == "pending") }
        }
    }
}
