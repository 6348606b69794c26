import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Roles in a family, as an app user would test them: an admin reads and acts on every member's
/// alerts, a plain member on their own only, and only a family's current admins are sent its alerts.
@Suite struct FamilyRoleTests {
    /// A family of an admin and two plain members, each with an active alert episode.
    struct Family {
        let id = UUID(), admin = UUID(), member = UUID(), other = UUID()
        var alert: [UUID: UUID] = [:]
    }

    static func family(_ db: PGConnection) throws -> Family {
        var fam = Family()
        for (user, role) in [(fam.admin, "admin"), (fam.member, "member"), (fam.other, "member")] {
            try db.execute("insert into user_profiles (user_id) values (\(user))")
            try db.execute("insert into family_members (family_id, user_id, role) values (\(fam.id), \(user), \(role))")
            fam.alert[user] = try db.query("""
                insert into pattern_alert_state (user_id, metric_type, pattern_type, active_since, current_level, severity)
                values (\(user), 'sleep_minutes', 'drop_vs_baseline', current_date - 7, 7, 'attention') returning id
                """).first!["id"].uuid!
        }
        return fam
    }

    /// A plain member reads the alerts about themselves only, and may neither snooze nor dismiss an
    /// alert about another member (the admin's included): refused as a stranger is, and nothing
    /// changes. Their own they may act on; the admin acts on anyone's.
    @Test func aPlainMemberReadsAndActsOnTheirOwnAlertsOnly() throws {
        try SecurityTests.supabase { tdb, db in
            let fam = try Self.family(db)

            try SecurityTests.act(db, as: "authenticated", fam.member)
            let seen = try db.query("select member_user_id from get_family_pattern_alerts(\(fam.id))").compactMap { $0["member_user_id"].uuid }
            #expect(seen == [fam.member], "a plain member sees only the alerts about themselves")
            for target in [fam.other, fam.admin] {
                SecurityTests.refused(db, "select dismiss_pattern_alert(\(fam.alert[target]!))", "a member dismisses another's alert")
                SecurityTests.refused(db, "select snooze_pattern_alert(\(fam.alert[target]!), 30)", "a member snoozes another's alert")
            }
            #expect(try db.query("select dismiss_pattern_alert(\(fam.alert[fam.member]!)) ->> 'success' as ok").first?["ok"].string == "true")

            try SecurityTests.act(db, as: "authenticated", fam.admin)
            let all = try db.query("select member_user_id from get_family_pattern_alerts(\(fam.id))").compactMap { $0["member_user_id"].uuid }
            #expect(Set(all) == [fam.admin, fam.other], "the admin sees every member's undismissed alert")
            #expect(try db.query("select snooze_pattern_alert(\(fam.alert[fam.other]!), 3) ->> 'success' as ok").first?["ok"].string == "true")

            try SecurityTests.owner(db)
            let left = try db.query("""
                select user_id from pattern_alert_state where dismissed_at is null and snooze_until is null
                """).compactMap { $0["user_id"].uuid }
            #expect(left == [fam.admin], "the member's refused calls changed nothing")
        }
    }

    /// A family's alert goes only to the family's admins as they are when it is sent: an admin removed
    /// from the family, or made a plain member, after the alert was enqueued is skipped
    /// `not_family_admin` by the pass; an admin who stays gets it.
    @Test func aRemovedAdminIsNotSentTheFamilysAlerts() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let member = try f.profile()
            let (removed, demoted, stays) = (try f.profile(), try f.profile(), try f.profile())
            try f.family(member, admins: [removed, demoted, stays])
            let episode = try f.alert(member: member, level: 7, severity: "attention")
            var rows: [UUID: UUID] = [:]
            for admin in [removed, demoted, stays] {
                rows[admin] = try f.enqueue(to: admin, kind: "pattern_alert", member: member, alert: episode,
                                            payload: #"{"level":7}"#, at: seedInstant)
            }
            try db.execute("delete from family_members where user_id = \(removed)")
            try db.execute("update family_members set role = 'member' where user_id = \(demoted)")

            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .ok)
            #expect(summary.skipReasons[.notFamilyAdmin] == 2)
            for admin in [removed, demoted] {
                #expect(try f.row(rows[admin]!)["status"].string == "skipped")
                #expect(try f.row(rows[admin]!)["skip_reason"].string == "not_family_admin")
            }
            #expect(try f.row(rows[stays]!)["status"].string == "sent")
            #expect(try f.count("select count(*)::int from inbox where delivered_at is not null or queue_id in (select id from notification_queue where status = 'sent')") == 1,
                    "only the admin who stays has it in their list")
        }
    }

    /// A family alert in a batch whose context is loaded recipient by recipient (another recipient's
    /// could not be read) still finds the family's admins: the admin gets it, only the unreadable
    /// recipient's row fails.
    @Test func aFamilyAlertBesideAnUnreadableRecipientStillReachesItsAdmin() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let (member, admin, broken) = (try f.profile(), try f.profile(), try f.profile(push: true))
            try f.family(member, admins: [admin])
            try f.token(broken)
            let episode = try f.alert(member: member, level: 7, severity: "attention")
            let alert = try f.enqueue(to: admin, kind: "pattern_alert", member: member, alert: episode,
                                      payload: #"{"level":7}"#, at: seedInstant)
            let unreadable = try f.enqueue(to: broken, channel: "push", kind: "message", at: seedInstant)
            try RecipientContextTests.failContextLoad(of: [broken], in: db)

            let (summary, code) = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_PUSH": "log"]).run(now: seedInstant)
            #expect(code == .ok)
            #expect(summary.skipReasons[.notFamilyAdmin] == nil, "\(summary)")
            #expect(try f.row(alert)["status"].string == "sent")
            #expect(try f.row(unreadable)["status"].string == "failed")
        }
    }
}
