import Foundation

/// One day's judged doses of a person, counted: what the adherence score reads of `dose_events`. The
/// reminders phase has the database count them (a row per person and day, however many doses a day
/// holds); `DoseTally(doses:now:)` counts the same from records.
public struct DoseDay: Sendable, Equatable {
    /// Days since 1970-01-01 in UTC of the doses' time: only the days' order matters.
    public var utcDay: Int
    /// Doses due that day, in the period, taken or due at least `AdherenceAnalyzer.zeroCreditMinutes` ago.
    public var judged: Int
    /// Of them, not taken.
    public var missed: Int
    /// Taken within `onTimeMinutes` of their time (credit 100 each).
    public var onTime: Int
    /// Taken more than `onTimeMinutes` and less than `zeroCreditMinutes` off their time, and those
    /// doses' minutes off added up (their credit falls linearly). The rest were taken too late: credit 0.
    public var partial: Int
    public var partialMinutes: Double

    public init(utcDay: Int, judged: Int, missed: Int, onTime: Int, partial: Int, partialMinutes: Double) {
        (self.utcDay, self.judged, self.missed, self.onTime) = (utcDay, judged, missed, onTime)
        (self.partial, self.partialMinutes) = (partial, partialMinutes)
    }

    /// The day's credits (0–100 a dose) added up.
    public var credit: Double {
        let zero = AdherenceAnalyzer.zeroCreditMinutes, onTimeMinutes = AdherenceAnalyzer.onTimeMinutes
        return Double(onTime) * 100 + 100 * (zero * Double(partial) - partialMinutes) / (zero - onTimeMinutes)
    }
}

/// A person's judged doses of the period: counted per day (oldest first), and the latest few
/// (`AdherenceAnalyzer.consistentDoses`, oldest first) for the pre-dose reminder's rule.
public struct DoseTally: Sendable, Equatable {
    public var days: [DoseDay]
    public var latest: [DoseRecord]

    public init(days: [DoseDay] = [], latest: [DoseRecord] = []) {
        self.days = days.sorted { $0.utcDay < $1.utcDay }
        self.latest = latest.sorted { $0.scheduledAt < $1.scheduledAt }
    }

    /// The tally of `doses` at `now`: only the judged ones (`isJudged`), as the reminders phase's query
    /// counts them.
    public init(doses: [DoseRecord], now: Date) {
        let judged = doses.filter { Self.isJudged($0, now: now) }.sorted { $0.scheduledAt < $1.scheduledAt }
        var days: [Int: DoseDay] = [:]
        for dose in judged {
            let day = Int((dose.scheduledAt.timeIntervalSince1970 / 86_400).rounded(.down))
            var d = days[day] ?? DoseDay(utcDay: day, judged: 0, missed: 0, onTime: 0, partial: 0, partialMinutes: 0)
            d.judged += 1
            if let taken = dose.takenAt {
                let off = abs(taken.timeIntervalSince(dose.scheduledAt)) / 60
                if off <= AdherenceAnalyzer.onTimeMinutes {
                    d.onTime += 1
                } else if off < AdherenceAnalyzer.zeroCreditMinutes {
                    d.partial += 1
                    d.partialMinutes += off
                }
            } else {
                d.missed += 1
            }
            days[day] = d
        }
        self.init(days: Array(days.values), latest: Array(judged.suffix(AdherenceAnalyzer.consistentDoses)))
    }

    /// A dose the score judges at `now`: due in the period (from `periodDays + 1` days ago, in elapsed
    /// time) and not in the future, and taken or due at least `zeroCreditMinutes` ago.
    public static func isJudged(_ dose: DoseRecord, now: Date) -> Bool {
        let from = now.addingTimeInterval(-Double(AdherenceAnalyzer.periodDays + 1) * 86_400)
        return dose.scheduledAt >= from && dose.scheduledAt <= now
            && (dose.takenAt != nil || now.timeIntervalSince(dose.scheduledAt) >= AdherenceAnalyzer.zeroCreditMinutes * 60)
    }

    public var judged: Int { days.reduce(0) { $0 + $1.judged } }
    public var missed: Int { days.reduce(0) { $0 + $1.missed } }
}
