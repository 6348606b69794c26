import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Prompt settings take effect the day they change (the meditation prompts reschedule on every sync):
/// a change withdraws the prompts not yet sent, the next pass places the rest of the day's prompts by
/// the same algorithm under the new settings, and nothing already sent goes out again.
@Suite struct PromptSettingsTests {
    static let day = LocalDate("2026-01-25")!
    static let london = Zone.named("Europe/London")!   // UTC in January: local times read as UTC

    /// A person in London with 4 prompts a day from 07:00 to 22:00, a device, and every push on the log
    /// adapter; the worker and the fixtures.
    static func person(_ body: (TestDB, Fixtures, Worker, UUID) throws -> Void) throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile(timezone: "Europe/London")
            try f.token(user)
            try f.db.execute("""
                insert into prompt_settings (user_id, prompts_per_day, waking_hour_start, waking_hour_end) values (\(user), 4, 7, 22)
                """)
            try body(tdb, f, Worker(url: tdb.url, settings: ["HERALD_CHANNEL_PUSH": "log", "HERALD_LOG_ADAPTER_FILE": "/dev/null"]), user)
        }
    }

    /// The scheduled instants of the person's prompt rows with `status`, in order.
    static func instants(_ f: Fixtures, _ user: UUID, status: String) throws -> [Date] {
        try f.db.query("""
            select scheduled_at from notification_queue
             where recipient_user_id = \(user) and kind = 'prompt' and status = \(status) order by scheduled_at
            """).compactMap { $0["scheduled_at"].date }
    }

    /// Four a day become eight at noon: the morning's sent prompts stay sent; the afternoon's unsent
    /// ones are withdrawn at once; the pass places the eight-a-day plan's prompts after noon, less the
    /// segments the sent ones used. Turned off at three, the rest is withdrawn and nothing more goes out.
    @Test func aSettingChangedAtNoonReplansTheAfternoonAndTurningPromptsOffWithdrawsThem() throws {
        try Self.person { tdb, f, worker, user in
            let four = PromptSchedule.instants(user: user, date: Self.day, count: 4, wakingStartHour: 7, wakingEndHour: 22, zone: Self.london)
            let eight = PromptSchedule.instants(user: user, date: Self.day, count: 8, wakingStartHour: 7, wakingEndHour: 22, zone: Self.london)
            let noon = instant("2026-01-25T12:00:00Z")

            // The morning: the day planned at 06:00, the morning's prompts sent by noon.
            let (planned, _) = worker.run(now: instant("2026-01-25T06:00:00Z")) { $0.phases = [.prompts] }
            #expect(planned.generated[.prompts] == 4)
            _ = worker.run(now: noon, drain: true) { $0.phases = [.deliver] }
            let morning = try Self.instants(f, user, status: "sent")
            #expect(morning == four.filter { $0 <= noon } && !morning.isEmpty)

            // The app's sync writes the same values again: nothing is withdrawn, nothing planned again.
            try f.db.execute("update prompt_settings set prompts_per_day = 4, updated_at = now() where user_id = \(user)")
            #expect(try Self.instants(f, user, status: "pending") == four.filter { $0 > noon })
            let (same, _) = worker.run(now: noon) { $0.phases = [.prompts] }
            #expect(same.generated[.promptsReplanned] == nil)

            // Eight a day: the unsent prompts are withdrawn by the change itself, before any pass.
            try f.db.execute("update prompt_settings set prompts_per_day = 8 where user_id = \(user)")
            #expect(try Self.instants(f, user, status: "pending").isEmpty)
            #expect(try f.count("""
                select count(*)::int from notification_queue where recipient_user_id = \(user) and skip_reason = 'cancelled'
                """) == four.filter { $0 > noon }.count)

            let (replanned, _) = worker.run(now: noon.addingTimeInterval(30)) { $0.phases = [.prompts] }
            #expect(replanned.generated[.promptsReplanned] == 1)
            let afternoon = Array(eight.dropFirst(morning.count)).filter { $0 >= noon.addingTimeInterval(30) }
            #expect(try Self.instants(f, user, status: "pending") == afternoon)
            #expect(!afternoon.isEmpty && afternoon.allSatisfy { $0 > morning.last! })
            #expect(morning.count + afternoon.count <= 8)
            let keys = try f.db.query("""
                select dedupe_key from notification_queue where recipient_user_id = \(user) and status = 'pending'
                """).compactMap { $0["dedupe_key"].string }
            #expect(keys.allSatisfy { $0.hasPrefix("prompt:\(user.lowercased):2026-01-25:r1:") })
            // A second pass finds the day planned under the settings it has: nothing changes.
            let (again, _) = worker.run(now: noon.addingTimeInterval(60)) { $0.phases = [.prompts] }
            #expect(again.generated[.prompts] == 0 && again.generated[.promptsReplanned] == nil)

            // The afternoon's first prompts go out; at three, prompts are turned off.
            let three = instant("2026-01-25T15:00:00Z")
            _ = worker.run(now: three, drain: true) { $0.phases = [.deliver] }
            try f.db.execute("update prompt_settings set enabled = false where user_id = \(user)")
            #expect(try Self.instants(f, user, status: "pending").isEmpty)
            let (off, _) = worker.run(now: three.addingTimeInterval(30)) { $0.phases = [.prompts] }
            #expect(off.generated[.prompts] == 0 && off.generated[.promptsReplanned] == 1)

            // The evening: nothing more, and nothing went out twice.
            let (evening, _) = worker.run(now: instant("2026-01-25T23:00:00Z"), drain: true) { $0.phases = [.prompts, .deliver] }
            #expect(evening.sent == 0)
            let sent = try Self.instants(f, user, status: "sent")
            #expect(sent == morning + afternoon.filter { $0 <= three })
            #expect(Set(sent).count == sent.count)
            #expect(try f.count("""
                select count(*)::int from notification_trail e join notification_queue q on q.id = e.queue_id
                 where q.recipient_user_id = \(user) and e.event = 'sent'
                """) == sent.count)
        }
    }

    /// A later window at noon (07–22 becomes 13–22) with one prompt already sent: the new plan's first
    /// segment counts as the one used, so the day keeps to its four.
    @Test func aLaterWindowKeepsTheDayToItsCount() throws {
        try Self.person { tdb, f, worker, user in
            let four = PromptSchedule.instants(user: user, date: Self.day, count: 4, wakingStartHour: 7, wakingEndHour: 22, zone: Self.london)
            let later = PromptSchedule.instants(user: user, date: Self.day, count: 4, wakingStartHour: 13, wakingEndHour: 22, zone: Self.london)
            _ = worker.run(now: instant("2026-01-25T06:00:00Z")) { $0.phases = [.prompts] }
            _ = worker.run(now: four[0], drain: true) { $0.phases = [.deliver] }
            #expect(try Self.instants(f, user, status: "sent") == [four[0]])

            try f.db.execute("update prompt_settings set waking_hour_start = 13 where user_id = \(user)")
            _ = worker.run(now: instant("2026-01-25T12:00:00Z")) { $0.phases = [.prompts] }
            #expect(try Self.instants(f, user, status: "pending") == Array(later.dropFirst()))
        }
    }
}
