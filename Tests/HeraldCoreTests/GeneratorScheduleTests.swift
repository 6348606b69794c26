import Foundation
import Testing
@testable import HeraldCore

/// When a follower runs each time-driven generator (`GeneratorSchedule`): at the next instant of its
/// timings after its last run, read on the wall clock as the generators read it, and at once after a
/// change an app made, but at most once a `settle` for changes.
@Suite struct GeneratorScheduleTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let timing: GeneratorTiming
        let cursor: Date
        let next: Date?
        var testDescription: String { name }
    }

    static func daily(_ zone: String, _ time: String, _ weekday: Weekday? = nil, before: TimeInterval = 0) -> GeneratorTiming {
        .daily(zone: zone, time: t(time), weekday: weekday, before: before)
    }

    static let cases: [Case] = [
        Case(name: "a one-off instant ahead", timing: .at(utc(2026, 1, 25, 9, 0, 3)), cursor: utc(2026, 1, 25, 9),
             next: utc(2026, 1, 25, 9, 0, 3)),
        Case(name: "a one-off instant at the cursor is done", timing: .at(utc(2026, 1, 25, 9)), cursor: utc(2026, 1, 25, 9),
             next: nil),
        Case(name: "a daily time later today", timing: daily("Europe/London", "09:00"), cursor: utc(2026, 1, 25, 8),
             next: utc(2026, 1, 25, 9)),
        Case(name: "a daily time reached: tomorrow's", timing: daily("Europe/London", "09:00"), cursor: utc(2026, 1, 25, 9),
             next: utc(2026, 1, 26, 9)),
        Case(name: "a daily dose, reminded 30 minutes before", timing: daily("Europe/London", "09:00", before: 1800),
             cursor: utc(2026, 1, 25, 8), next: utc(2026, 1, 25, 8, 30)),
        Case(name: "a dose at 00:10 is reminded the evening before", timing: daily("Europe/London", "00:10", before: 1800),
             cursor: utc(2026, 1, 25, 12), next: utc(2026, 1, 25, 23, 40)),
        Case(name: "a weekly time on its weekday, in summer time", timing: daily("Europe/London", "09:00", .monday),
             cursor: utc(2026, 3, 27), next: utc(2026, 3, 30, 8)),
        Case(name: "a weekly time reached: next week's", timing: daily("Europe/London", "09:00", .monday),
             cursor: utc(2026, 3, 30, 8), next: utc(2026, 4, 6, 8)),
        Case(name: "a time in the spring-forward gap: the jump", timing: daily("Europe/London", "01:30"),
             cursor: utc(2026, 3, 29), next: utc(2026, 3, 29, 1)),
        Case(name: "24:00 is midnight as the date begins", timing: daily("Europe/London", "24:00"),
             cursor: utc(2026, 1, 25, 12), next: utc(2026, 1, 26)),
        Case(name: "a local day's start, for prompts", timing: daily("America/New_York", "00:00"),
             cursor: utc(2026, 1, 25, 10), next: utc(2026, 1, 26, 5)),
        Case(name: "a forecast's lead before 08:00", timing: daily("Asia/Tokyo", "08:00", before: 3600),
             cursor: utc(2026, 1, 25, 12), next: utc(2026, 1, 25, 22)),
        Case(name: "a zone herald cannot read", timing: daily("Mars/Olympus", "09:00"), cursor: utc(2026, 1, 25), next: nil),
    ]

    @Test(arguments: cases) func eachTimingsNextInstantAfterTheCursor(_ c: Case) {
        #expect(c.timing.next(after: c.cursor) == c.next)
    }

    /// What is due, and the next wake, for a schedule of reminders (last run at 09:00:00) and prompts
    /// (last run at 08:59:59.5), at `now`, with changes noticed as given.
    struct ScheduleCase: CustomTestStringConvertible, Sendable {
        let name: String
        let changes: [(TimedGenerator, Date)]
        let now: Date
        let due: [TimedGenerator]
        let wake: Date?
        var testDescription: String { name }
    }

    static let nine = utc(2026, 1, 25, 9)
    static let scheduleCases: [ScheduleCase] = [
        ScheduleCase(name: "nothing due before the first instant", changes: [], now: nine.addingTimeInterval(2),
                     due: [], wake: nine.addingTimeInterval(3)),
        ScheduleCase(name: "due at the instant", changes: [], now: nine.addingTimeInterval(3),
                     due: [.reminders], wake: nine.addingTimeInterval(3)),
        ScheduleCase(name: "a change a second after the last run: at once",
                     changes: [(.prompts, nine.addingTimeInterval(1))], now: nine.addingTimeInterval(1),
                     due: [.prompts], wake: nine.addingTimeInterval(1)),
        ScheduleCase(name: "a change right after the last run waits out the settle",
                     changes: [(.reminders, nine.addingTimeInterval(0.2))], now: nine.addingTimeInterval(0.2),
                     due: [], wake: nine.addingTimeInterval(1)),
        ScheduleCase(name: "the earliest of several noticed changes counts",
                     changes: [(.prompts, nine.addingTimeInterval(2)), (.prompts, nine.addingTimeInterval(0.6))],
                     now: nine.addingTimeInterval(0.7), due: [.prompts], wake: nine.addingTimeInterval(0.6)),
        ScheduleCase(name: "a generator the follower does not run is not woken for",
                     changes: [(.forecasts, nine)], now: nine.addingTimeInterval(2), due: [], wake: nine.addingTimeInterval(3)),
    ]

    @Test(arguments: scheduleCases) func whatIsDueAndWhenToWake(_ c: ScheduleCase) {
        var s = GeneratorSchedule(generators: [.prompts, .reminders], since: Self.nine)
        s.ran(.prompts, at: Self.nine.addingTimeInterval(-0.5))
        s.read(.reminders, timings: [.at(Self.nine.addingTimeInterval(3)), .at(Self.nine.addingTimeInterval(60))])
        s.read(.prompts, timings: [Self.daily("Europe/London", "00:00")])
        for (g, at) in c.changes { s.changed(g, at: at) }
        #expect(s.due(at: c.now) == c.due)
        #expect(s.nextWake() == c.wake)
    }

    /// A run for one-off instants alone may leave the wall-clock times out: only when no change is
    /// due and no wall-clock time has come since the last run. It leaves a change not yet settled for
    /// its own run, which its instants do not put off.
    @Test func aRunForOneOffInstantsAloneIsToldApart() {
        var s = GeneratorSchedule(generators: [.reminders], since: Self.nine)
        s.read(.reminders, timings: [.at(Self.nine.addingTimeInterval(3)), Self.daily("UTC", "09:00:10")])
        #expect(!s.dueForInstantsOnly(.reminders, at: Self.nine.addingTimeInterval(2)), "nothing due yet")
        #expect(s.dueForInstantsOnly(.reminders, at: Self.nine.addingTimeInterval(3)))
        #expect(!s.dueForInstantsOnly(.reminders, at: Self.nine.addingTimeInterval(10)), "09:00:10 came too")
        s.changed(.reminders, at: Self.nine.addingTimeInterval(2))
        #expect(!s.dueForInstantsOnly(.reminders, at: Self.nine.addingTimeInterval(3)), "a change is due")
        var unsettled = GeneratorSchedule(generators: [.reminders], since: Self.nine.addingTimeInterval(2.5))
        unsettled.read(.reminders, timings: [.at(Self.nine.addingTimeInterval(3)), .at(Self.nine.addingTimeInterval(3.2))])
        unsettled.changed(.reminders, at: Self.nine.addingTimeInterval(2.6))
        #expect(unsettled.dueForInstantsOnly(.reminders, at: Self.nine.addingTimeInterval(3)), "the change is due at 3.5")
        unsettled.ran(.reminders, at: Self.nine.addingTimeInterval(3), instantsOnly: true)
        #expect(unsettled.changedAt[.reminders] != nil && unsettled.nextWake() == Self.nine.addingTimeInterval(3.2))
        unsettled.ran(.reminders, at: Self.nine.addingTimeInterval(3.2), instantsOnly: true)
        #expect(unsettled.nextWake() == Self.nine.addingTimeInterval(3.5), "instants do not put the change off")
        // After such a run only the one-off instants are read again; the wall-clock times stay.
        s.ran(.reminders, at: Self.nine.addingTimeInterval(3))
        s.read(.reminders, instants: [Self.nine.addingTimeInterval(20)])
        #expect(s.next(.reminders) == Self.nine.addingTimeInterval(10))
        s.ran(.reminders, at: Self.nine.addingTimeInterval(10))
        #expect(s.next(.reminders) == Self.nine.addingTimeInterval(20))
    }

    /// A run takes every instant up to its `now` and every change noticed by then; a change noticed
    /// during the run (after its `now`) stays for the next.
    @Test func aRunTakesWhatCameBeforeItsNowOnly() {
        var s = GeneratorSchedule(generators: [.reminders], since: Self.nine)
        s.read(.reminders, timings: [.at(Self.nine.addingTimeInterval(3)), .at(Self.nine.addingTimeInterval(60))])
        s.ran(.reminders, at: Self.nine.addingTimeInterval(3))
        #expect(s.next(.reminders) == Self.nine.addingTimeInterval(60))
        s.changed(.reminders, at: Self.nine.addingTimeInterval(5))
        s.ran(.reminders, at: Self.nine.addingTimeInterval(4))
        #expect(s.changedAt[.reminders] == Self.nine.addingTimeInterval(5))
        #expect(s.due(at: Self.nine.addingTimeInterval(5)) == [.reminders])
        s.ran(.reminders, at: Self.nine.addingTimeInterval(5))
        #expect(s.changedAt[.reminders] == nil && s.nextWake() == Self.nine.addingTimeInterval(60))
        // Read again after a run: the one-off instants the database still has after it.
        s.read(.reminders, timings: [])
        #expect(s.nextWake() == nil && s.due(at: .distantFuture) == [])
    }
}
