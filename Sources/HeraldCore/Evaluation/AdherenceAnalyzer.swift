import Foundation

/// One dose of a test step (`dose_events`): when it was due and when it was taken (nil: not taken).
public struct DoseRecord: Sendable, Equatable {
    public var scheduledAt: Date
    public var takenAt: Date?

    public init(scheduledAt: Date, takenAt: Date? = nil) {
        self.scheduledAt = scheduledAt
        self.takenAt = takenAt
    }
}

/// How well a person keeps up with their logs and doses over the period, with the two facts the
/// recommendation reads.
public struct AdherenceScore: Sendable, Equatable {
    /// Consecutive local days with a log, ending today (when logged today) or yesterday.
    public var dailyLogStreak: Int
    /// 0–100: how close to their time the period's doses were taken; nil when no dose was due.
    public var doseTimingAccuracy: Int?
    /// Reminder opportunities the person did not act on: completed days without a log, doses not taken.
    public var missedReminders: Int
    /// Completed days of the period plus the doses due in it.
    public var totalReminders: Int
    /// 0–100: 70 % the share of completed days logged, 30 % dose timing (100 % days when no dose was due).
    public var overallScore: Int
    /// The period: its first and last completed local dates (today is not complete).
    public var periodStart: LocalDate
    public var periodEnd: LocalDate
    /// Of the last 7 completed local days, how many have no log.
    public var missedLogsLast7Days: Int
    /// The last `consistentDoses` doses were each taken within `onTimeMinutes` of their time.
    public var consistentDoseTiming: Bool
    /// Whether today has a log already (the daily reminder's "already done" check).
    public var loggedToday: Bool
    public var loggedYesterday: Bool
    /// The reminders design's patterns (`AdherencePatterns`): the daily logs' always, the dose timing's
    /// when enough doses were judged.
    public var patterns: [AdherencePattern] = []

    /// The first declining pattern confident enough to bring full frequency back.
    public var decline: AdherencePattern? {
        patterns.first { $0.type == .declining && $0.confidence >= AdherencePatterns.actOnDecline }
    }

    public var json: JSONValue {
        ["daily_log_streak": .number(Double(dailyLogStreak)),
         "dose_timing_accuracy": doseTimingAccuracy.map { .number(Double($0)) } ?? .null,
         "missed_reminders": .number(Double(missedReminders)),
         "total_reminders": .number(Double(totalReminders)),
         "overall_score": .number(Double(overallScore)),
         "period": ["start": .string(periodStart.description), "end": .string(periodEnd.description)],
         "missed_logs_last_7_days": .number(Double(missedLogsLast7Days)),
         "consistent_dose_timing": .bool(consistentDoseTiming),
         "logged_today": .bool(loggedToday),
         "patterns": .array(patterns.map(\.json))]
    }
}

/// Adaptive reminder frequency from adherence: a pure function of the person's logs and doses (counted
/// per day, `DoseTally`).
///
///     let score = AdherenceAnalyzer.score(today: day("2026-02-08"), logDates: logged, doses: doses, now: now)
///     let frequency = AdherenceAnalyzer.recommend(score, current: .full)       // .reduced after 7 logged days
///     AdherenceAnalyzer.shouldSend(.daily, frequency: frequency, score: score)  // false when logged today
///
/// Thresholds:
/// - the period is the 14 completed local days before today;
/// - a dose taken within 15 minutes of its time scores 100, 2 hours or more (or not taken, once 2 hours
///   have passed) scores 0, linearly between; a dose less than 2 hours old and not yet taken is not counted;
/// - **full → reduced**: a log streak of 7 days; **→ minimal**: a streak of 14 days and dose timing of
///   at least 90 (or no doses); **→ full**: 2 or more of the last 7 completed days without a log, or a
///   declining pattern (logs or dose timing, `AdherencePatterns`) of confidence 0.5 or more.
///   Otherwise the current frequency stays (one missed day changes nothing);
/// - the pre-dose reminder is skipped while the last 3 doses were each taken within 15 minutes of their time.
public enum AdherenceAnalyzer {
    public static let periodDays = 14
    public static let reducedStreak = 7
    public static let minimalStreak = 14
    public static let minimalDoseAccuracy = 90
    public static let restoreMissedLogs = 2
    public static let onTimeMinutes = 15.0
    public static let zeroCreditMinutes = 120.0
    public static let consistentDoses = 3

    /// The score from dose records: counted as the reminders phase counts them (`DoseTally`).
    public static func score(today: LocalDate, logDates: Set<LocalDate>, doses: [DoseRecord], now: Date) -> AdherenceScore {
        score(today: today, logDates: logDates, tally: DoseTally(doses: doses, now: now))
    }

    /// The score from the period's log dates and its judged doses counted per day: what is read is
    /// bounded by the days of the period, not by the doses recorded.
    public static func score(today: LocalDate, logDates: Set<LocalDate>, tally: DoseTally) -> AdherenceScore {
        let periodEnd = today.adding(days: -1)
        let periodStart = today.adding(days: -periodDays)
        let completed = (1...periodDays).map { today.adding(days: -$0) }
        let loggedDays = completed.filter { logDates.contains($0) }.count
        let missedLast7 = (1...7).filter { !logDates.contains(today.adding(days: -$0)) }.count
        let loggedToday = logDates.contains(today)

        var streak = 0
        var d = loggedToday ? today : today.adding(days: -1)
        while logDates.contains(d) { streak += 1; d = d.adding(days: -1) }

        let judged = tally.judged
        let credits = tally.days.reduce(0.0) { $0 + $1.credit }
        let accuracy = judged == 0 ? nil : Int((credits / Double(judged)).rounded())
        let consistent = tally.latest.count == consistentDoses && tally.latest.allSatisfy { dose in
            guard let taken = dose.takenAt else { return false }
            return abs(taken.timeIntervalSince(dose.scheduledAt)) <= onTimeMinutes * 60
        }

        let logRate = 100.0 * Double(loggedDays) / Double(periodDays)
        let overall = accuracy.map { 0.7 * logRate + 0.3 * Double($0) } ?? logRate
        let dosePattern = AdherencePatterns.doses(days: tally.days.map { (count: $0.judged, credit: $0.credit) })
        let patterns = [AdherencePatterns.logs(today: today, logDates: logDates)] + [dosePattern].compactMap { $0 }
        return AdherenceScore(
            dailyLogStreak: streak, doseTimingAccuracy: accuracy,
            missedReminders: (periodDays - loggedDays) + tally.missed, totalReminders: periodDays + judged,
            overallScore: Int(overall.rounded()), periodStart: periodStart, periodEnd: periodEnd,
            missedLogsLast7Days: missedLast7, consistentDoseTiming: consistent,
            loggedToday: loggedToday, loggedYesterday: logDates.contains(today.adding(days: -1)), patterns: patterns)
    }

    /// The reminder frequency the score earns, given the current one for the "otherwise stay" rule.
    public static func recommend(_ s: AdherenceScore, current: NotificationFrequency = .full) -> NotificationFrequency {
        if s.missedLogsLast7Days >= restoreMissedLogs || s.decline != nil { return .full }
        if s.dailyLogStreak >= minimalStreak, (s.doseTimingAccuracy ?? 100) >= minimalDoseAccuracy { return .minimal }
        if s.dailyLogStreak >= reducedStreak { return current == .minimal ? .minimal : .reduced }
        return current
    }

    /// Whether a reminder of `type` goes out at `frequency`:
    /// - washout and test-start notifications always (each happens once);
    /// - a dose reminder unless the dose timing is consistent (the pre-dose reminder is not needed);
    /// - a daily reminder: `full` always; `reduced` unless the person logged today already; `minimal`
    ///   only when they did not log yesterday and have not logged today.
    public static func shouldSend(_ type: ReminderType, frequency: NotificationFrequency, score: AdherenceScore) -> Bool {
        switch type {
        case .washout, .testStart: return true
        case .dose: return !score.consistentDoseTiming
        case .daily:
            switch frequency {
            case .full: return true
            case .reduced: return !score.loggedToday
            case .minimal: return !score.loggedToday && !score.loggedYesterday
            }
        }
    }
}
