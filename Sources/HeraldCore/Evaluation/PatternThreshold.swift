/// Which way a metric has to move away from its baseline to count (seed 000).
public enum PatternType: String, Sendable, CaseIterable {
    /// The recent mean is at least T% below the baseline (sleep, steps, HRV).
    case dropVsBaseline = "drop_vs_baseline"
    /// The recent mean is at least T% above the baseline (resting heart rate).
    case riseVsBaseline = "rise_vs_baseline"
}

/// One line of the thresholds configuration (seed 000's `thresholds.v1.json`).
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

    /// DESIGN §5's defaults.
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
