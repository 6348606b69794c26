import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A phone that left an account leaves no readable token there, and a person holds at most
/// `herald_device_limits.max_active_per_person` (10) active devices. Written as the calls of an
/// account that once held the phone, and of one that registers tokens by the thousand.
@Suite struct DeviceTokenLeaveTests {
    static func act(_ db: PGConnection, _ user: UUID) throws { try SecurityTests.act(db, as: "authenticated", user) }

    /// The account's own view of its devices, through row-level security: token, active, reason.
    static func ownRows(_ db: PGConnection, _ user: UUID) throws -> [PGRow] {
        try Self.act(db, user)
        return Array(try db.query("""
            select id, device_token, is_active, deactivated_reason from device_tokens order by created_at, id
            """))
    }

    /// Once the phone moved to B, or A unregistered it, A still sees that the device left (its row and
    /// why), but no longer its token; registering it again brings A's own row back.
    @Test func aFormerAccountSeesThatThePhoneLeftButNotItsToken() throws {
        try SecurityTests.supabase { tdb, db in
            let (a, b) = (UUID(), UUID())
            let (phone, tablet) = ("ExponentPushToken[phone01]", "ExponentPushToken[tablet02]")
            try Self.act(db, a)
            try db.query("select register_device_token(push_token => \(phone), device_type => 'ios', device_name => 'Ana''s phone')")
            try db.query("select register_device_token(push_token => \(tablet), device_type => 'ios')")
            try Self.act(db, b)
            try db.query("select register_device_token(push_token => \(phone), device_type => 'ios')")
            try Self.act(db, a)
            #expect(try db.query("select unregister_device_token(\(tablet)) ->> 'status' as s").first?["s"].string == "unregistered")

            let rows = try Self.ownRows(db, a)
            #expect(rows.map { $0["deactivated_reason"].string } == ["reassigned", "unregistered"])
            #expect(rows.allSatisfy { $0["is_active"].bool == false })
            for row in rows {
                let stored = row["device_token"].string ?? ""
                #expect(!stored.contains("phone01") && !stored.contains("tablet02"), "A reads \(stored)")
            }
            // A signs in on the phone again: A's own row returns; B's keeps only the hash.
            let phoneRow = rows[0]["id"].uuid
            try db.query("select register_device_token(push_token => \(phone), device_type => 'ios')")
            let again = try Self.ownRows(db, a)
            #expect(again.count == 2)
            #expect(again[0]["id"].uuid == phoneRow && again[0]["device_token"].string == phone && again[0]["is_active"].bool == true)
            let bRows = try Self.ownRows(db, b)
            #expect(bRows.count == 1 && bRows[0]["is_active"].bool == false && bRows[0]["device_token"].string != phone)
        }
    }

    /// Registering an eleventh device deactivates the least recently used ('device_limit'); thousands
    /// of registrations keep at most 10 active and 50 inactive rows; the limit is a setting.
    @Test func aPersonHoldsAtMostTenActiveDevices() throws {
        try SecurityTests.supabase { tdb, db in
            let a = UUID()
            try Self.act(db, a)
            for i in 0..<300 {
                try db.query("select register_device_token(push_token => \("ExponentPushToken[t\(i)]"), device_type => 'android')")
            }
            let rows = try Self.ownRows(db, a)
            let active = rows.filter { $0["is_active"].bool == true }.compactMap { $0["device_token"].string }
            #expect(active == (290..<300).map { "ExponentPushToken[t\($0)]" })
            #expect(rows.count == 10 + 50)
            #expect(Set(rows.filter { $0["is_active"].bool == false }.compactMap { $0["deactivated_reason"].string }) == ["device_limit"])

            try SecurityTests.owner(db)
            try db.execute("update herald_device_limits set max_active_per_person = 3")
            try Self.act(db, a)
            try db.query("select register_device_token(push_token => 'ExponentPushToken[t300]', device_type => 'android')")
            #expect(try Self.ownRows(db, a).filter { $0["is_active"].bool == true }.count == 3)
            // The app cannot read or change the limit.
            SecurityTests.refused(db, "select * from herald_device_limits", "read the limits")
            SecurityTests.refused(db, "update herald_device_limits set max_active_per_person = 1000", "raise the limit")
        }
    }
}

/// A row goes to at most `max_active_per_person` of its recipient's devices, the most recently used,
/// however many active rows a backend wrote straight into the table; and its `last_error` stays a
/// sentence however many of them fail.
@Suite struct PushDestinationLimitPassTests: ProviderPassSuite {
    @Test func aRowReachesAtMostTheLimitOfDevicesWithABoundedError() throws {
        try withProviderLab(.fcm) { lab in
            let now = Self.now()
            let user = try lab.f.profile()
            let tokens = (0..<40).map { "fcm-\($0)-" + UUID().uuidString }
            for (i, token) in tokens.enumerated() {
                try lab.f.token(user, token, provider: "fcm")
                try lab.db.execute("update device_tokens set last_used_at = \(now.addingTimeInterval(Double(i - 100))) where device_token = \(token)")
                lab.fcm.script(token, .fcmError(400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                                              message: "The registration token is not a valid FCM registration token " + token))
            }
            let id = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let (summary, code) = Self.pass(lab.url, lab.settings, now: now)
            #expect(code == .ok, "\(summary.error ?? "")")
            let reached = try Self.deliveries(lab.db, id).compactMap { $0["destination"].string }
            #expect(Set(reached) == Set(tokens.suffix(10)), "the 10 most recently used")
            let row = try lab.f.row(id)
            #expect(row["status"].string == "failed")
            #expect((row["last_error"].string ?? "").count <= RowRecord.lastErrorLimit)
        }
    }
}
