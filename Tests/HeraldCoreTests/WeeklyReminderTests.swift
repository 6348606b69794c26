import Foundation
import HeraldTestSupport
import Testing
@testable import HeraldCore

/// Weekly reminders (the reminders design's `weekly` trigger): due once a week, on the weekday, at the
/// local wall-clock time, whatever the UTC offset that week.
@Suite struct WeeklyReminderTests {
    let london = zone("Europe/London")

    /// Weekdays are numbered as the design's trigger (Expo) numbers them: 1 Sunday … 7 Saturday.
    @Test func weekdaysAreNumberedFromSunday() {
        #expect(day("2026-03-08").weekday == .sunday && Weekday.sunday.rawValue == 1)
        #expect(day("2026-03-14").weekday == .saturday && Weekday.saturday.rawValue == 7)
        #expect(day("1970-01-01").weekday == .thursday)
        #expect(day("1969-12-28").weekday == .sunday, "before the epoch too")
        let week = (0..<7).map { day("2026-03-08").adding(days: $0).weekday.rawValue }
        #expect(week == [1, 2, 3, 4, 5, 6, 7])
    }

    /// Sunday 09:00 in London: 09:00Z in March before the clocks go forward, 08:00Z after; nothing on
    /// the other days, once a Sunday.
    @Test func dueOnItsWeekdayOnlyOnceAWeekAcrossSpringForward() throws {
        let nine = t("09:00")
        func due(_ now: Date, last: LocalDate?) -> (date: LocalDate, at: Date)? {
            ReminderSchedule.weeklyDue(now: now, zone: london, weekday: .sunday, time: nine, lastEnqueuedFor: last)
        }
        let first = try #require(due(utc(2026, 3, 22, 9), last: nil))
        #expect(first.date == day("2026-03-22") && first.at == utc(2026, 3, 22, 9))
        #expect(due(utc(2026, 3, 22, 12), last: first.date) == nil, "once that Sunday")
        for d in 23...28 { #expect(due(utc(2026, 3, d, 12), last: first.date) == nil, "March \(d) is no Sunday") }
        #expect(due(utc(2026, 3, 29, 7, 59), last: first.date) == nil)
        let second = try #require(due(utc(2026, 3, 29, 8), last: first.date))
        #expect(second.date == day("2026-03-29") && second.at == utc(2026, 3, 29, 8), "09:00 BST")
        // A weekly dose: the reminder 30 minutes of elapsed time before a Monday 00:10 dose is on Sunday.
        let dose = try #require(ReminderSchedule.weeklyDue(now: utc(2026, 3, 29, 23, 40), zone: london, weekday: .monday,
                                                           time: t("00:10"), advance: 1800, lastEnqueuedFor: nil))
        #expect(dose.date == day("2026-03-30") && dose.at == utc(2026, 3, 29, 22, 40))
    }
}

/// Weekly reminders held to an independent oracle: `Tests/Oracles/weekly_reminder_oracle.py` knows only
/// the definition (due at the first instant whose wall clock reads the weekday's date at the time, or
/// later) and walks the quiet-hours oracle's wall clock (Python's zoneinfo). Its cases run three weeks
/// around the DST transitions of zones of both hemispheres (30-minute and 2-hour shifts, transitions at
/// local midnight), with times near the transitions' wall times. Passes every ten minutes must send
/// exactly the oracle's instants, once each.
@Suite(.enabled(if: Tools.pythonWithZoneinfo, "needs python3 with zoneinfo and the system tzdata (scripts/deps.sh installs them)"))
struct WeeklyReminderOracleTests {
    @Test func passesEveryTenMinutesSendTheOraclesInstantsOnce() throws {
        let answers = try Oracles.weekly(seed: 20_261_126, generated: 60)
        #expect(answers.cases.count == 60)
        var problems: [String] = []
        for c in answers.cases {
            guard let z = Zone.named(c.zone), let wd = Weekday(rawValue: c.weekday), let time = LocalTime(c.time) else {
                problems.append("unreadable case: \(c)")
                continue
            }
            var last: LocalDate?
            var sent: [Int] = []
            for now in stride(from: c.from, through: c.to, by: 600) {
                guard let due = ReminderSchedule.weeklyDue(now: Date(timeIntervalSince1970: Double(now)), zone: z,
                                                           weekday: wd, time: time, lastEnqueuedFor: last) else { continue }
                if due.date.weekday != wd { problems.append("due for a \(due.date.weekday) date \(due.date): \(c)") }
                sent.append(Int(due.at.timeIntervalSince1970))
                last = due.date
            }
            if sent != c.occurrences { problems.append("sent at \(sent), the oracle says \(c.occurrences): \(c)") }
        }
        #expect(problems.isEmpty, """
            \(problems.count) of \(answers.cases.count) weekly cases disagree with the oracle (tzdata \(answers.tzdata)):
            \(problems.prefix(20).joined(separator: "\n"))
            """)
    }
}
