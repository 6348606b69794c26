import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Requests an app makes cheaply stay cheap for the database: a refused time zone is looked up in
/// herald's own table of zone names only, and get_notifications' `type` is bounded before it is split.
@Suite struct CheapRequestTests {
    /// The time zone check refuses from herald_time_zones alone: neither the trigger's function nor
    /// anything it calls reads `pg_timezone_names` (which reads every zone file from disk at each
    /// call). What it refuses and takes is as before.
    @Test func aRefusedTimeZoneIsNotLookedUpInTheZoneFiles() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let body = try db.query("""
                select pg_get_functiondef(t.tgfoid) as body from pg_trigger t
                 where t.tgrelid = 'user_profiles'::regclass and t.tgname = 'user_profiles_timezone_check'
                """).first?["body"].string ?? ""
            #expect(body.contains("herald_time_zones"), "\(body)")
            #expect(!body.contains("pg_timezone_names"), "the refusal path reads the zone files:\n\(body)")

            let user = UUID()
            try db.execute("insert into user_profiles (user_id, timezone) values (\(user), 'America/New_York')")
            for zone in ["Mars/Olympus", "america/new_york", "UTC+3"] {
                SecurityTests.refused(db, "update user_profiles set timezone = \(zone) where user_id = \(user)",
                                      "time zone \(zone.prefix(20))", state: "23514", message: "is not known")
            }
            // One longer than any zone's name is refused by its length first (TextBoundsTests).
            SecurityTests.refused(db, "update user_profiles set timezone = \(String(repeating: "Europe/", count: 10_000)) where user_id = \(user)",
                                  "a 70,000-character zone", state: "PT422", message: "validation_error")
            try db.execute("update user_profiles set timezone = 'Asia/Kolkata' where user_id = \(user)")
            #expect(try db.query("select timezone from user_profiles where user_id = \(user)").first?["timezone"].string == "Asia/Kolkata")
        }
    }

    /// get_notifications' `type` is refused with validation_error when it is longer than 1,024
    /// characters (a 10 MB list included), names more than 20 types, or names a type herald does not
    /// know (`bogus`), as the contract promises, instead of an empty list.
    @Test func aHugeOrUnknownTypeListIsAValidationError() throws {
        try SecurityTests.supabase { tdb, db in
            let user = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(user))")
            try SecurityTests.act(db, as: "authenticated", user)
            let huge = String(repeating: "reminder,", count: 10 * 1024 * 1024 / 9)
            let many = (1...21).map { _ in "reminder" }.joined(separator: ",") + ",prompt," + (1...20).map { "t\($0)" }.joined(separator: ",")
            for (list, what) in [(huge, "a 10 MB list"), ("bogus", "an unknown type"), ("reminder, bogus", "one unknown type"),
                                 (many, "more than 20 names")] {
                SecurityTests.refused(db, "select get_notifications(type => \(list))", what, state: "PT422", message: "validation_error")
            }
            let fine = try AppContractTests.json(db, "select get_notifications(type => 'reminder, prompt,system')")
            #expect(fine["total_count"]?.intValue == 0)
            try SecurityTests.owner(db)
        }
    }
}
