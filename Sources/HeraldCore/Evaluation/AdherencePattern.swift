import Foundation

/// One of the reminders design's adherence patterns (`detectPatterns`): what a person's daily logging,
/// or their dose timing, has been doing over the period, how sure the analysis is (0–1), and what it
/// suggests for their reminders.
public struct AdherencePattern: Sendable, Equatable {
    /// The reminders design's four patterns.
    public enum PatternType: String, CaseIterable, Sendable, Codable {
        /// Kept up in both halves of the period, with no trend.
        case consistent
        /// Better in the recent half than in the earlier one.
        case improving
        /// Worse in the recent half than in the earlier one.
        case declining
        /// Neither kept up nor trending: some days (or doses) and not others.
        case irregular
    }

    /// What the pattern is about.
    public enum Subject: String, CaseIterable, Sendable, Codable {
        /// The daily logs of the period's completed days.
        case dailyLogs = "daily_logs"
        /// How close to their time the period's doses were taken.
        case doseTiming = "dose_timing"
    }

    /// What the pattern suggests for the reminders.
    public enum Recommendation: String, CaseIterable, Sendable, Codable {
        case reduceReminders = "reduce_reminders"
        case keepReminders = "keep_reminders"
        case increaseReminders = "increase_reminders"
    }

    public var type: PatternType
    public var subject: Subject
    /// 0–1, to two decimals.
    public var confidence: Double
    /// What was seen, in a sentence (English, for operators and the app's debugging).
    public var description: String
    public var recommendation: Recommendation

    public init(type: PatternType, subject: Subject, confidence: Double, description: String) {
        self.type = type
        self.subject = subject
        self.confidence = (min(1, max(0, confidence)) * 100).rounded() / 100
        self.description = description
        switch type {
        case .consistent: recommendation = .reduceReminders
        case .improving: recommendation = .keepReminders
        case .declining, .irregular: recommendation = .increaseReminders
        }
    }

    public var json: JSONValue {
        ["type": .string(type.rawValue), "subject": .string(subject.rawValue), "confidence": .number(confidence),
         "description": .string(description), "recommendation": .string(recommendation.rawValue)]
    }
}

/// Detects the patterns from what the adherence score reads: the period's log dates, and the credits
/// (0–100) of its judged doses in time order (per dose, or added up per day).
///
///     AdherencePatterns.logs(today: day("2026-02-15"), logDates: days(1...7))
///     // improving, confidence 1: no log in the earlier week, every day of the recent one
///
/// The period is split in two halves: for logs, the earlier 7 and the recent 7 of the 14 completed
/// days; for doses, the earlier and the recent half of the judged doses (the middle one of an odd
/// number left out). With `e` and `r` the halves' shares (days logged, or mean credit / 100):
///
/// | pattern | when | confidence |
/// |---|---|---|
/// | improving | r − e ≥ 2/7 | r − e |
/// | declining | e − r ≥ 2/7 | e − r |
/// | consistent | otherwise, e ≥ 5/7 and r ≥ 5/7 | the whole period's share |
/// | irregular | otherwise | 1 − the whole period's share |
///
/// 2/7 is two days of a week; 5/7 five days of seven. Dose timing needs 4 judged doses for a pattern;
/// below 6 its confidence is scaled by doses / 6.
public enum AdherencePatterns {
    public static let trend = 2.0 / 7
    public static let steady = 5.0 / 7
    public static let minimumDoses = 4
    public static let fullConfidenceDoses = 6
    /// A declining pattern at least this confident brings full frequency back (`AdherenceAnalyzer.recommend`).
    public static let actOnDecline = 0.5
    /// Shares are computed from small whole numbers: compare them with this much room.
    static let tolerance = 1e-9

    /// The logging pattern of the 14 completed local days before `today`.
    public static func logs(today: LocalDate, logDates: Set<LocalDate>) -> AdherencePattern {
        let half = AdherenceAnalyzer.periodDays / 2
        let recent = (1...half).filter { logDates.contains(today.adding(days: -$0)) }.count
        let earlier = (half + 1...2 * half).filter { logDates.contains(today.adding(days: -$0)) }.count
        let (type, confidence) = classify(earlier: Double(earlier) / Double(half), recent: Double(recent) / Double(half),
                                          overall: Double(earlier + recent) / Double(2 * half))
        let description = switch type {
        case .consistent, .irregular: "logged on \(earlier + recent) of the last \(2 * half) days"
        case .improving, .declining: "logged on \(earlier) of \(half) days, then \(recent) of the last \(half)"
        }
        return AdherencePattern(type: type, subject: .dailyLogs, confidence: confidence, description: description)
    }

    /// The dose timing pattern of judged doses' credits (0–100, oldest first); nil below `minimumDoses`.
    public static func doses(credits: [Double]) -> AdherencePattern? {
        doses(days: credits.map { (count: 1, credit: $0) })
    }

    /// The dose timing pattern of judged doses counted per day (oldest first): each day's number of
    /// doses and their credits added up. A half that ends within a day takes that day's doses at their
    /// mean credit.
    public static func doses(days: [(count: Int, credit: Double)]) -> AdherencePattern? {
        let n = days.reduce(0) { $0 + max($1.count, 0) }
        guard n >= minimumDoses else { return nil }
        let half = n / 2
        func share(_ range: Range<Int>) -> Double { credit(of: range, in: days) / Double(range.count) / 100 }
        let (e, r, all) = (share(0..<half), share(n - half..<n), share(0..<n))
        let (type, confidence) = classify(earlier: e, recent: r, overall: all)
        let weight = min(1, Double(n) / Double(fullConfidenceDoses))
        func percent(_ x: Double) -> String { "\(Int((x * 100).rounded())) %" }
        let description = switch type {
        case .consistent, .irregular: "\(n) doses, timing \(percent(all))"
        case .improving, .declining: "dose timing \(percent(e)) in the earlier doses, \(percent(r)) in the recent ones"
        }
        return AdherencePattern(type: type, subject: .doseTiming, confidence: confidence * weight, description: description)
    }

    /// The credits of the doses at places `range` (0 the oldest), added up in time order.
    static func credit(of range: Range<Int>, in days: [(count: Int, credit: Double)]) -> Double {
        var sum = 0.0, start = 0
        for day in days where day.count > 0 {
            let end = start + day.count
            let overlap = min(end, range.upperBound) - max(start, range.lowerBound)
            if overlap == day.count {
                sum += day.credit
            } else if overlap > 0 {
                sum += day.credit * Double(overlap) / Double(day.count)
            }
            start = end
        }
        return sum
    }

    /// The table above: the pattern of two halves' shares and the whole period's, with its confidence.
    static func classify(earlier e: Double, recent r: Double, overall: Double) -> (AdherencePattern.PatternType, Double) {
        if r - e >= trend - tolerance { return (.improving, r - e) }
        if e - r >= trend - tolerance { return (.declining, e - r) }
        if e >= steady - tolerance && r >= steady - tolerance { return (.consistent, overall) }
        return (.irregular, 1 - overall)
    }
}
