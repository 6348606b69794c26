import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging

/// Builds the rows a test needs, with readable defaults.
struct Fixtures {
    let db: PGConnection

    @discardableResult
    func profile(_ id: UUID = UUID(), timezone: String = "UTC", locale: String = "en", email: String? = nil,
                 phone: String? = nil, push: Bool = true, inApp: Bool = true, emailOn: Bool = false, sms: Bool = false,
                 championEmail: Bool = true, championSMS: Bool = false,
                 quiet: (String, String)? = nil, level: String = "none", action: String = "skip") throws -> UUID {
        try db.execute("""
            insert into user_profiles (user_id, timezone, locale, email, phone_e164, notify_push, notify_in_app,
                notify_email, notify_sms, champion_notify_email, champion_notify_sms, quiet_hours_start,
                quiet_hours_end, quiet_hours_notification_level, quiet_hours_action)
            values (\(id), \(timezone), \(locale), \(email), \(phone), \(push), \(inApp), \(emailOn), \(sms),
                    \(championEmail), \(championSMS), \(quiet?.0)::time, \(quiet?.1)::time, \(level), \(action))
            """)
        return id
    }

    /// A new token in `provider`'s own shape (APNs hex, Expo's `ExponentPushToken[…]`, else FCM-like).
    static func newToken(provider: String = "apns") -> String {
        let hex = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        switch provider {
        case "apns": return hex + hex
        case "expo": return "ExponentPushToken[\(hex)]"
        default: return "tok-" + hex
        }
    }

    @discardableResult
    func token(_ user: UUID, _ token: String? = nil, provider: String = "apns") throws -> UUID {
        let token = token ?? Self.newToken(provider: provider)
        return try db.query("""
            insert into device_tokens (user_id, device_token, platform, provider) values (\(user), \(token), 'ios', \(provider))
            returning id
            """).first!["id"].uuid!
    }

    @discardableResult
    func alert(member: UUID, level: Int, severity: String, status: String = "active", snoozeUntil: String? = nil,
               dismissed: Bool = false, metric: String = "sleep_minutes") throws -> UUID {
        try db.query("""
            insert into pattern_alert_state (user_id, metric_type, pattern_type, episode_status, active_since,
                current_level, severity, snooze_until, dismissed_at, last_notified_level)
            values (\(member), \(metric), 'drop_vs_baseline', \(status), \(LocalDate(year: 2026, month: 1, day: 1).description)::date
                    + (random() * 300)::int, \(level), \(severity), \(snoozeUntil)::date,
                    case when \(dismissed) then now() end, \(level))
            returning id
            """).first!["id"].uuid!
    }

    @discardableResult
    func enqueue(to recipient: UUID, channel: String = "in_app", kind: String = "system", severity: String? = nil,
                 member: UUID? = nil, alert: UUID? = nil, payload: String = #"{"title":"Hello","body":"World"}"#,
                 at: Date, priority: String = "normal", maxAttempts: Int = 5) throws -> UUID {
        // A family's alert goes to an admin of the member's family, as the patterns phase enqueues it:
        // the recipient is made one (of a family named by the member's id).
        if kind == "pattern_alert", let member, member != recipient {
            try family(member, admins: [recipient])
        }
        return try db.query("""
            insert into notification_queue (recipient_user_id, member_user_id, alert_state_id, channel, kind, severity,
                payload, scheduled_at, run_after, priority, max_attempts)
            values (\(recipient), \(member ?? recipient), \(alert), \(channel), \(kind), \(severity), \(payload)::jsonb,
                    \(at), \(at), \(priority), \(maxAttempts))
            returning id
            """).first!["id"].uuid!
    }

    /// A family of `member` (its id the member's) with `admins`, and `members` besides.
    func family(_ member: UUID, admins: [UUID] = [], members: [UUID] = []) throws {
        try db.execute("""
            insert into family_members (family_id, user_id, role)
            select \(member)::uuid, u, 'member' from unnest(\([member] + members)::uuid[]) u
            union all select \(member)::uuid, u, 'admin' from unnest(\(admins)::uuid[]) u
            on conflict (family_id, user_id) do update set role = excluded.role
            """)
    }

    /// Many rows in one statement.
    func enqueueMany(_ n: Int, to recipients: [UUID], channel: String, kind: String = "system", at: Date) throws {
        try db.execute("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at, run_after)
            select r, r, \(channel), \(kind), jsonb_build_object('title', 'Hello ' || g, 'body', 'Row ' || g), \(at), \(at)
              from generate_series(1, \(n)) g,
                   lateral (select (\(recipients.map(\.uuidString))::uuid[])[1 + (g % \(recipients.count))] as r) x
            """)
    }

    func row(_ id: UUID) throws -> PGRow {
        try db.query("""
            select status, skip_reason, last_error, attempts, permanent, run_after, sent_at, locked_by
              from notification_queue where id = \(id)
            """).first!
    }

    func count(_ sql: SQL) throws -> Int {
        try db.query(sql).first?[0].int ?? -1
    }

    /// Polls a count until it reaches `atLeast`; false after `seconds`.
    func waitFor(_ sql: SQL, atLeast n: Int, seconds: Double = 20) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try count(sql) >= n { return true }
            usleep(20_000)
        }
        return false
    }
}

/// Runs passes in-process against a test database, with settings a test chooses.
struct Worker {
    let url: String
    var settings: [String: String] = [:]

    init(url: String, settings: [String: String] = [:]) {
        self.url = url
        self.settings = settings
    }

    func run(now: Date? = nil, batchSize: Int = 50, maxBatches: Int? = 1, drain: Bool = false,
             dryRun: Bool = false, maxAgeHours: Double = 24, metricsFile: String? = nil,
             configure: (inout PassOptions) -> Void = { _ in }) -> (Summary, ExitCode) {
        var options = PassOptions()
        options.now = now
        options.batchSize = batchSize
        options.maxBatches = drain ? nil : maxBatches
        options.drain = drain
        options.dryRun = dryRun
        options.maxAge = maxAgeHours * 3600
        options.metricsFile = metricsFile
        configure(&options)
        var s = settings
        s["DATABASE_URL"] = url
        var logger = Logger(label: "herald-test")
        logger.logLevel = .warning
        return Runner(settings: Settings(s), options: options, logger: logger).run()
    }
}

/// 2026-01-25 03:00 UTC: seed 000's three-timezone instant.
let seedInstant = ISO8601.parse("2026-01-25T03:00:00Z")!

func instant(_ s: String) -> Date { ISO8601.parse(s)! }

/// Runs `body(0) … body(count - 1)` on `count` threads of their own, released together, and returns
/// when all have finished. Unlike `DispatchQueue.concurrentPerform`, which may run iterations one
/// after another on a busy machine, every body really runs at the same time as the others.
///
///     inParallel(4) { _ in _ = worker.run(now: seedInstant, drain: true) }
func inParallel(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let ready = DispatchGroup()
    let go = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for index in 0..<count {
        ready.enter()
        done.enter()
        let thread = Thread {
            ready.leave()
            go.wait()
            body(index)
            done.leave()
        }
        thread.stackSize = 4 << 20
        thread.start()
    }
    ready.wait()
    for _ in 0..<count { go.signal() }
    done.wait()
}

/// Runs `body` on a thread of its own, so that the test can act while it runs (release a receiver's
/// answers, signal a process); `value()` waits for its result.
///
///     let pass = InBackground { Worker(url: tdb.url).run(now: seedInstant) }
///     #expect(gate.waitUntilHeld(1))
///     gate.open()
///     let (summary, code) = pass.value()
final class InBackground<T: Sendable>: @unchecked Sendable {  // `result` is read and written under `condition`
    private let condition = NSCondition()
    private var result: T?

    init(_ body: @escaping @Sendable () -> T) {
        let thread = Thread { [self] in
            let value = body()
            condition.withLock {
                result = value
                condition.broadcast()
            }
        }
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// The body's result, once it has returned.
    func value() -> T {
        condition.withLock {
            while result == nil { condition.wait() }
            return result!
        }
    }
}

/// Waits until `process` has exited, for at most `seconds`; true when it has.
func waitForExit(_ process: Process, seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    return !process.isRunning
}
