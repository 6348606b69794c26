import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// No silent refusal: a request herald will not carry out is refused with what is wrong, and changes
/// nothing; it is never cut short, taken for another mistake, or accepted to fail later.
@Suite struct SilentRefusalTests {
    /// `mark_notifications_read` takes at most 1,000 ids: 1,001 is a `validation_error` that marks
    /// none of them (it used to mark the first 1,000 and say nothing).
    @Test func markingMoreThanAThousandNotificationsReadIsRefusedWhole() throws {
        try SecurityTests.supabase { tdb, db in
            let user = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(user))")
            let entry = try #require(try db.query("""
                insert into inbox (user_id, type, title, body) values (\(user), 'system', 'Hello', 'World') returning id
                """).first?["id"].uuid)
            let others = (0..<1_000).map { _ in UUID() }
            try SecurityTests.act(db, as: "authenticated", user, claimsJSON: true)
            SecurityTests.refused(db, "select mark_notifications_read(\(others + [entry])::uuid[])", "1,001 ids",
                                  state: "PT422", message: "validation_error")
            #expect(try db.query("select is_read from inbox").first?["is_read"].bool == false)
            let marked = try db.query("select mark_notifications_read(\(Array(others.dropFirst()) + [entry])::uuid[]) ->> 'updated_count' as n")
            #expect(marked.first?["n"].string == "1", "1,000 ids are taken")
        }
    }

    /// A field of the wrong type is named as such, not as missing; a missing one is still "required".
    @Test func aSendFieldOfTheWrongTypeIsNamedAsSuch() throws {
        try SecurityTests.supabase { tdb, db in
            let (user, _) = try SendNotificationTests.person(db)
            let cases: [(JSONValue?, String)] = [
                (5, "title_en must be a string, not a number"), (true, "title_en must be a string, not a boolean"),
                (["x"], "title_en must be a string, not an array"), (["a": "b"], "title_en must be a string, not an object"),
                (nil, "title_en is required"),
            ]
            for (value, detail) in cases {
                let error = SendNotificationTests.refusal(db, SendNotificationTests.request(user, ["title_en": value]))
                #expect(error?.message == "invalid_request" && error?.detail?.contains(detail) == true,
                        "\(String(describing: value)): \(error?.detail ?? "accepted")")
            }
            #expect(try SendNotificationTests.count(db, "notification_queue") == 0)
        }
    }

    /// Runs `herald args` against `url`; its exit status and what it wrote to stderr.
    static func herald(_ args: [String], url: String) throws -> (Int32, String) {
        let err = Pipe()
        let p = try HeraldBinary.start(args + ["--quiet"], env: ["DATABASE_URL": url], stderr: err)
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    /// `herald reschedule --at` an instant already past is refused (exit 1): the row would expire
    /// unsent. The row keeps its time.
    @Test func reschedulingToAPastInstantIsRefused() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile()
            let due = Date().addingTimeInterval(3600)
            let id = try f.enqueue(to: user, channel: "sms", at: due)
            let (status, stderr) = try Self.herald(["reschedule", id.uuidString, "--at", "2026-01-25T08:00:00Z"], url: tdb.url)
            #expect(status == 1, "\(stderr)")
            #expect(stderr.contains("in the past"), "\(stderr)")
            let runAfter = try #require(try f.row(id)["run_after"].date)
            #expect(abs(runAfter.timeIntervalSince(due)) < 1)
            let later = ISO8601.string(Date().addingTimeInterval(7200))
            #expect(try Self.herald(["reschedule", id.uuidString, "--at", later], url: tdb.url).0 == 0)
        }
    }

    /// `herald enqueue` refuses, with exit 1 naming what is wrong and adding nothing, a recipient
    /// herald has no profile for and a type that is not in `notification_types`.
    @Test func enqueueRefusesARecipientWithNoProfileAndAnUnknownType() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile()
            let stranger = UUID()
            let unknown = try Self.herald(["enqueue", "--to", stranger.uuidString, "--channel", "in_app", "--body", "Hi"], url: tdb.url)
            #expect(unknown.0 == 1, "\(unknown.1)")
            #expect(unknown.1.contains(stranger.lowercased) && unknown.1.contains("user_profiles"), "\(unknown.1)")
            let bogus = try Self.herald(["enqueue", "--to", user.uuidString, "--channel", "in_app", "--kind", "bogus", "--body", "Hi"],
                                        url: tdb.url)
            #expect(bogus.0 == 1, "\(bogus.1)")
            #expect(bogus.1.contains(#"unknown notification type "bogus""#), "\(bogus.1)")
            #expect(try f.count("select count(*)::int from notification_queue") == 0)
            #expect(try Self.herald(["enqueue", "--to", user.uuidString, "--channel", "in_app", "--body", "Hi"], url: tdb.url).0 == 0)
            #expect(try f.count("select count(*)::int from notification_queue") == 1)
        }
    }
}
