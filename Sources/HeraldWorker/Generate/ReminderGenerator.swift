import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The `reminders` phase: every reminder type becomes queue rows when due, once each. `plan` reads
/// what is due (`ReminderGenerator+Plan.swift`), `write` marks the reminders and enqueues their rows.
///
/// | type | due at | payload adds |
/// |---|---|---|
/// | daily | `local_time` (or the profile's `daily_reminder_time`) each local day, or `at` | `date` |
/// | daily or dose, weekly | `local_time` on each local date that falls on `weekday` | `date` |
/// | dose | the dose (`at`, or `local_time` each day) less `dose_reminder_advance_minutes` (30) | `dose_at` |
/// | washout | `at` (start) and `ends_at` (end): two rows | `washout_event` |
/// | test_start | `at` | |
///
/// Rows carry the reminder (`reminder_id`, so cancelling withdraws them), its related entity, and
/// `reminder_type` in the payload (the decision's per-type toggle and the rate limits' type). Critical
/// reminders are marked critical: the rate limits let them through and quiet hours defer rather than
/// drop them.
///
/// Adaptive frequency: for people with `adaptive_frequency_enabled` and a daily or dose reminder due,
/// the phase scores their adherence (`AdherenceAnalyzer`) from `daily_logs` and `dose_events`, stores
/// `current_frequency` and the score, and records a reminder it holds back as skipped `adaptive_frequency`.
struct ReminderGenerator {
    let db: PGConnection
    let passId: String
    let now: Date
    let logger: Logger
    /// Reads the one-off reminders only (once, and washouts' ends): a follower's run at such a
    /// reminder's instant, when no daily or weekly time has come since its last run.
    var oneOffOnly = false

    struct Due {
        var reminder: UUID
        var user: UUID
        var type: ReminderType
        var notification: NewNotification
    }

    struct Result {
        var enqueued = 0
        /// People with a daily reminder whose time zone herald cannot read (passed over).
        var unknownZones = UnknownZones()
        /// Rows adaptive frequency read (logs, dose days, latest doses): bounded by people × days.
        var adherenceRowsRead = 0
    }

    /// What the read found due, before anything is written: the rows, and per reminder the marks to
    /// set (`last_enqueued_for`, `enqueued_at`, `end_enqueued_at`) with the columns as they were read.
    struct Plan {
        var due: [Due] = []
        /// One object per reminder acted on: its id, its marks (`date`, `once`, `ends`) and the values
        /// read (`schedule`, `reminder_type`, `at`, `ends_at`, `local_time`, `last` as text, `weekday`).
        var marks: [UUID: [String: JSONValue]] = [:]
        var adherence: [UUID: (frequency: NotificationFrequency, score: AdherenceScore)] = [:]
        var result = Result()
    }

    func run() throws -> Result {
        let plan = try plan()
        var result = plan.result
        result.enqueued = try write(plan)
        return result
    }

    /// Marks the planned reminders and enqueues their rows, in one transaction. The app may have
    /// cancelled, disabled, deleted or moved a reminder since `plan` read it (its trigger withdrew
    /// nothing then: the rows did not exist yet). So the marks are set by one statement that acts only on
    /// reminders still enabled, not cancelled, with the schedule, type, times and marks read, and only
    /// the rows of the reminders it returns are enqueued. It also locks them until the commit: an edit
    /// arriving meanwhile waits, and its trigger then withdraws the rows just enqueued. A reminder
    /// passed over is read again by the next pass.
    func write(_ plan: Plan) throws -> Int {
        guard !plan.due.isEmpty else { return 0 }
        let adherence = plan.adherence
        return try db.transaction { db in
            var acted: Set<UUID> = []
            if !plan.marks.isEmpty {
                // In id order, as concurrent passes write them.
                let marks = JSONValue.array(plan.marks.sorted { $0.key.lowercased < $1.key.lowercased }.map { .object($0.value) })
                for row in try db.query("""
                    update reminders r
                       set last_enqueued_for = coalesce(x.date, r.last_enqueued_for),
                           enqueued_at = case when x.once then now() else r.enqueued_at end,
                           end_enqueued_at = case when x.ends then now() else r.end_enqueued_at end,
                           updated_at = now()
                      from jsonb_to_recordset(\(marks.pgJSONText)::jsonb) as x(
                             id uuid, date date, once boolean, ends boolean, schedule text, reminder_type text,
                             at timestamptz, ends_at timestamptz, local_time time, last date, weekday smallint)
                     where r.id = x.id
                       and r.enabled and r.cancelled_at is null
                       and r.schedule = x.schedule and r.reminder_type = x.reminder_type
                       and r.at is not distinct from x.at and r.ends_at is not distinct from x.ends_at
                       and r.local_time is not distinct from x.local_time
                       and r.weekday is not distinct from x.weekday
                       and r.last_enqueued_for is not distinct from x.last
                       and (x.once is not true or r.enqueued_at is null)
                       and (x.ends is not true or r.end_enqueued_at is null)
                    returning r.id
                    """) {
                    if let id = row["id"].uuid { acted.insert(id) }
                }
            }
            if !adherence.isEmpty {
                let scores = JSONValue.array(adherence.map { user, a in
                    ["user_id": .string(user.lowercased), "frequency": .string(a.frequency.rawValue), "score": a.score.json]
                }).jsonText
                try db.execute("""
                    update user_profiles p
                       set current_frequency = x.frequency, adherence_score = x.score,
                           adherence_evaluated_at = \(now), updated_at = now()
                      from jsonb_to_recordset(\(scores)::jsonb) as x(user_id uuid, frequency text, score jsonb)
                     where p.user_id = x.user_id
                    """)
            }
            let rows = plan.due.filter { acted.contains($0.reminder) }.map(\.notification)
            return try Enqueuer.insert(rows, db: db, passId: passId).count
        }
    }

    /// The `reason` of a one-off reminder's row (a daily one's is `daily_reminder` or `dose_reminder`).
    static func reason(_ type: ReminderType, end: Bool) -> String {
        switch type {
        case .daily: "one_off_reminder"
        case .dose: "dose_reminder"
        case .washout: end ? "washout_end" : "washout_start"
        case .testStart: "test_start_reminder"
        }
    }
}
