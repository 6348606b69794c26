import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A follow-up policy is refused when its type is written, with a message naming what is wrong, never
/// at send time; a refused write changes nothing.
@Suite struct FollowUpPolicyTests {
    static func step(after: Int = 600, channels: String = #"["sms"]"#, to: String = "same", until: String = "read",
                     extra: String = "") -> String {
        #"{"after_seconds": \#(after), "channels": \#(channels), "to": "\#(to)", "until": "\#(until)"\#(extra)}"#
    }

    static func policy(_ steps: [String], loops: Int = 1) -> String {
        #"{"loops": \#(loops), "steps": [\#(steps.joined(separator: ", "))]}"#
    }

    /// Writes `policy` onto a new type and returns the refusal's message, or nil when it was accepted.
    static func refusal(_ db: PGConnection, _ type: String, _ policy: String) -> String? {
        do {
            try db.execute("insert into notification_types (type, follow_up) values (\(type), \(policy)::jsonb)")
            return nil
        } catch let error as PGError {
            #expect(error.sqlState == "23514", "\(error)")
            return error.message
        } catch {
            Issue.record("\(error)")
            return "\(error)"
        }
    }

    /// An unknown channel or recipient, a delay of zero or less, too many steps or loops, an unknown
    /// condition: each refused with the step and the rule named, and the type not written.
    @Test func aHostilePolicyIsRefusedWhenTheTypeIsWritten() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        let cases: [(String, String, String)] = [
            ("pager", Self.policy([Self.step(channels: #"["pager"]"#)]), #"step 1: unknown channel "pager""#),
            ("neighbour", Self.policy([Self.step(), Self.step(to: "neighbour")]), #"step 2: unknown recipient "neighbour""#),
            ("zero_delay", Self.policy([Self.step(after: 0)]), "step 1: after_seconds is 0"),
            ("negative_delay", Self.policy([Self.step(after: -60)]), "step 1: after_seconds is -60"),
            ("many_steps", Self.policy(Array(repeating: Self.step(), count: 7)), "7 steps: at most 6"),
            ("many_loops", Self.policy([Self.step(), Self.step(), Self.step()], loops: 5), "at most 12 steps in all"),
            ("unknown_until", Self.policy([Self.step(until: "seen")]), #"unknown condition "seen""#),
            ("unknown_as", Self.policy([Self.step(extra: #", "as": "nothing_such""#)]), #"sends as unknown type "nothing_such""#),
            ("empty", #"{"steps": []}"#, "non-empty array"),
        ]
        for (type, policy, expected) in cases {
            let message = Self.refusal(db, type, policy)
            #expect(message?.contains(#"follow_up of type "\#(type)" refused"#) == true, "\(type): \(message ?? "accepted")")
            #expect(message?.contains(expected) == true, "\(type): \(message ?? "accepted")")
        }
        #expect(try Fixtures(db: db).count("select count(*)::int from notification_types where follow_up is not null") == 0)
        #expect(Self.refusal(db, "fine", Self.policy([Self.step(), Self.step(to: "next_admin")], loops: 2)) == nil)
    }

    /// A cycle of types — a step of A sending as B, whose own policy sends as A — is refused when the
    /// type that closes it is written, the message naming the cycle; the earlier policy stays.
    @Test func aCycleOfTypesIsRefused() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        try db.execute("insert into notification_types (type) values ('check_a'), ('check_b'), ('check_c')")
        try db.execute("""
            update notification_types set follow_up = \(Self.policy([Self.step(extra: #", "as": "check_b""#)]))::jsonb
             where type = 'check_a'
            """)
        try db.execute("""
            update notification_types set follow_up = \(Self.policy([Self.step(extra: #", "as": "check_c""#)]))::jsonb
             where type = 'check_b'
            """)
        do {
            try db.execute("""
                update notification_types set follow_up = \(Self.policy([Self.step(extra: #", "as": "check_a""#)]))::jsonb
                 where type = 'check_c'
                """)
            Issue.record("a cycle was accepted")
        } catch let error as PGError {
            #expect(error.sqlState == "23514")
            #expect(error.message.contains("a cycle of types: check_c → check_a → check_b → check_c"), "\(error.message)")
        }
        #expect(try db.query("select follow_up from notification_types where type = 'check_c'").first?["follow_up"].string == nil)
    }

    /// A type without a policy is written and enqueued as before: its rows are not marked, and the
    /// policy column defaults to none.
    @Test func theDefaultIsNoPolicy() throws {
        let tdb = try TestDatabase.create()
        defer { tdb.drop() }
        let db = try tdb.connect()
        try db.execute("insert into notification_types (type) values ('appointment')")
        #expect(try db.query("select follow_up from notification_types where type = 'appointment'").first?["follow_up"].string == nil)
        #expect(try Fixtures(db: db).count("select count(*)::int from notification_types where follow_up is not null") == 0)
    }
}
