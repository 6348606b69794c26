import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// The snooze budget: one reminder notification is snoozed at most 3 times, its copies' snoozes
/// included, so snoozing each copy again cannot turn one reminder into a push a minute.
@Suite struct SnoozeBudgetTests {
    typealias RPC = ReminderRPCTests

    /// The attacker's loop: snooze the newest copy of a reminder for one minute as soon as it arrives,
    /// ten times over, with a real pass at each copy's time. Three snoozes are made and sent; the
    /// fourth answers `rescheduled` false with no time, and nothing more is sent.
    @Test func snoozingEachCopyAgainStopsAfterThreeSnoozes() throws {
        try SecurityTests.supabase { tdb, db in
            let f = Fixtures(db: db)
            let a = try f.profile()
            try f.token(a, provider: "expo")
            let worker = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_PUSH": "log", "HERALD_LOG_ADAPTER_FILE": "/dev/null"])
            func pass(_ at: Date) { _ = worker.run(now: at) { $0.phases = [.reminders, .deliver] } }
            let at = ReminderRPCPassTests.minute(days: 0).addingTimeInterval(120)
            let reminder = try RPC.call(db, as: a, "select schedule_reminder('daily', 'once', at => \(ReminderRPCPassTests.ms(at)))")
            let id = try #require(reminder["id"]?.stringValue)
            pass(at)
            func sent() throws -> [PGRow] {
                try db.query("""
                    select id, payload->>'snooze_count' as n from notification_queue
                     where reminder_id = \(id)::uuid and status = 'sent' order by sent_at, id
                    """).map { $0 }
            }
            #expect(try sent().count == 1)

            var answers: [JSONValue] = []
            var clock = at
            for _ in 1...10 {
                let newest = try #require(try sent().last?["id"].uuid)
                let answer = try RPC.call(db, as: a, "select record_notification_action(\(newest), 'snoozed', 1)")
                answers.append(answer)
                guard let until = answer["snoozed_until"]?.intValue else { break }
                clock = max(clock, Date(timeIntervalSince1970: Double(until) / 1000)).addingTimeInterval(1)
                pass(clock)
            }
            #expect(answers.prefix(3).allSatisfy { $0["rescheduled"]?.boolValue == true })
            #expect(answers.count == 4, "the loop ends at the fourth snooze")
            #expect(answers.last?["rescheduled"]?.boolValue == false && answers.last?["snoozed_until"] == .null)
            #expect(try sent().map { $0["n"].string } == [nil, "1", "2", "3"], "the original and three snoozes")
            pass(clock.addingTimeInterval(3600))
            #expect(try f.count("select count(*)::int from notification_queue where reminder_id = \(id)::uuid") == 4)
        }
    }
}
