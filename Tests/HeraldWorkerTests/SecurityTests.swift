import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// What the app's roles can see and do after `herald migrate` on a database set up like Supabase
/// (sql/008_security.sql): row-level security, grants, helper functions and the RPCs. Device token
/// reassignment is DeviceTokenSecurityTests'; the catalog checks, SchemaCatalogTests'.
@Suite struct SecurityTests {
    /// scripts/supabase-like.sql, the recipe docs/app-contract.md gives for a local Supabase-like
    /// database: the app roles (made once for the whole server, by whichever test gets there first),
    /// `public` granted to them, and default privileges for what is created next.
    static let supabaseLikeScript: URL = TestDatabase.migrationsDirectory.deletingLastPathComponent()
        .appendingPathComponent("scripts/supabase-like.sql")

    /// Runs scripts/supabase-like.sql on `db`, as an operator runs it with psql.
    static func prepareLikeSupabase(_ db: PGConnection) throws {
        try db.executeScript(try String(contentsOf: supabaseLikeScript, encoding: .utf8))
    }

    /// A fresh database prepared as Supabase prepares `public` (scripts/supabase-like.sql: everything
    /// new granted to the app roles by default privileges), then migrated with `migrations` (default:
    /// the repository's sql/). The shared template cannot be used: it may have been built before the
    /// roles existed.
    static func supabase(migrations: Migrator? = nil, _ body: (TestDB, PGConnection) throws -> Void) throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("herald-no-migrations-\(UUID())")
        try withTestDatabase(migrationsDirectory: empty) { tdb in
            let db = try tdb.connect()
            try prepareLikeSupabase(db)
            try (migrations ?? Migrator(directory: TestDatabase.migrationsDirectory)).migrate(db)
            try body(tdb, db)
        }
    }

    /// Switches the session to an app role and caller, as PostgREST does for a request: the JWT's `sub`
    /// and `role` in `request.jwt.claims` (`claimsJSON`), or in the older `request.jwt.claim.*` settings.
    static func act(_ db: PGConnection, as role: String, _ user: UUID?, claimsJSON: Bool = false) throws {
        try db.execute("reset role")
        let sub = user?.uuidString.lowercased() ?? ""
        if claimsJSON {
            let claims = JSONValue.object(["sub": .string(sub), "role": .string(role)]).jsonText
            try db.execute("select set_config('request.jwt.claim.sub', '', false), set_config('request.jwt.claim.role', '', false)")
            try db.execute("select set_config('request.jwt.claims', \(claims), false)")
        } else {
            try db.execute("select set_config('request.jwt.claims', '', false)")
            try db.execute("select set_config('request.jwt.claim.sub', \(sub), false), set_config('request.jwt.claim.role', \(role), false)")
        }
        try db.execute("set role \(identifier: role)")
    }

    /// Back to the owner (herald's own connection), with no request's claims left.
    /// The APNs token `people` registers for `user`: hex, as APNs tokens are.
    static func apnsToken(of user: UUID) -> String {
        user.uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    static func owner(_ db: PGConnection) throws {
        try db.execute("reset role")
        try db.execute("""
            select set_config('request.jwt.claims', '', false), set_config('request.jwt.claim.sub', '', false),
                   set_config('request.jwt.claim.role', '', false)
            """)
    }

    /// Expects the statement to fail with `state` (default 42501, insufficient privilege).
    static func refused(_ db: PGConnection, _ sql: SQL, _ what: String, state: String = "42501",
                        message: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try db.query(sql)
            Issue.record("\(what): expected SQLSTATE \(state), but it succeeded", sourceLocation: sourceLocation)
        } catch let error as PGError {
            #expect(error.sqlState == state, "\(what): \(error)", sourceLocation: sourceLocation)
            if let message {
                #expect(error.message.contains(message), "\(what): \(error)", sourceLocation: sourceLocation)
            }
        } catch {
            Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
        }
    }

    static func tables(_ db: PGConnection) throws -> [String] {
        try db.query("""
            select relname from pg_class
             where relnamespace = 'public'::regnamespace and relkind in ('r', 'p') order by relname
            """).compactMap { $0["relname"].string }
    }

    /// The tables the app may read (its own rows only).
    static let readable: Set<String> = ["user_profiles", "device_tokens", "inbox", "daily_logs", "dose_events"]

    /// Two people, A and B, with a row of their own in every per-user table; one family, A its admin.
    struct People {
        let a = UUID(), b = UUID(), family = UUID()
        var inbox: [UUID: UUID] = [:]
        var queue: [UUID: UUID] = [:]
        var alert: [UUID: UUID] = [:]
    }

    static func people(_ db: PGConnection) throws -> People {
        var p = People()
        for user in [p.a, p.b] {
            try db.execute("insert into user_profiles (user_id, email, phone_e164) values (\(user), 'x@example.com', '+15550100')")
            try db.execute("""
                insert into family_members (family_id, user_id, role) values (\(p.family), \(user), \(user == p.a ? "admin" : "member"))
                """)
            try db.execute("insert into wearable_daily_metrics (user_id, metric_date, steps) values (\(user), '2026-01-01', 1000)")
            try db.execute("insert into pattern_evaluations (user_id, evaluated_through) values (\(user), now())")
            try db.execute("insert into daily_forecasts (user_id, forecast_date) values (\(user), '2026-01-01')")
            try db.execute("insert into prompt_settings (user_id) values (\(user))")
            try db.execute("insert into prompt_schedules (user_id, local_date, prompts) values (\(user), '2026-01-01', 4)")
            try db.execute("insert into reminders (user_id, schedule, local_time) values (\(user), 'daily', '09:00')")
            try db.execute("insert into daily_logs (user_id, log_date) values (\(user), '2026-01-01')")
            try db.execute("insert into dose_events (user_id, related_entity_id, scheduled_at) values (\(user), 'step', now())")
            let alert = try db.query("""
                insert into pattern_alert_state (user_id, metric_type, pattern_type, active_since)
                values (\(user), 'steps', 'drop_vs_baseline', '2026-01-01') returning id
                """).first!["id"].uuid!
            let token = try db.query("""
                insert into device_tokens (user_id, device_token, platform) values (\(user), \(Self.apnsToken(of: user)), 'ios')
                returning id
                """).first!["id"].uuid!
            let queue = try db.query("""
                insert into notification_queue (recipient_user_id, member_user_id, alert_state_id, channel, status)
                values (\(user), \(user), \(alert), 'push', 'sent') returning id
                """).first!["id"].uuid!
            try db.execute("""
                insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination, outcome)
                values (\(queue), 'p', 1, 'push', 'expo', 'd', 'delivered')
                """)
            try db.execute("insert into notification_events (queue_id, event) values (\(queue), 'sent')")
            try db.execute("""
                insert into push_receipts (queue_id, ticket_id, device_token_id) values (\(queue), \(UUID().uuidString), \(token))
                """)
            p.inbox[user] = try db.query("select id from inbox where queue_id = \(queue)").first!["id"].uuid!
            p.queue[user] = queue
            p.alert[user] = alert
        }
        try db.execute("insert into herald_passes (pass_id, started_at) values ('p', now())")
        return p
    }

    @Test func appUsersSeeOnlyTheirOwnRows() throws {
        try Self.supabase { tdb, db in
            let p = try Self.people(db)
            let tables = try Self.tables(db)
            #expect(tables.count >= 19)

            for claimsJSON in [false, true] {
                try Self.act(db, as: "authenticated", p.a, claimsJSON: claimsJSON)
                for table in Self.readable {
                    let rows = try db.query("select user_id from \(identifier: table)")
                    #expect(rows.map { $0["user_id"].uuid } == [p.a], "\(table) as A (claims JSON: \(claimsJSON))")
                    #expect(try db.query("select 1 from \(identifier: table) where user_id = \(p.b)").isEmpty, "\(table)")
                }
                for table in tables where !Self.readable.contains(table) {
                    Self.refused(db, "select * from \(identifier: table)", "select from \(table) as authenticated")
                }
            }

            // Without a caller: nothing.
            try Self.act(db, as: "authenticated", nil)
            for table in Self.readable {
                #expect(try db.query("select 1 from \(identifier: table)").isEmpty, "\(table) without a caller")
            }

            // Writes: only the caller's own preferences, and only through the RPCs otherwise.
            try Self.act(db, as: "authenticated", p.a)
            #expect(try db.execute("update user_profiles set notify_push = true, quiet_hours_action = 'defer'") == 1)
            #expect(try db.execute("update user_profiles set notify_push = true where user_id = \(p.b)") == 0)
            Self.refused(db, "update user_profiles set email = 'attacker@example.com'", "update email")
            Self.refused(db, "update user_profiles set phone_e164 = '+15550199'", "update phone")
            Self.refused(db, "update user_profiles set notify_sms_disabled_reason = null", "update herald's column")
            Self.refused(db, "update user_profiles set user_id = \(p.b)", "update user_id")
            Self.refused(db, "insert into user_profiles (user_id) values (\(UUID()))", "insert profile")
            Self.refused(db, "delete from user_profiles", "delete profile")
            Self.refused(db, "update inbox set title = 'x'", "update inbox")
            Self.refused(db, "update inbox set is_read = true", "mark read directly")
            Self.refused(db, "delete from inbox", "delete inbox")
            Self.refused(db, "insert into device_tokens (user_id, device_token) values (\(p.a), 'x')", "insert token")
            Self.refused(db, "update device_tokens set is_active = true", "update token")
            Self.refused(db, """
                insert into notification_queue (recipient_user_id, channel) values (\(p.b), 'sms')
                """, "enqueue as authenticated")
            Self.refused(db, "select nextval('notification_events_id_seq')", "identity sequence")
            // Logs and doses (what the adherence analyzer reads): the caller's own, insert only.
            #expect(try db.execute("insert into daily_logs (user_id, log_date) values (\(p.a), '2026-01-02')") == 1)
            #expect(try db.execute("insert into dose_events (user_id, related_entity_id, scheduled_at, taken_at) values (\(p.a), 'step', now(), now())") == 1)
            Self.refused(db, "insert into daily_logs (user_id, log_date) values (\(p.b), '2026-01-02')", "log for another user")
            Self.refused(db, "insert into dose_events (user_id, scheduled_at) values (\(p.b), now())", "dose for another user")
            Self.refused(db, "update daily_logs set log_date = '2026-01-03'", "update a log")
            Self.refused(db, "delete from dose_events", "delete a dose")
            // The per-type preferences are the person's; the adaptive frequency is herald's.
            #expect(try db.execute("update user_profiles set dose_reminder_enabled = false, adaptive_frequency_enabled = true, quiet_hours_allow_critical = false") == 1)
            Self.refused(db, "update user_profiles set current_frequency = 'minimal'", "update current_frequency")
            // The time zone is still checked when the app writes it.
            Self.refused(db, "update user_profiles set timezone = 'Mars/Olympus_Mons'", "bad zone", state: PGError.checkViolation)
            // Spellings PostgreSQL takes but herald cannot read (migration 031): refused at the app's write.
            for zone in ["america/new_york", "CEST", "UTC+3", "GMT+5", "GMT-0"] {
                Self.refused(db, "update user_profiles set timezone = \(zone)", "zone \(zone)", state: PGError.checkViolation)
            }
            for zone in ["UTC", "Etc/GMT+5", "Asia/Kolkata", "America/Argentina/Buenos_Aires"] {
                #expect(try db.execute("update user_profiles set timezone = \(zone)") == 1, "\(zone)")
                #expect(Zone.named(zone) != nil, "herald reads \(zone)")
            }
            #expect(try db.execute("update user_profiles set timezone = 'Asia/Tokyo'") == 1)

            try Self.owner(db)
            let b = try db.query("select notify_push, email, timezone from user_profiles where user_id = \(p.b)").first
            #expect(b?["notify_push"].isNull == true, "never set: the attacker set nothing for B")
            #expect(b?["email"].string == "x@example.com")
            #expect(try db.query("select count(*) from notification_queue").first?[0].int == 2)
            #expect(try db.query("select timezone from user_profiles where user_id = \(p.a)").first?["timezone"].string == "Asia/Tokyo")
        }
    }

    @Test func anonCanNeitherReadNorWriteHeraldTables() throws {
        try Self.supabase { tdb, db in
            let p = try Self.people(db)
            let tables = try Self.tables(db)
            try Self.act(db, as: "anon", nil)
            Self.refused(db, """
                insert into notification_queue (recipient_user_id, channel, payload)
                values (\(p.a), 'sms', '{"body":"Your account is locked, call +1…"}')
                """, "anon enqueue")
            for table in tables {
                Self.refused(db, "select * from \(identifier: table)", "select from \(table) as anon")
                Self.refused(db, "delete from \(identifier: table)", "delete from \(table) as anon")
            }
            // A forged caller does not help without the grants.
            try Self.act(db, as: "anon", p.a)
            for table in tables {
                Self.refused(db, "select * from \(identifier: table)", "select from \(table) as anon with a sub")
            }
            try Self.owner(db)
            #expect(try db.query("select count(*) from notification_queue").first?[0].int == 2)
        }
    }

    /// Every privilege the app roles hold on the tables and sequences of `public`, from the catalog.
    @Test func appRolesHoldOnlyTheGrantsTheAppNeeds() throws {
        try Self.supabase { tdb, db in
            func held(_ role: String) throws -> Set<String> {
                Set(try db.query("""
                    select c.relname || ' ' || p.priv as held
                      from pg_class c
                      cross join unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) as p(priv)
                     where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
                       and (has_table_privilege(\(role)::name, c.oid, p.priv)
                            or (p.priv in ('SELECT', 'INSERT', 'UPDATE', 'REFERENCES')
                                and has_any_column_privilege(\(role)::name, c.oid, p.priv)))
                    union all
                    select c.relname || ' ' || p.priv
                      from pg_class c cross join unnest(array['USAGE', 'SELECT', 'UPDATE']) as p(priv)
                     where c.relnamespace = 'public'::regnamespace and c.relkind = 'S'
                       and has_sequence_privilege(\(role)::name, c.oid, p.priv)
                    """).compactMap { $0["held"].string })
            }
            #expect(try held("anon") == [])
            #expect(try held("authenticated") == [
                "user_profiles SELECT", "user_profiles UPDATE", "device_tokens SELECT", "inbox SELECT",
                "daily_logs SELECT", "daily_logs INSERT", "dose_events SELECT", "dose_events INSERT",
            ])
            let notUpdatable = try db.query("""
                select attname from pg_attribute
                 where attrelid = 'user_profiles'::regclass and attnum > 0 and not attisdropped
                   and not has_column_privilege('authenticated', 'user_profiles'::regclass, attnum, 'UPDATE')
                 order by attname
                """).compactMap { $0["attname"].string }
            #expect(notUpdatable == [
                "adherence_evaluated_at", "adherence_score", "created_at", "current_frequency", "email", "notify_email_disabled_reason", "notify_sms_disabled_reason",
                "notify_whatsapp_disabled_reason", "phone_e164", "quiet_hours_apply_critical", "updated_at", "user_id",
            ])
        }
    }

    static let rpcs: Set<String> = [
        "snooze_pattern_alert", "dismiss_pattern_alert", "get_family_pattern_alerts",
        "register_device_token", "unregister_device_token", "mark_notifications_read",
        // sql/013_app_contract.sql
        "get_notifications", "record_notification_action", "get_notification_history",
        // sql/038_app_reminders.sql
        "schedule_reminder", "reschedule_reminder", "cancel_reminder", "cancel_reminders_by_type", "get_scheduled_reminders",
        // sql/041_daily_forecast_for_the_app.sql
        "get_daily_forecast",
    ]
    /// The backend's functions (sql/036_send_notification.sql): the service role's alone.
    static let serviceRPCs: Set<String> = ["send_notification", "send_notification_status"]

    @Test func helpersAreForTheOwnerAndRPCsForSignedInUsers() throws {
        try Self.supabase { tdb, db in
            let functions = try db.query("""
                select p.proname,
                       has_function_privilege('anon', p.oid, 'EXECUTE') as anon,
                       has_function_privilege('authenticated', p.oid, 'EXECUTE') as authenticated,
                       has_function_privilege('service_role', p.oid, 'EXECUTE') as service_role,
                       exists (select 1 from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                                where a.grantee = 0 and a.privilege_type = 'EXECUTE') as to_public
                  from pg_proc p where p.pronamespace = 'public'::regnamespace
                """)
            let names = Set(functions.compactMap { $0["proname"].string })
            #expect(Self.rpcs.isSubset(of: names) && Self.serviceRPCs.isSubset(of: names))
            #expect(names.contains("herald_can_view_member") && names.contains("herald_local_date"))
            #expect(names.contains("herald_raise") && names.contains("herald_ms"))
            for f in functions {
                let name = f["proname"].string ?? "?"
                #expect(f["anon"].bool == false, "anon can execute \(name)")
                #expect(f["to_public"].bool == false, "PUBLIC can execute \(name)")
                #expect(f["authenticated"].bool == Self.rpcs.contains(name), "authenticated and \(name)")
                if Self.serviceRPCs.contains(name) { #expect(f["service_role"].bool == true, "service_role and \(name)") }
            }

            let (a, b) = (UUID(), UUID())
            try Self.act(db, as: "authenticated", a)
            Self.refused(db, "select herald_can_view_member(\(a), \(b))", "herald_can_view_member", message: "permission denied")
            Self.refused(db, "select herald_local_date(\(a))", "herald_local_date", message: "permission denied")
            Self.refused(db, "select herald_is_timezone('UTC')", "herald_is_timezone", message: "permission denied")
            Self.refused(db, "select herald_restrict_table('inbox')", "herald_restrict_table", message: "permission denied")

            try Self.act(db, as: "anon", a)
            let calls: [(String, SQL)] = [
                ("snooze", "select snooze_pattern_alert(\(UUID()), 3)"),
                ("dismiss", "select dismiss_pattern_alert(\(UUID()))"),
                ("family alerts", "select * from get_family_pattern_alerts(\(UUID()))"),
                ("register", "select register_device_token('ExponentPushToken[abc]', 'ios')"),
                ("unregister", "select unregister_device_token('ExponentPushToken[abc]')"),
                ("mark read", "select mark_notifications_read(\([UUID()])::uuid[])"),
                ("list", "select get_notifications()"),
                ("action", "select record_notification_action(\(UUID()), 'opened')"),
                ("history", "select get_notification_history()"),
                ("forecast", "select get_daily_forecast('2026-01-25')"),
                ("send", "select send_notification('{}')"),
                ("send status", "select send_notification_status(\(UUID()))"),
            ]
            for (what, sql) in calls {
                Self.refused(db, sql, "anon \(what)", message: "permission denied for function")
            }
        }
    }

    @Test func theRPCsWorkForTheCallerAndNobodyElse() throws {
        try Self.supabase { tdb, db in
            let p = try Self.people(db)
            let stranger = UUID()
            try db.execute("insert into user_profiles (user_id) values (\(stranger))")

            // A and B share a family, A its admin: A may snooze or dismiss B's alert; a stranger may not.
            try Self.act(db, as: "authenticated", stranger)
            Self.refused(db, "select snooze_pattern_alert(\(p.alert[p.b]!), 3)", "stranger snoozes")
            Self.refused(db, "select dismiss_pattern_alert(\(p.alert[p.b]!))", "stranger dismisses")
            Self.refused(db, "select * from get_family_pattern_alerts(\(p.family))", "stranger reads the family")
            #expect(try db.query("select mark_notifications_read(\([p.inbox[p.a]!])::uuid[]) ->> 'updated_count' as n")
                .first?["n"].string == "0")
            #expect(try db.query("select unregister_device_token(\(Self.apnsToken(of: p.a))) ->> 'status' as s")
                .first?["s"].string == "not_found")

            try Self.act(db, as: "authenticated", p.a)
            #expect(try db.query("select * from get_family_pattern_alerts(\(p.family))").count == 2)
            #expect(try db.query("select snooze_pattern_alert(\(p.alert[p.b]!), 3) ->> 'success' as ok").first?["ok"].string == "true")
            #expect(try db.query("select dismiss_pattern_alert(\(p.alert[p.a]!)) ->> 'success' as ok").first?["ok"].string == "true")
            #expect(try db.query("select * from get_family_pattern_alerts(\(p.family))").isEmpty)
            let read = try db.query("""
                select mark_notifications_read(\([p.inbox[p.a]!, p.inbox[p.b]!])::uuid[]) ->> 'updated_count' as n
                """).first?["n"].string
            #expect(read == "1")
            #expect(try db.query("select is_read from inbox").map { $0["is_read"].bool } == [true])
            let registered = try db.query("""
                select register_device_token('ExponentPushToken[a1]', 'android') ->> 'status' as s
                """).first?["s"].string
            #expect(registered == "active")
            #expect(try db.query("select device_token from device_tokens where is_active")
                .compactMap { $0["device_token"].string }.sorted() == ["ExponentPushToken[a1]", Self.apnsToken(of: p.a)].sorted())
            #expect(try db.query("select unregister_device_token('ExponentPushToken[a1]') ->> 'status' as s")
                .first?["s"].string == "unregistered")

            try Self.owner(db)
            #expect(try db.query("select is_read from inbox where id = \(p.inbox[p.b]!)").first?["is_read"].bool == false)
            #expect(try db.query("select is_active from device_tokens where device_token = \(Self.apnsToken(of: p.a))")
                .first?["is_active"].bool == true)
        }
    }
}
