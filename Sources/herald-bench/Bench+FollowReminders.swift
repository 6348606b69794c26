import Foundation
import HeraldPostgres
import HeraldTestSupport

/// Section 8's reminders: reminders an app schedules through `schedule_reminder` while a follower
/// (`herald run --follow --only reminders,deliver`) runs, each `ahead` seconds before its time, one
/// every `every` seconds; the latency runs from the reminder's time to the fake APNs's receipt of its
/// push, both read from this process's clock (the database's is the same machine's). The follower
/// makes the reminder's row at its time and sends it in the same round. Beside them wait `background`
/// daily reminders of as many other people, due twelve hours away: each run of the reminders phase
/// reads them all, as it would in an app's database.
extension Bench {
    struct ReminderRun {
        let db: PGConnection
        let apns: FakeAPNs
        let tokens: [(recipient: UUID, token: String)]
        var ahead = 2.0
        var every = 0.1
        var background = 20_000
    }

    /// One follower as a process while `run`'s reminders are scheduled; the latencies in milliseconds
    /// of the pushes received (at most 60 s after the last reminder's time).
    func reminderRound(_ env: [String: String], _ run: ReminderRun) throws -> [Double] {
        try run.db.execute("truncate notification_queue, inbox, push_receipts, reminders cascade")  // no earlier send counts against a rate limit
        try backgroundReminders(run)
        let p = try startFollower(env, only: "reminders,deliver")
        defer { if p.isRunning { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() } }
        let since = Date()
        var times: [String: Date] = [:]
        let start = DispatchTime.now().uptimeNanoseconds
        for (i, t) in run.tokens.enumerated() {
            let due = start + UInt64(Double(i) * run.every * 1e9)
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
            let ms = Int(((Date().timeIntervalSince1970 + run.ahead) * 1000).rounded(.up))
            try run.db.execute("select set_config('request.jwt.claim.sub', \(t.recipient.uuidString.lowercased()), false)")
            _ = try run.db.query("select schedule_reminder('test_start', 'once', at => \(String(ms)))")
            times[t.token] = Date(timeIntervalSince1970: Double(ms) / 1000)
        }
        try run.db.execute("select set_config('request.jwt.claim.sub', '', false)")
        let end = Date().addingTimeInterval(run.ahead + 60)
        var received: [String: Date] = [:]
        while Date() < end && received.count < times.count {
            usleep(50_000)
            for r in run.apns.requests where r.receivedAt >= since && r.path.hasPrefix("/3/device/") {
                received[String(r.path.dropFirst("/3/device/".count))] = r.receivedAt
            }
        }
        return times.compactMap { token, at in received[token].map { $0.timeIntervalSince(at) * 1000 } }
    }

    /// `run.background` people (made once) with a daily reminder each, twelve hours from now in UTC.
    func backgroundReminders(_ run: ReminderRun) throws {
        try run.db.execute("""
            insert into user_profiles (user_id, timezone, notify_push)
            select md5('remind' || g)::uuid, 'UTC', true from generate_series(1, \(run.background)) g
            on conflict do nothing
            """)
        try run.db.execute("""
            insert into reminders (user_id, reminder_type, schedule, local_time)
            select md5('remind' || g)::uuid, 'daily', 'daily', (now() at time zone 'UTC' + interval '12 hours')::time
              from generate_series(1, \(run.background)) g
            """)
        try run.db.execute("analyze reminders")
    }

    /// `herald run --follow --only <only>` as a process with `env`, once its log says it follows.
    func startFollower(_ env: [String: String], only: String) throws -> Process {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("herald-follow-bench-\(UUID()).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let p = Process()
        p.executableURL = herald
        p.arguments = ["run", "--follow", "--only", only, "--deadline", "120", "--batch-size", "100"]
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = try FileHandle(forWritingTo: log)
        try p.run()
        let ready = Date().addingTimeInterval(30)
        while !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("following the queue") {
            guard Date() < ready, p.isRunning else {
                if p.isRunning { kill(p.processIdentifier, SIGTERM) }
                throw BenchError("the follower did not start following")
            }
            usleep(20_000)
        }
        return p
    }
}
