/// Which way a metric has to move away from its baseline to count.
public enum PatternType: String, Sendable, CaseIterable {
    /// The recent mean is at least T% below the baseline (sleep, steps, HRV).
    case dropVsBaseline = "drop_vs_baseline"
    /// The recent mean is at least T% above the baseline (resting heart rate).
    case riseVsBaseline = "rise_vs_baseline"
}

/// One row of the thresholds configuration (`pattern_thresholds`, per HERALD_THRESHOLDS_VERSION).
///
///     PatternThreshold(metric: "steps", pattern: .dropVsBaseline, deviationPercent: 20, minAbsChange: 1000)
///     // steps deviate when the 3-day mean is ≥ 20% and ≥ 1000 steps below the baseline
public struct PatternThreshold: Sendable, Equatable {
    public var metric: String
    public var pattern: PatternType
    /// T, in percent of the baseline (20 means 20%).
    public var deviationPercent: Double
    /// The smallest |recent − baseline| that counts, in the metric's unit.
    public var minAbsChange: Double

    public init(metric: String, pattern: PatternType, deviationPercent: Double, minAbsChange: Double) {
        self.metric = metric
        self.pattern = pattern
        self.deviationPercent = deviationPercent
        self.minAbsChange = minAbsChange
    }

    /// The defaults: a 20 % move of sleep, steps or HRV down, or of resting heart rate up, by at least
    /// 30 minutes, 1,000 steps, 5 ms or 5 beats a minute.
    public static let defaults: [PatternThreshold] = [
        PatternThreshold(metric: "sleep_minutes", pattern: .dropVsBaseline, deviationPercent: 20, minAbsChange: 30),
        PatternThreshold(metric: "steps", pattern: .dropVsBaseline, deviationPercent: 20, minAbsChange: 1000),
        PatternThreshold(metric: "hrv_ms", pattern: .dropVsBaseline, deviationPercent: 20, minAbsChange: 5),
        PatternThreshold(metric: "resting_hr", pattern: .riseVsBaseline, deviationPercent: 20, minAbsChange: 5),
    ]

    /// Whether a recent mean deviates from a baseline by this threshold.
    ///
    /// The deviation is computed as (recent − baseline) × 100 / baseline so that exact boundaries
    /// (320 against 400 is −20%) compare exactly.
    public func deviation(recent: Double, baseline: Double) -> (percent: Double, deviates: Bool)? {
        guard baseline != 0 else { return nil }
        let percent = (recent - baseline) * 100 / baseline
        let beyond = pattern == .dropVsBaseline ? percent <= -deviationPercent : percent >= deviationPercent
        return (percent, beyond && abs(recent - baseline) >= minAbsChange)
    }
}
