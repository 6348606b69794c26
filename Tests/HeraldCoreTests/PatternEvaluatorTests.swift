import Foundation
import Testing
@testable import HeraldCore

/// A steady value with a small deterministic wobble (±2%, repeating every 5 days).
func steady(_ base: Double, days: Int, wobble: Double = 0.02) -> [Double?] {
    let shape = [0.0, 1, -1, 0.5, -0.5]
    return (0..<days).map { base * (1 + wobble * shape[$0 % 5]) }
}

/// Values dated one a day from `start`; nil is a day without a value.
func dated(_ values: [Double?], from start: LocalDate = day("2026-01-01")) -> [(LocalDate, Double)] {
    values.enumerated().compactMap { i, v in v.map { (start.adding(days: i), $0) } }
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

let start = day("2026-01-01")
let sleep = PatternThreshold.defaults.first { $0.metric == "sleep_minutes" }!
let steps = PatternThreshold.defaults.first { $0.metric == "steps" }!
let restingHR = PatternThreshold.defaults.first { $0.metric == "resting_hr" }!

/// 40 steady days of 420 minutes of sleep, then `low` days at 30% of it (deep enough that the first
/// low day already deviates, so the run is exactly `low` days long).
func sleepSeries(low: Int, baseline: Int = 40) -> [Double?] {
    steady(420, days: baseline) + Array(repeating: 126, count: low)
}

func evaluate(_ values: [Double?], _ threshold: PatternThreshold = sleep) -> EpisodeEvaluation? {
    PatternEvaluator.evaluate(dated(values), latest: start.adding(days: values.count - 1), threshold: threshold)
}

func days(_ values: [Double?], _ threshold: PatternThreshold = sleep) -> [DayEvaluation] {
    PatternEvaluator.days(dated(values), latest: start.adding(days: values.count - 1), threshold: threshold)
}

@Suite struct PatternEvaluatorTests {
    @Test(arguments: [(3, Severity.watch), (7, .attention), (14, .critical), (21, .critical)])
    func runReachesExactlyALevel(level: Int, severity: Severity) throws {
        let e = try #require(evaluate(sleepSeries(low: level)))
        #expect(e.duration == level)
        #expect(e.level == level)
        #expect(e.severity == severity)
        #expect(e.activeSince == start.adding(days: 40))
        #expect(e.latest == start.adding(days: 40 + level - 1))
        #expect(e.recent == 126)
        #expect(e.deviationPercent == (126 - e.baseline) * 100 / e.baseline)
    }

    @Test(arguments: [(3, nil), (7, 3), (14, 7), (21, 14)] as [(Int, Int?)])
    func oneDayShortOfALevel(level: Int, expected: Int?) {
        let e = evaluate(sleepSeries(low: level - 1))
        #expect(e?.level == expected)
        #expect(e?.duration == (expected == nil ? nil : level - 1))
    }

    @Test func longRunsStayAtLevel21() {
        #expect(evaluate(sleepSeries(low: 30))?.level == 21)
        #expect(evaluate(sleepSeries(low: 30))?.duration == 30)
    }

    @Test func risePatternForRestingHeartRate() throws {
        let values = steady(58, days: 40) + Array(repeating: 100, count: 8)
        let e = try #require(evaluate(values, restingHR))
        #expect(e.level == 7)
        #expect(e.duration == 8)
        #expect(e.deviationPercent >= 20)
        // The same series is not a drop.
        let asDrop = PatternThreshold(metric: "resting_hr", pattern: .dropVsBaseline, deviationPercent: 20, minAbsChange: 5)
        #expect(evaluate(values, asDrop) == nil)
        // And a drop is not a rise.
        #expect(evaluate(steady(58, days: 40) + Array(repeating: 40, count: 8), restingHR) == nil)
    }

    @Test func tooLittleBaselineMeansNoEpisode() throws {
        // 13 steady days then 3 low: on L only 13 days lie on or before L−3 — no baseline anywhere.
        let short = sleepSeries(low: 3, baseline: 13)
        #expect(evaluate(short) == nil)
        #expect(days(short).allSatisfy { $0.baseline == nil && !$0.deviates })
        // With 16 steady days the third low day has 14 normal days behind it, and the run counts.
        #expect(evaluate(sleepSeries(low: 3, baseline: 16))?.level == 3)
    }

    @Test func daysWithoutABaselineAreNormalAndJoinThePool() throws {
        // 13 steady days, then low days: low days 13–15 have no baseline yet, so they are normal and
        // enter the baseline of day 16 onwards.
        let values = sleepSeries(low: 10, baseline: 13)
        let walk = days(values)
        #expect(walk.count == 23)
        #expect(walk[15].baseline == nil)
        #expect(walk[16].baseline == median(values[0...13].map { $0! }))
        #expect(walk[18].baseline == median(values[0...15].map { $0! }))
        #expect(!walk[13].deviates && !walk[15].deviates)
        #expect(walk[16].deviates)
    }

    @Test func oneMissingDayDoesNotBreakARun() throws {
        var values = sleepSeries(low: 10)
        values[45] = nil
        let e = try #require(evaluate(values))
        #expect(e.duration == 10)
        #expect(e.activeSince == start.adding(days: 40))
        #expect(days(values)[45].value == nil)
        #expect(days(values)[45].deviates)
    }

    @Test func twoMissingDaysInARowDo() throws {
        var values = sleepSeries(low: 12)
        values[45] = nil
        values[46] = nil
        let e = try #require(evaluate(values))
        // Days 46 and 47 have one value in their three days: no recent mean, no deviation.
        #expect(e.activeSince == start.adding(days: 48))
        #expect(e.duration == 4)
        #expect(e.level == 3)
    }

    @Test func missingLatestDayStillEvaluates() throws {
        var values = sleepSeries(low: 8)
        values.append(nil)                     // L has no value; L−2, L−1 carry the run
        #expect(evaluate(values)?.duration == 9)
        values.append(nil)                     // two missing: the run no longer reaches L
        #expect(evaluate(values) == nil)
    }

    @Test func recoveryEndsTheEpisode() throws {
        let during = sleepSeries(low: 10)
        #expect(evaluate(during)?.level == 7)
        // Two steady days still leave a low mean; the third clears it.
        #expect(evaluate(during + steady(420, days: 2)) != nil)
        let after = during + steady(420, days: 3)
        #expect(evaluate(after) == nil)
        let plan = Episodes.plan(active: [StoredEpisode(id: episodeId, activeSince: start.adding(days: 40), level: 7,
                                                        lastNotifiedLevel: 7)],
                                 evaluation: evaluate(after))
        #expect(plan == EpisodePlan(resolve: [episodeId]))
    }

    @Test func relapseOpensANewEpisode() throws {
        let values = sleepSeries(low: 8) + steady(420, days: 5) + Array(repeating: 126, count: 4)
        let e = try #require(evaluate(values))
        #expect(e.activeSince == start.adding(days: 53))
        #expect(e.duration == 4)
        let old = StoredEpisode(id: episodeId, activeSince: start.adding(days: 40), level: 7, lastNotifiedLevel: 7)
        let plan = Episodes.plan(active: [old], evaluation: e)
        #expect(plan.resolve == [episodeId])
        #expect(plan.continuing == nil)
        #expect(plan.upsert == e)
        #expect(plan.notifyLevel == 3)
    }

    @Test func anEpisodeNeverEntersItsOwnBaseline() throws {
        let values = sleepSeries(low: 25)
        let e = try #require(evaluate(values))
        // L is day 64; its baseline is the latest 28 normal days: days 12–39, none of the low days.
        #expect(e.baseline == median(values[12...39].map { $0! }))
        #expect(e.duration == 25)
        #expect(days(values).filter(\.deviates).count == 25)
    }

    @Test func baselineUsesTheLatest28NormalDaysOnOrBeforeDMinus3() {
        // A rising ramp: the median of the window moves as the window slides.
        let values: [Double?] = (0..<60).map { 400 + Double($0) }
        let walk = days(values)
        for d in [16, 20, 30, 31, 59] {
            let from = max(0, d - 3 - 27)
            #expect(walk[d].baseline == median(values[from...(d - 3)].map { $0! }), "day \(d)")
        }
        #expect(walk[16].recent == (values[14]! + values[15]! + values[16]!) / 3)
    }

    @Test func percentBoundaryIsInclusive() {
        // A flat 400 against a flat 320: exactly −20%, 80 minutes.
        let flat = steady(400, days: 30, wobble: 0)
        #expect(evaluate(flat + Array(repeating: 320, count: 6))?.duration == 4)
        #expect(evaluate(flat + Array(repeating: 320.5, count: 6)) == nil)
    }

    @Test func minimumAbsoluteChangeGuard() {
        // 4000 steps → 3000 is −25% and exactly the 1000-step minimum; 3001 is −25% but 999 steps.
        let flat = steady(4000, days: 30, wobble: 0)
        #expect(evaluate(flat + Array(repeating: 3000, count: 6), steps) != nil)
        #expect(evaluate(flat + Array(repeating: 3001, count: 6), steps) == nil)
        // The same small drop with a 100-step guard counts.
        var loose = steps
        loose.minAbsChange = 100
        #expect(evaluate(flat + Array(repeating: 3001, count: 6), loose) != nil)
    }

    @Test func valuesOutsideTheWindowAndOrderAreIgnored() {
        let values = sleepSeries(low: 7)
        let latest = start.adding(days: values.count - 1)
        var pairs = dated(values)
        let e = PatternEvaluator.evaluate(pairs, latest: latest, threshold: sleep)
        pairs.reverse()
        pairs.append((latest.adding(days: 5), 9999))               // after L
        pairs.append((latest.adding(days: -120), 1))               // before the 120 days
        #expect(PatternEvaluator.evaluate(pairs, latest: latest, threshold: sleep) == e)
        #expect(e?.level == 7)
        #expect(PatternEvaluator.evaluate([], latest: latest, threshold: sleep) == nil)
        #expect(PatternEvaluator.days([], latest: latest, threshold: sleep).isEmpty)
    }
}

/// The baseline's sorted window, with its values on the stack, against sorting the latest values.
@Suite struct BaselineWindowTests {
    @Test func itsMedianIsTheMedianOfTheLatestValues() {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<300 {
            let capacity = round < 30 ? round % 30 + 1 : Int.random(in: 1...40, using: &rng)
            // Few distinct values some rounds, so that equal values come and go.
            let values = (0..<Int.random(in: 0...200, using: &rng)).map { _ in
                round % 2 == 0 ? Double(Int.random(in: 0...3, using: &rng)) : Double.random(in: -1e6...1e6, using: &rng)
            }
            BaselineWindow.with(capacity: capacity) { w in
                #expect(w.median == nil)
                for (i, v) in values.enumerated() {
                    w.push(v)
                    let latest = Array(values[max(0, i + 1 - capacity)...i])
                    #expect(w.count == latest.count)
                    #expect(w.median == median(latest), "capacity \(capacity), value \(i)")
                }
            }
        }
    }

    /// A reader's window (a slice of its memory) is evaluated as a copy of it is.
    @Test func aSliceIsEvaluatedAsAnArray() {
        var rng = SystemRandomNumberGenerator()
        let n = PatternEvaluator.windowDays
        let latest = day("2026-03-10")
        for _ in 0..<200 {
            let base = Double.random(in: 10...20_000, using: &rng)
            let drop = Int.random(in: 0...30, using: &rng)
            let memory = (0..<3 * n).map { i -> Double in
                if Int.random(in: 0..<10, using: &rng) == 0 { return .nan }
                return base * (i % n >= n - drop ? 0.6 : 1 + Double.random(in: -0.05...0.05, using: &rng))
            }
            for t in PatternThreshold.defaults {
                let slice = memory[n..<2 * n]
                #expect(PatternEvaluator.evaluate(window: slice, latest: latest, threshold: t)
                        == PatternEvaluator.evaluate(window: Array(slice), latest: latest, threshold: t))
            }
        }
    }
}
