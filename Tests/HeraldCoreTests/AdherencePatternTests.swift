import Foundation
import Testing
@testable import HeraldCore

/// The reminders design's `detectPatterns` (consistent, improving, declining, irregular, with a
/// confidence) and the frequency decision of its adherence scenarios, as tables.
@Suite struct AdherencePatternTests {
    static let today = day("2026-02-15")
    static let now = utc(2026, 2, 15, 20)

    /// Days logged, as days before today (1 is yesterday).
    static func logged(_ offsets: [Int]) -> Set<LocalDate> { Set(offsets.map { today.adding(days: -$0) }) }

    struct LogCase: Sendable, CustomTestStringConvertible {
        var name: String, days: [Int], type: AdherencePattern.PatternType, confidence: Double
        var testDescription: String { name }
    }

    /// The earlier week is days 8–14 before today, the recent one days 1–7; today does not count.
    static let logCases: [LogCase] = [
        LogCase(name: "every day of both weeks", days: Array(1...14), type: .consistent, confidence: 1),
        LogCase(name: "six of seven in each week", days: [1, 2, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14], type: .consistent, confidence: 0.86),
        LogCase(name: "five of seven in each week", days: [1, 2, 3, 4, 5, 8, 9, 10, 11, 12], type: .consistent, confidence: 0.71),
        LogCase(name: "only the recent week", days: Array(1...7), type: .improving, confidence: 1),
        LogCase(name: "three days, then six", days: [1, 2, 3, 4, 5, 6, 8, 9, 10], type: .improving, confidence: 0.43),
        LogCase(name: "only the earlier week", days: Array(8...14), type: .declining, confidence: 1),
        LogCase(name: "six days, then four", days: [1, 2, 3, 4, 8, 9, 10, 11, 12, 13], type: .declining, confidence: 0.29),
        LogCase(name: "every other day", days: [1, 3, 5, 7, 9, 11, 13], type: .irregular, confidence: 0.5),
        LogCase(name: "five days, then four", days: [1, 2, 3, 4, 8, 9, 10, 11, 12], type: .irregular, confidence: 0.36),
        LogCase(name: "never", days: [], type: .irregular, confidence: 1),
        LogCase(name: "today only: the period is the completed days", days: [0], type: .irregular, confidence: 1),
    ]

    @Test(arguments: logCases)
    func theLoggingPattern(_ c: LogCase) {
        let p = AdherencePatterns.logs(today: Self.today, logDates: Self.logged(c.days))
        #expect(p.type == c.type)
        #expect(p.confidence == c.confidence)
        #expect(p.subject == .dailyLogs)
        #expect(p.recommendation == [.consistent: .reduceReminders, .improving: .keepReminders,
                                     .declining: .increaseReminders, .irregular: .increaseReminders][c.type])
    }

    struct DoseCase: Sendable, CustomTestStringConvertible {
        var name: String, credits: [Double], type: AdherencePattern.PatternType?, confidence: Double
        var testDescription: String { name }
    }

    /// Credits 0–100, oldest first; below six doses the confidence is scaled by doses / 6.
    static let doseCases: [DoseCase] = [
        DoseCase(name: "six on time", credits: [100, 100, 100, 100, 100, 100], type: .consistent, confidence: 1),
        DoseCase(name: "four fairly close", credits: [90, 80, 90, 80], type: .consistent, confidence: 0.57),
        DoseCase(name: "missed, then on time", credits: [0, 0, 100, 100], type: .improving, confidence: 0.67),
        DoseCase(name: "on time, then slipping", credits: [100, 100, 100, 40, 40, 40], type: .declining, confidence: 0.6),
        DoseCase(name: "an odd number: the middle dose left out", credits: [100, 100, 0, 40, 40], type: .declining, confidence: 0.5),
        DoseCase(name: "on and off", credits: [100, 50, 100, 50, 100, 50], type: .irregular, confidence: 0.25),
        DoseCase(name: "three doses are too few", credits: [100, 100, 100], type: nil, confidence: 0),
    ]

    @Test(arguments: doseCases)
    func theDoseTimingPattern(_ c: DoseCase) {
        let p = AdherencePatterns.doses(credits: c.credits)
        #expect(p?.type == c.type)
        if let p {
            #expect(p.confidence == c.confidence)
            #expect(p.subject == .doseTiming)
        }
    }

    /// Doses of the last `count` days at 08:00, each taken `late` minutes after its time (nil: not taken).
    static func doses(_ lateness: [Double?]) -> [DoseRecord] {
        lateness.enumerated().map { i, late in
            let at = now.addingTimeInterval(-Double(lateness.count - i) * 86_400)
            return DoseRecord(scheduledAt: at, takenAt: late.map { at.addingTimeInterval($0 * 60) })
        }
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var days: [Int]
        var doses: [Double?] = []
        var current: NotificationFrequency
        var frequency: NotificationFrequency
        /// Whether the pre-dose reminder goes.
        var preDose = true
        var patterns: [AdherencePattern.PatternType]
        var testDescription: String { name }
    }

    /// The design's adaptation scenarios (seven consistent days reduce, two missed logs restore,
    /// consistent dose timing disables the pre-dose reminder), and the patterns' part in the decision:
    /// a declining pattern of confidence 0.5 or more restores full frequency.
    static let scenarios: [Scenario] = [
        Scenario(name: "seven days of consistent logging reduce the frequency", days: Array(1...7),
                 current: .full, frequency: .reduced, patterns: [.improving]),
        Scenario(name: "six days are not enough", days: Array(1...6), current: .full, frequency: .full, patterns: [.improving]),
        Scenario(name: "two missed logs restore full frequency", days: Array(3...12),
                 current: .reduced, frequency: .full, patterns: [.consistent]),
        Scenario(name: "one missed log changes nothing", days: Array(2...12), current: .reduced, frequency: .reduced,
                 patterns: [.consistent]),
        Scenario(name: "fourteen days and timely doses are minimal", days: Array(1...14), doses: [5, 5, 5, 5, 5],
                 current: .reduced, frequency: .minimal, preDose: false, patterns: [.consistent, .consistent]),
        Scenario(name: "consistent dose timing disables the pre-dose reminder", days: [], doses: [4, 4, 4],
                 current: .full, frequency: .full, preDose: false, patterns: [.irregular]),
        Scenario(name: "a late dose brings the pre-dose reminder back", days: [], doses: [4, 4, 4, 90],
                 current: .full, frequency: .full, preDose: true, patterns: [.irregular, .declining]),
        Scenario(name: "declining dose timing restores full frequency despite fourteen logged days", days: Array(1...14),
                 doses: [0, 0, 0, 105, 105, 105], current: .minimal, frequency: .full, patterns: [.consistent, .declining]),
        Scenario(name: "a less confident decline does not", days: Array(1...14), doses: [0, 0, 0, 57, 57, 57],
                 current: .reduced, frequency: .reduced, patterns: [.consistent, .declining]),
    ]

    @Test(arguments: scenarios)
    func theFrequencyDecision(_ s: Scenario) {
        let score = AdherenceAnalyzer.score(today: Self.today, logDates: Self.logged(s.days), doses: Self.doses(s.doses), now: Self.now)
        #expect(score.patterns.map(\.type) == s.patterns)
        #expect(AdherenceAnalyzer.recommend(score, current: s.current) == s.frequency)
        #expect(AdherenceAnalyzer.shouldSend(.dose, frequency: s.frequency, score: score) == s.preDose)
    }

    /// The score the reminders phase stores carries the patterns.
    @Test func theStoredScoreCarriesThePatterns() throws {
        let score = AdherenceAnalyzer.score(today: Self.today, logDates: Self.logged(Array(8...14)), doses: [], now: Self.now)
        guard case .array(let patterns)? = score.json["patterns"] else { Issue.record("no patterns"); return }
        #expect(patterns.count == 1)
        #expect(patterns.first?["type"]?.stringValue == "declining")
        #expect(patterns.first?["subject"]?.stringValue == "daily_logs")
        #expect(patterns.first?["confidence"]?.doubleValue == 1)
        #expect(patterns.first?["recommendation"]?.stringValue == "increase_reminders")
        #expect(patterns.first?["description"]?.stringValue == "logged on 7 of 7 days, then 0 of the last 7")
        #expect(score.decline?.type == .declining)
    }
}
