/// What the pattern walk (`PatternEvaluator`) found on one day.
///
///     DayEvaluation(date: 2026-03-10, value: 310, baseline: 420, recent: 315, deviationPercent: -25, deviates: true)
///
/// `baseline` is nil until 14 normal days with a value lie on or before d−3; `recent` is nil when fewer
/// than 2 of d−2…d have a value; `deviationPercent` is nil when either is.
public struct DayEvaluation: Sendable, Equatable {
    public var date: LocalDate
    public var value: Double?
    public var baseline: Double?
    public var recent: Double?
    public var deviationPercent: Double?
    public var deviates: Bool

    public init(date: LocalDate, value: Double?, baseline: Double?, recent: Double?, deviationPercent: Double?,
                deviates: Bool) {
        self.date = date
        self.value = value
        self.baseline = baseline
        self.recent = recent
        self.deviationPercent = deviationPercent
        self.deviates = deviates
    }
}

/// The episode that reaches the latest metric date L: the run of consecutive deviating days ending at L.
///
///     // 8 deviating days ending 2026-03-10:
///     EpisodeEvaluation(activeSince: 2026-03-03, duration: 8, level: 7, severity: .attention, …, latest: 2026-03-10)
///
/// `baseline`, `recent` and `deviationPercent` are day L's.
public struct EpisodeEvaluation: Sendable, Equatable {
    public var activeSince: LocalDate
    public var duration: Int
    /// The largest of 3, 7, 14, 21 not above `duration`.
    public var level: Int
    public var severity: Severity
    public var baseline: Double
    public var recent: Double
    public var deviationPercent: Double
    public var latest: LocalDate

    public init(activeSince: LocalDate, duration: Int, level: Int, severity: Severity, baseline: Double,
                recent: Double, deviationPercent: Double, latest: LocalDate) {
        self.activeSince = activeSince
        self.duration = duration
        self.level = level
        self.severity = severity
        self.baseline = baseline
        self.recent = recent
        self.deviationPercent = deviationPercent
        self.latest = latest
    }

    /// The episode levels (days), ascending.
    public static let levels = [3, 7, 14, 21]

    /// The largest level not above `duration`; nil below 3 days.
    ///
    ///     EpisodeEvaluation.level(forDuration: 13)   // 7
    public static func level(forDuration duration: Int) -> Int? {
        levels.last { $0 <= duration }
    }
}
