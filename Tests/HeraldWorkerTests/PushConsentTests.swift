import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A registered device is consent to push (docs/app-contract.md#consent-to-push): a person who never
/// set `user_profiles.notify_push` is pushed once they register a device; one who switched it off is
/// not, whatever they register later; and an upgrade keeps every value a profile held.
@Suite struct PushConsentTests {
    /// A profile as the app's backend makes it, naming no push choice (`push` nil), or with one.
    static func person(_ db: PGConnection, push: Bool? = nil) throws -> UUID {
        let user = UUID()
        try db.execute("insert into user_profiles (user_id) values (\(user))")
        if let push { try db.execute("update user_profiles set notify_push = \(push) where user_id = \(user)") }
        return user
    }

    /// The app registers the person's phone through its RPC, as the signed-in person.
    static func register(_ db: PGConnection, _ user: UUID) throws {
        try SecurityTests.act(db, as: "authenticated", user, claimsJSON: true)
        let token = "ExponentPushToken[\(UUID().uuidString.prefix(22))]"
        #expect(try db.query("select register_device_token(\(token), 'ios') ->> 'status' as s").first?["s"].string == "active")
        try SecurityTests.owner(db)
    }

    /// A reminder on push to `user`, due now, and what one pass on the log adapter made of it.
    static func pushed(_ tdb: TestDB, _ db: PGConnection, to user: UUID) throws -> PGRow {
        let f = Fixtures(db: db)
        let id = try f.enqueue(to: user, channel: "push", kind: "reminder", at: Date())
        try tdb.withoutSpacing()
        _ = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_PUSH": "log", "HERALD_LOG_ADAPTER_FILE": "/dev/null"]).run()
        return try f.row(id)
    }

    /// A person who registered a device and never switched push off is pushed; registering writes no
    /// choice of theirs.
    @Test func aPersonWhoRegisteredADeviceAndNeverSwitchedPushOffIsPushed() throws {
        try SecurityTests.supabase { tdb, db in
            let user = try Self.person(db)
            try Self.register(db, user)
            let row = try Self.pushed(tdb, db, to: user)
            #expect(row["status"].string == "sent", "\(row["skip_reason"].string ?? "")")
            #expect(try db.query("select notify_push from user_profiles where user_id = \(user)").first?["notify_push"].isNull == true)
            // The server-side send answers `scheduled` for them.
            #expect(try SendNotificationTests.send(db, SendNotificationTests.request(user))["status"]?.stringValue == "scheduled")
        }
    }

    /// An explicit off stays off whatever is registered later: the pass skips the row
    /// `channel_disabled`, `herald explain` names the column that decided, and the server-side send
    /// refuses at once with `push_disabled` (PT422), enqueueing nothing.
    @Test func anExplicitOffStaysOffWhateverIsRegisteredLater() throws {
        try SecurityTests.supabase { tdb, db in
            let user = try Self.person(db)
            try SecurityTests.act(db, as: "authenticated", user, claimsJSON: true)
            #expect(try db.execute("update user_profiles set notify_push = false") == 1)
            try SecurityTests.owner(db)
            try Self.register(db, user)
            try Self.register(db, user)

            try SecurityTests.act(db, as: "service_role", nil, claimsJSON: true)
            let refusal = SendNotificationTests.refusal(db, SendNotificationTests.request(user))
            #expect(refusal?.sqlState == "PT422" && refusal?.message == "push_disabled", "\(String(describing: refusal))")
            #expect(refusal?.detail?.contains("user_profiles.notify_push") == true)
            try SecurityTests.owner(db)
            #expect(try SendNotificationTests.count(db, "notification_queue") == 0)

            let row = try Self.pushed(tdb, db, to: user)
            #expect(row["status"].string == "skipped" && row["skip_reason"].string == "channel_disabled")
            let id = try #require(try db.query("select id from notification_queue").first?["id"].uuid)
            let explained = Explain.text(try Explain.report(db, id: id))
            #expect(explained.contains("decided_by: user_profiles.notify_push"), "\(explained)")
            #expect(explained.contains("notify_push: false"), "\(explained)")
        }
    }

    /// The daily forecast is made for a person who never set push and has a device, not for one
    /// without a device nor for one who switched push off.
    @Test func aForecastIsMadeForWhoeverAPushWouldReach() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let (phone, noPhone, off) = (try Self.person(db), try Self.person(db), try Self.person(db, push: false))
            for user in [phone, off] { try Fixtures(db: db).token(user, provider: "expo") }
            for user in [phone, noPhone, off] {
                try db.execute("""
                    insert into daily_forecasts (user_id, forecast_date, risk_level, pressure_change_hpa, forecast_summary)
                    values (\(user), '2026-01-25', 'HIGH', -12, 'Pressure falls fast today.')
                    """)
            }
            _ = Worker(url: tdb.url).run(now: instant("2026-01-25T08:00:00Z")) { $0.phases = [.forecasts] }
            let made = try db.query("select recipient_user_id from notification_queue where kind = 'daily_forecast'")
            #expect(made.compactMap { $0["recipient_user_id"].uuid } == [phone])
        }
    }

    /// An upgrade from migration 48 keeps every value: true stays on, and false, an explicit off or the
    /// former default (they cannot be told apart), stays off after a device is registered. A profile
    /// made after the upgrade holds null (never set) and is pushed once it has a device.
    @Test func anUpgradeKeepsEveryValueAProfileHeld() throws {
        let all = try Migrator(directory: TestDatabase.migrationsDirectory)
        try SecurityTests.supabase(migrations: Migrator(migrations: all.migrations.filter { $0.version <= 48 })) { tdb, db in
            let on = UUID(), off = UUID(), formerDefault = UUID()
            try db.execute("insert into user_profiles (user_id, notify_push) values (\(on), true), (\(off), false)")
            try db.execute("insert into user_profiles (user_id) values (\(formerDefault))")
            try all.migrate(db)

            let held = try db.query("select user_id, notify_push from user_profiles")
            let values = Dictionary(uniqueKeysWithValues: held.compactMap { r in r["user_id"].uuid.map { ($0, r["notify_push"].bool) } })
            #expect(values[on] == true && values[off] == false && values[formerDefault] == false)
            let later = try Self.person(db)
            #expect(try db.query("select notify_push from user_profiles where user_id = \(later)").first?["notify_push"].isNull == true)
            for user in [on, off, formerDefault, later] { try Self.register(db, user) }
            #expect(try Self.pushed(tdb, db, to: later)["status"].string == "sent")
            #expect(try Self.pushed(tdb, db, to: on)["status"].string == "sent")
            #expect(try Self.pushed(tdb, db, to: formerDefault)["skip_reason"].string == "channel_disabled")
            #expect(try Self.pushed(tdb, db, to: off)["skip_reason"].string == "channel_disabled")
        }
    }
}
