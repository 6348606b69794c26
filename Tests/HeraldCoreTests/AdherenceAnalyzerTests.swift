import Foundation
import Testing
@testable import HeraldCore

/// Seed 001's AdherenceAnalyzer: the score and the frequency it recommends.
@Suite struct AdherenceAnalyzerTests {
    let today = day("2026-02-10")
    let now = utc(2026, 2, 10, 20)

    func days(_ offsets: ClosedRange<Int>) -> Set<LocalDate> { Set(offsets.map { today.adding(days: -$0) }) }

    @Test func sevenConsistentDaysReduce() {
        let s = AdherenceAnalyzer.score(today: today, logDates: days(1...7), doses: [], now: now)
        #expect(s.dailyLogStreak == 7)
        #expect(s.missedLogsLast7Days == 0)
        #expect(s.doseTimingAccuracy == nil)
        #expect(s.totalReminders == 14)
        #expect(s.missedReminders == 7)
        #expect(s.overallScore == 50)
        #expect(s.periodStart == day("2026-01-27") && s.periodEnd == day("2026-02-09"))
        #expect(AdherenceAnalyzer.recommend(s, current: .full) == .reduced)
        // Six days are not enough.
        let six = AdherenceAnalyzer.score(today: today, logDates: days(1...6), doses: [], now: now)
        #expect(six.missedLogsLast7Days == 1)
        #expect(AdherenceAnalyzer.recommend(six, current: .full) == .full)
    }

    @Test func todaysLogExtendsTheStreak() {
        let s = AdherenceAnalyzer.score(today: today, logDates: days(0...6), doses: [], now: now)
        #expect(s.dailyLogStreak == 7)
        #expect(s.loggedToday)
    }

    @Test func twoMissedLogsRestoreFull() {
        // Logged for ten days, then missed the last two.
        let s = AdherenceAnalyzer.score(today: today, logDates: days(3...12), doses: [], now: now)
        #expect(s.missedLogsLast7Days == 2)
        #expect(AdherenceAnalyzer.recommend(s, current: .reduced) == .full)
        #expect(AdherenceAnalyzer.recommend(s, current: .minimal) == .full)
        // One missed day changes nothing.
        let one = AdherenceAnalyzer.score(today: today, logDates: days(2...12), doses: [], now: now)
        #expect(one.dailyLogStreak == 0)
        #expect(AdherenceAnalyzer.recommend(one, current: .reduced) == .reduced)
        #expect(AdherenceAnalyzer.recommend(one, current: .full) == .full)
    }

    @Test func fourteenDaysAndGoodTimingIsMinimal() {
        let onTime = (1...5).map { DoseRecord(scheduledAt: now.addingTimeInterval(-Double($0) * 86_400),
                                               takenAt: now.addingTimeInterval(-Double($0) * 86_400 + 300)) }
        let s = AdherenceAnalyzer.score(today: today, logDates: days(1...14), doses: onTime, now: now)
        #expect(s.doseTimingAccuracy == 100)
        #expect(s.consistentDoseTiming)
        #expect(s.overallScore == 100)
        #expect(AdherenceAnalyzer.recommend(s, current: .reduced) == .minimal)
        // Poor timing keeps it at reduced.
        let late = (1...5).map { DoseRecord(scheduledAt: now.addingTimeInterval(-Double($0) * 86_400),
                                             takenAt: now.addingTimeInterval(-Double($0) * 86_400 + 3600)) }
        let l = AdherenceAnalyzer.score(today: today, logDates: days(1...14), doses: late, now: now)
        #expect(l.doseTimingAccuracy == 57)                                  // 60 min off: 100 × (120 − 60) / 105
        #expect(!l.consistentDoseTiming)
        #expect(AdherenceAnalyzer.recommend(l, current: .full) == .reduced)
    }

    @Test func doseTimingAccuracy() {
        let t0 = now.addingTimeInterval(-3 * 86_400)
        let doses = [
            DoseRecord(scheduledAt: t0, takenAt: t0.addingTimeInterval(-15 * 60)),          // on time: 100
            DoseRecord(scheduledAt: t0.addingTimeInterval(86_400), takenAt: nil),          // missed: 0
            DoseRecord(scheduledAt: t0.addingTimeInterval(86_400 * 2), takenAt: t0.addingTimeInterval(86_400 * 2 + 7200)),  // 2 h: 0
            DoseRecord(scheduledAt: now.addingTimeInterval(-1800), takenAt: nil),           // 30 min ago, not yet judged
        ]
        let s = AdherenceAnalyzer.score(today: today, logDates: [], doses: doses, now: now)
        #expect(s.doseTimingAccuracy == 33)
        #expect(s.totalReminders == 14 + 3)
        #expect(s.missedReminders == 14 + 1)
        #expect(!s.consistentDoseTiming)
    }

    @Test func whatEachFrequencyLetsThrough() {
        var s = AdherenceAnalyzer.score(today: today, logDates: days(1...7), doses: [], now: now)
        #expect(AdherenceAnalyzer.shouldSend(.daily, frequency: .full, score: s))
        #expect(AdherenceAnalyzer.shouldSend(.daily, frequency: .reduced, score: s))     // not logged today yet
        #expect(!AdherenceAnalyzer.shouldSend(.daily, frequency: .minimal, score: s))    // logged yesterday
        s.loggedToday = true
        #expect(!AdherenceAnalyzer.shouldSend(.daily, frequency: .reduced, score: s))
        s.loggedToday = false; s.loggedYesterday = false
        #expect(AdherenceAnalyzer.shouldSend(.daily, frequency: .minimal, score: s))
        for f in NotificationFrequency.allCases {
            #expect(AdherenceAnalyzer.shouldSend(.washout, frequency: f, score: s))
            #expect(AdherenceAnalyzer.shouldSend(.testStart, frequency: f, score: s))
            #expect(AdherenceAnalyzer.shouldSend(.dose, frequency: f, score: s))
        }
        s.consistentDoseTiming = true
        #expect(!AdherenceAnalyzer.shouldSend(.dose, frequency: .full, score: s))
    }

    /// Doses counted per day score as each dose would: the mean of every judged dose's credit, the
    /// latest three for the pre-dose reminder, the dose pattern's halves. Four doses a day for six days:
    /// on time (100), 30 minutes late (85.7), three hours late (0) and not taken (0).
    @Test func dosesCountedPerDayScoreAsEachDoseWould() {
        let lateness: [Double?] = [5, 30, 180, nil]
        var doses: [DoseRecord] = []
        for day in (1...6).reversed() {
            for (i, late) in lateness.enumerated() {
                let at = now.addingTimeInterval(-Double(day) * 86_400 + Double(i) * 3600)
                doses.append(DoseRecord(scheduledAt: at, takenAt: late.map { at.addingTimeInterval($0 * 60) }))
            }
        }
        let tally = DoseTally(doses: doses, now: now)
        #expect(tally.days.count == 6 && tally.judged == 24 && tally.missed == 6)
        #expect(tally.days.allSatisfy { $0.onTime == 1 && $0.partial == 1 && $0.partialMinutes == 30 })
        let counted = DoseTally(days: tally.days.map {
            DoseDay(utcDay: $0.utcDay, judged: 4, missed: 1, onTime: 1, partial: 1, partialMinutes: 30)
        }, latest: tally.latest)
        #expect(counted == tally)

        let s = AdherenceAnalyzer.score(today: today, logDates: [], tally: counted)
        let credits = (1...6).flatMap { _ in [100, 100 * (120 - 30) / 105.0, 0, 0] }
        #expect(s.doseTimingAccuracy == Int((credits.reduce(0, +) / 24).rounded()))
        #expect(s.totalReminders == 14 + 24 && s.missedReminders == 14 + 6)
        #expect(!s.consistentDoseTiming)
        let perDose = AdherencePatterns.doses(credits: credits)
        #expect(s.patterns.last?.type == perDose?.type && s.patterns.last?.confidence == perDose?.confidence)
        // The latest three decide the pre-dose reminder, whatever the day holds before them.
        let onTime = (0..<3).map { i in DoseRecord(scheduledAt: now.addingTimeInterval(-Double(3 - i) * 3600 - 7200),
                                                   takenAt: now.addingTimeInterval(-Double(3 - i) * 3600 - 7200 + 60)) }
        #expect(AdherenceAnalyzer.score(today: today, logDates: [], doses: doses + onTime, now: now).consistentDoseTiming)
    }
}
