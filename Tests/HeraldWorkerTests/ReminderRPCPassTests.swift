import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// What the app's reminder RPCs do to real passes: an edit withdraws the rows already enqueued and
/// the reminder comes again at its new time; a weekly reminder goes once a week at its local time across
/// a clock change; a snoozed reminder is sent again, once.
@Suite struct ReminderRPCPassTests {
    typealias RPC = ReminderRPCTests
    let settings = ["HERALD_CHANNEL_PUSH": "log", "HERALD_LOG_ADAPTER_FILE": "/dev/null"]

    /// Unix milliseconds of `date`, as the app sends times.
    static func ms(_ date: Date) -> String { String(Int(date.timeIntervalSince1970 * 1000)) }

    /// An instant on a whole minute, `days` from now.
    static func minute(days: Double) -> Date {
        let t = Date().timeIntervalSince1970 + days * 86_400
        return Date(timeIntervalSince1970: (t / 60).rounded(.down) * 60)
    }

    static func rows(_ db: PGConnection, _ reminder: String?) throws -> [PGRow] {
        try db.query("""
            select q.status, q.skip_reason, q.scheduled_at,
                   (select e.details->>'reason' from notification_events e where e.queue_id = q.id and e.event = 'cancelled') as why
              from notification_queue q where q.reminder_id = \(reminder)::uuid order by q.scheduled_at, q.id
            """).map { $0 }
    }

    @Test func anEditWithdrawsTheRowsAlreadyEnqueuedAndTheReminderComesAgainAtItsNewTime() throws {
        try SecurityTests.supabase { tdb, db in
            let f = Fixtures(db: db)
            let a = try f.profile()
            try f.token(a)
            let worker = Worker(url: tdb.url, settings: settings)
            func pass(_ at: Date, deliver: Bool = false) {
                _ = worker.run(now: at) { $0.phases = deliver ? [.reminders, .deliver] : [.reminders] }
            }

            // A one-off reminder, enqueued and waiting (the pass delivered nothing), is moved two hours on.
            let t1 = Self.minute(days: 1)
            let once = try RPC.call(db, as: a, "select schedule_reminder('test_start', 'once', at => \(Self.ms(t1)))")["id"]?.stringValue
            pass(t1)
            #expect(try Self.rows(db, once).map { $0["status"].string } == ["pending"])
            let t2 = t1.addingTimeInterval(7200)
            let moved = try RPC.call(db, as: a, "select reschedule_reminder(\(once)::uuid, at => \(Self.ms(t2)))")
            #expect(moved["scheduled_time"]?.intValue == Int(Self.ms(t2)))
            var rows = try Self.rows(db, once)
            #expect(rows.map { $0["status"].string } == ["skipped"] && rows.first?["why"].string == "reminder rescheduled")
            pass(t2, deliver: true)
            rows = try Self.rows(db, once)
            #expect(rows.map { $0["status"].string } == ["skipped", "sent"])
            #expect(rows.last?["scheduled_at"].date == t2)
            // What was sent stays sent when the reminder moves again; it goes once more at its new time.
            let t3 = t2.addingTimeInterval(3600)
            _ = try RPC.call(db, as: a, "select reschedule_reminder(\(once)::uuid, at => \(Self.ms(t3)))")
            pass(t3, deliver: true)
            pass(t3.addingTimeInterval(300), deliver: true)
            #expect(try Self.rows(db, once).map { $0["status"].string } == ["skipped", "sent", "sent"])

            // A weekly reminder enqueued on its weekday, moved to the next day: withdrawn, then due there.
            let day = Zone.localDate(t1, in: TimeZone(identifier: "UTC")!).adding(days: 3)
            let due = Zone.instant(of: day, LocalTime(hour: 9, minute: 0), in: TimeZone(identifier: "UTC")!)
            let weekly = try RPC.call(db, as: a, """
                select schedule_reminder('daily', 'weekly', '09:00', \(day.weekday.rawValue))
                """)["id"]?.stringValue
            pass(due)
            #expect(try Self.rows(db, weekly).map { $0["status"].string } == ["pending"])
            let next = day.adding(days: 1).weekday.rawValue
            let rescheduled = try RPC.call(db, as: a, "select reschedule_reminder(\(weekly)::uuid, weekday => \(next))")
            #expect(rescheduled["trigger"]?["weekday"]?.intValue == next && rescheduled["trigger"]?["local_time"]?.stringValue == "09:00")
            #expect(try Self.rows(db, weekly).first?["why"].string == "reminder rescheduled")
            pass(due.addingTimeInterval(3600))
            #expect(try Self.rows(db, weekly).count == 1, "not again on the old weekday")
            pass(due.addingTimeInterval(86_400))
            rows = try Self.rows(db, weekly)
            #expect(rows.map { $0["status"].string } == ["skipped", "pending"])
            #expect(rows.last?["scheduled_at"].date == due.addingTimeInterval(86_400))

            // Cancelling, one or by type, withdraws what waits.
            let daily = try RPC.call(db, as: a, "select schedule_reminder('dose', 'daily', '09:00')")["id"]?.stringValue
            pass(due.addingTimeInterval(86_400 + 1800))
            #expect(try Self.rows(db, daily).map { $0["status"].string } == ["pending"])
            _ = try RPC.call(db, as: a, "select cancel_reminder(\(weekly)::uuid)")
            #expect(try Self.rows(db, weekly).last?["why"].string == "reminder cancelled")
            #expect(try RPC.call(db, as: a, "select cancel_reminders_by_type('dose')")["cancelled_count"]?.intValue == 1)
            #expect(try Self.rows(db, daily).map { $0["skip_reason"].string } == ["cancelled"])
            #expect(try f.count("select count(*)::int from notification_queue where status in ('pending', 'failed')") == 0)
        }
    }

    /// Sunday reminders in London across the spring change (01:30 does not exist on 2026-03-29: due
    /// when the clocks jump) and in New York across the autumn one (01:30 happens twice on 2026-11-01:
    /// due the first time), scheduled through the RPC. The expected instants are the weekly oracle's.
    /// Passes run each day at noon UTC, and a minute before and at each instant the oracle gives.
    @Test(.enabled(if: Tools.pythonWithZoneinfo, "needs python3 with zoneinfo and the system tzdata (scripts/deps.sh installs them)"))
    func aWeeklyReminderGoesOnceAWeekAtItsLocalTimeAcrossTheClockChange() throws {
        try SecurityTests.supabase { tdb, db in
            let f = Fixtures(db: db)
            let london = try f.profile(timezone: "Europe/London")
            let newYork = try f.profile(timezone: "America/New_York")
            func weekly(_ user: UUID, _ time: String) throws -> String {
                try #require(try RPC.call(db, as: user, "select schedule_reminder('daily', 'weekly', \(time), 1)")["id"]?.stringValue)
            }
            let spring = (from: instant("2026-03-21T00:00:00Z"), to: instant("2026-04-06T00:00:00Z"))
            let autumn = (from: instant("2026-10-24T00:00:00Z"), to: instant("2026-11-09T00:00:00Z"))
            let cases: [(id: String, zone: String, time: String, range: (from: Date, to: Date))] = [
                (try weekly(london, "01:30"), "Europe/London", "01:30", spring),
                (try weekly(london, "09:00"), "Europe/London", "09:00", spring),
                (try weekly(newYork, "01:30"), "America/New_York", "01:30", autumn),
            ]
            let answers = try Oracles.weekly(seed: 1, generated: 0, explicit: cases.map {
                "\($0.zone),1,\($0.time),\(Int($0.range.from.timeIntervalSince1970)),\(Int($0.range.to.timeIntervalSince1970))"
            })
            let expected = answers.cases.map { $0.occurrences.map { Date(timeIntervalSince1970: Double($0)) } }
            #expect(expected.map(\.count) == [3, 3, 3])
            #expect(expected[0][1] == instant("2026-03-29T01:00:00Z"), "the oracle agrees: the jump")
            #expect(expected[2][1] == instant("2026-11-01T05:30:00Z"), "the oracle agrees: the first 01:30")

            var passes = Set(expected.flatMap { $0.flatMap { [$0.addingTimeInterval(-60), $0] } })
            for range in [spring, autumn] {
                for d in stride(from: range.from.addingTimeInterval(12 * 3600), to: range.to, by: 86_400) { passes.insert(d) }
            }
            let worker = Worker(url: tdb.url)
            var problems: [String] = []
            for now in passes.sorted() {
                _ = worker.run(now: now) { $0.phases = [.reminders] }
                for (c, times) in zip(cases, expected) {
                    let sent = try Self.rows(db, c.id).compactMap { $0["scheduled_at"].date }
                        .filter { $0 >= c.range.from && $0 <= c.range.to }
                    let owed = times.filter { $0 <= now }
                    if sent != owed { problems.append("\(c.zone) \(c.time) after the pass at \(now): \(sent), expected \(owed)") }
                }
            }
            #expect(problems.isEmpty, "\(problems.prefix(10).joined(separator: "\n"))")
        }
    }

    @Test func aSnoozedReminderIsSentAgainOnceTenMinutesLater() throws {
        try SecurityTests.supabase { tdb, db in
            let f = Fixtures(db: db)
            let a = try f.profile()
            try f.token(a, provider: "expo")
            let worker = Worker(url: tdb.url, settings: settings)
            func pass(_ at: Date) { _ = worker.run(now: at) { $0.phases = [.reminders, .deliver] } }
            let at = Self.minute(days: 0).addingTimeInterval(120)
            let reminder = try RPC.call(db, as: a, "select schedule_reminder('test_start', 'once', at => \(Self.ms(at)), title_en => 'Time to start')")
            let id = reminder["id"]?.stringValue
            pass(at)
            let sent = try #require(try db.query("select id from notification_queue where reminder_id = \(id)::uuid and status = 'sent'").first?["id"].uuid)

            let snoozed = try RPC.call(db, as: a, "select record_notification_action(\(sent), 'snoozed')")
            #expect(snoozed["action"]?.stringValue == "snoozed" && snoozed["rescheduled"]?.boolValue == true)
            let until = try #require(snoozed["snoozed_until"]?.intValue)
            #expect(until - (snoozed["actioned_time"]?.intValue ?? 0) == 10 * 60_000, "ten minutes after the snooze")
            let again = try RPC.call(db, as: a, "select record_notification_action(\(sent), 'snoozed', 30)")
            #expect(again["rescheduled"]?.boolValue == false && again["snoozed_until"]?.intValue == until, "once per notification")
            let copy = try #require(try db.query("""
                select id, payload->>'snoozed_from' as from_id, payload->>'title' as title, notification_group,
                       (select g.notification_group from notification_queue g where g.id = \(sent)) as original_group,
                       (select e.reason from notification_events e where e.queue_id = q.id and e.event = 'enqueued') as why
                  from notification_queue q where q.dedupe_key = \("snooze:" + sent.lowercased)
                """).first)
            #expect(copy["from_id"].string == sent.lowercased && copy["title"].string == "Time to start" && copy["why"].string == "snoozed")
            #expect(copy["notification_group"].string == copy["original_group"].string, "one notification for the rate limits")

            // Sent again at its time — not held back by the hour between two reminders — and once.
            let due = Date(timeIntervalSince1970: Double(until) / 1000)
            pass(due.addingTimeInterval(-60))
            #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(id)::uuid and status = 'sent'") == 1)
            pass(due)
            pass(due.addingTimeInterval(600))
            let sends = try db.query("select id from notification_queue where reminder_id = \(id)::uuid and status = 'sent' order by sent_at")
            #expect(sends.count == 2 && sends.last?["id"].uuid == copy["id"].uuid)
            #expect(try f.count("select count(*)::int from inbox where user_id = \(a)") == 1,
                    "sent twice, one notification in the list")

            // The copy is a notification of its own: snoozed once in turn (here for 30 minutes); cancelling
            // the reminder withdraws that snooze while it waits.
            let second = try RPC.call(db, as: a, "select record_notification_action(\(copy["id"].uuid), 'snoozed', 30)")
            #expect(second["rescheduled"]?.boolValue == true)
            #expect(second["snoozed_until"]?.intValue == (second["actioned_time"]?.intValue ?? 0) + 30 * 60_000)
            _ = try RPC.call(db, as: a, "select cancel_reminder(\(id)::uuid)")
            #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(id)::uuid and status = 'pending'") == 0)

            // A notification no reminder made is only recorded as snoozed.
            let system = try f.enqueue(to: a, channel: "push", kind: "system", at: due)
            pass(due.addingTimeInterval(660))
            #expect(try f.row(system)["status"].string == "sent")
            let plain = try RPC.call(db, as: a, "select record_notification_action(\(system), 'snoozed')")
            #expect(plain["action"]?.stringValue == "snoozed" && plain["rescheduled"]?.boolValue == false && plain["snoozed_until"] == .null)
        }
    }
}
