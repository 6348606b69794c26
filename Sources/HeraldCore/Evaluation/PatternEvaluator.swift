/// Pattern alerts from daily health metrics: walk the days from the first value to L (the
/// latest metric date) and find the run of deviating days that reaches L.
///
///     let steps = PatternThreshold.defaults[1]
///     PatternEvaluator.evaluate(values, latest: day("2026-03-10"), threshold: steps)
///     // EpisodeEvaluation(activeSince: 2026-03-03, duration: 8, level: 7, severity: .attention, …) or nil
///
/// The rules, day by day:
/// - a day is *normal* unless it deviates, and only normal days with a value feed the baseline, so an
///   episode never drags its own baseline down. A day without a baseline (too few normal days yet) does
///   not deviate, so it is normal: with a value, it joins the baseline pool;
/// - baseline(d) = median of the latest 28 normal days with a value on or before d−3 (within the 120 days
///   ending at L), needing at least 14 of them;
/// - recent(d) = mean of the values in d−2…d, needing at least 2: one missing day does not break a run,
///   two in a row do;
/// - d deviates when (recent − baseline) / baseline × 100 is at or beyond the threshold in the pattern's
///   direction and |recent − baseline| ≥ the minimum absolute change.
///
/// Values outside the 120 days ending at L and non-finite values are ignored; when a date appears twice,
/// the later pair in `values` wins. Each day costs a constant amount of work (the baseline is a sorted
/// window updated by one insertion and one removal).
public enum PatternEvaluator {
    /// How many days, ending at L, are read.
    public static let windowDays = 120
    /// The baseline's size and the least it needs.
    public static let baselineDays = 28
    public static let minBaselineDays = 14
    /// A day's baseline ends this many days before it.
    public static let baselineGap = 3

    /// Every day from the first day with a value to `latest`, in order.
    public static func days(_ values: [(LocalDate, Double)], latest: LocalDate,
                            threshold: PatternThreshold) -> [DayEvaluation] {
        var out: [DayEvaluation] = []
        walk(values, latest: latest, threshold: threshold) { s in
            out.append(DayEvaluation(date: LocalDate(daysSinceEpoch: s.day), value: s.value.isNaN ? nil : s.value,
                                     baseline: s.baseline, recent: s.recent, deviationPercent: s.deviation,
                                     deviates: s.deviates))
        }
        return out
    }

    /// The episode ending at L, or nil when the run of deviating days ending at L is shorter than 3.
    public static func evaluate(_ values: [(LocalDate, Double)], latest: LocalDate,
                                threshold: PatternThreshold) -> EpisodeEvaluation? {
        evaluate(window: window(values, latest: latest), latest: latest, threshold: threshold)
    }

    /// The same, from the window itself: `windowDays` values, the last one L's, NaN where a day has
    /// none. A reader of many users fills such windows in place, with no pairs to build.
    ///
    ///     var window = [Double](repeating: .nan, count: PatternEvaluator.windowDays)
    ///     window[PatternEvaluator.windowDays - 1] = 310   // L's value
    public static func evaluate(window: some RandomAccessCollection<Double>, latest: LocalDate,
                                threshold: PatternThreshold) -> EpisodeEvaluation? {
        Array(window).withUnsafeBufferPointer { evaluate(window: $0, latest: latest, threshold: threshold) }
    }

    /// The same for a slice of a reader's memory (`MetricWindows`): walked where it is, not copied.
    public static func evaluate(window: ArraySlice<Double>, latest: LocalDate,
                                threshold: PatternThreshold) -> EpisodeEvaluation? {
        window.withUnsafeBufferPointer { evaluate(window: $0, latest: latest, threshold: threshold) }
    }

    static func evaluate(window: UnsafeBufferPointer<Double>, latest: LocalDate,
                         threshold: PatternThreshold) -> EpisodeEvaluation? {
        var runStart: Int? = nil
        var last: Step? = nil
        walk(window: window, latest: latest, threshold: threshold) { s in
            runStart = s.deviates ? (runStart ?? s.day) : nil
            last = s
        }
        guard let l = last, let start = runStart, let baseline = l.baseline, let recent = l.recent,
              let deviation = l.deviation else { return nil }
        let duration = l.day - start + 1
        guard let level = EpisodeEvaluation.level(forDuration: duration) else { return nil }
        return EpisodeEvaluation(activeSince: LocalDate(daysSinceEpoch: start), duration: duration, level: level,
                                 severity: Severity(level: level), baseline: baseline, recent: recent,
                                 deviationPercent: deviation, latest: latest)
    }

    /// How many metric values, as read (a day without a value is absent, not NaN), are unusable: NaN
    /// or ±infinity, e.g. a `numeric` NaN or one too large for a Double. The evaluation treats them as
    /// missing days, deterministically; this says that it did, so a caller can report the user's
    /// poisoned metrics. (Huge finite values such as 1e308 are used as they are: a mean or a percentage
    /// may then be infinite, which never traps; payloads write it as null.)
    ///
    ///     PatternEvaluator.unusableValues(in: [310, .nan, .infinity])   // 2
    public static func unusableValues(in window: some Sequence<Double>) -> Int {
        window.reduce(0) { $0 + ($1.isFinite ? 0 : 1) }
    }

    /// One day of the walk; `day` counts days since 1970-01-01 and a missing value is NaN.
    struct Step {
        var day: Int
        var value: Double
        var baseline: Double?
        var recent: Double?
        var deviation: Double?
        var deviates: Bool
    }

    /// The window of `windowDays` values ending at `latest` (NaN where there is none): the values
    /// outside it and the non-finite ones are left out; of a day given twice, the later value wins.
    static func window(_ values: [(LocalDate, Double)], latest: LocalDate) -> [Double] {
        let n = windowDays
        let day0 = latest.daysSinceEpoch - (n - 1)
        var value = [Double](repeating: .nan, count: n)      // value[i] is day0 + i's value
        for (date, v) in values where v.isFinite {
            let i = date.daysSinceEpoch - day0
            guard i >= 0 && i < n else { continue }
            value[i] = v
        }
        return value
    }

    /// Walks the days from the first with a value to `latest` (or not at all when the window is empty).
    static func walk(_ values: [(LocalDate, Double)], latest: LocalDate, threshold: PatternThreshold,
                     _ visit: (Step) -> Void) {
        walk(window: window(values, latest: latest), latest: latest, threshold: threshold, visit)
    }

    /// The walk over a window of `windowDays` values ending at `latest`; non-finite values are missing.
    static func walk(window: [Double], latest: LocalDate, threshold: PatternThreshold, _ visit: (Step) -> Void) {
        window.withUnsafeBufferPointer { walk(window: $0, latest: latest, threshold: threshold, visit) }
    }

    /// The same over the window's memory, allocating nothing: a pass walks 40,000 windows.
    static func walk(window: UnsafeBufferPointer<Double>, latest: LocalDate, threshold: PatternThreshold,
                     _ visit: (Step) -> Void) {
        let n = windowDays
        precondition(window.count == n, "a pattern window holds \(n) days")
        let day0 = latest.daysSinceEpoch - (n - 1)
        /// Day i's value; NaN when it has none, or one that is not finite.
        func value(_ i: Int) -> Double {
            let v = window[i]
            return v.isFinite ? v : .nan
        }
        guard let first = (0..<n).first(where: { window[$0].isFinite }) else { return }

        withUnsafeTemporaryAllocation(of: Bool.self, capacity: n) { normal in
            normal.initialize(repeating: true)
            BaselineWindow.with(capacity: baselineDays) { pool in
                for i in first..<n {
                    // Day i − 3 is settled now; a normal one with a value joins the baseline.
                    let j = i - baselineGap
                    if j >= first, normal[j], !value(j).isNaN { pool.push(value(j)) }
                    let baseline = pool.count >= minBaselineDays ? pool.median : nil

                    var sum = 0.0, count = 0
                    for k in max(first, i - 2)...i where !value(k).isNaN {
                        sum += value(k)
                        count += 1
                    }
                    let recent = count >= 2 ? sum / Double(count) : nil

                    var deviation: Double? = nil
                    var deviates = false
                    if let b = baseline, let r = recent, let d = threshold.deviation(recent: r, baseline: b) {
                        deviation = d.percent
                        deviates = d.deviates
                    }
                    normal[i] = !deviates
                    visit(Step(day: day0 + i, value: value(i), baseline: baseline, recent: recent, deviation: deviation,
                               deviates: deviates))
                }
            }
        }
    }
}
