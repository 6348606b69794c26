import Foundation
import Testing
@testable import HeraldCore

@Suite struct ReminderScheduleTests {
    let london = zone("Europe/London")
    let nine = t("09:00")

    @Test func beforeAndAfterTheTime() throws {
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 8, 59, 59), zone: london, time: nine, lastEnqueuedFor: nil) == nil)
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 9), zone: london, time: nine,
                                                         lastEnqueuedFor: day("2026-01-24")))
        #expect(due.date == day("2026-01-25"))
        #expect(due.at == utc(2026, 1, 25, 9))
        // Late in the day it is still today's reminder, meant for 09:00.
        let late = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 22), zone: london, time: nine, lastEnqueuedFor: nil))
        #expect(late.date == day("2026-01-25") && late.at == utc(2026, 1, 25, 9))
    }

    /// A reminder at 23:57 is first seen by the pass at 00:00, on the next local date: it is still owed for
    /// an hour after its time (once), then no more.
    @Test func aTimeJustBeforeMidnightIsCaughtUpAfterIt() throws {
        let late = t("23:57")
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 26, 0, 0), zone: london, time: late,
                                                         lastEnqueuedFor: day("2026-01-24")))
        #expect(due.date == day("2026-01-25"))
        #expect(due.at == utc(2026, 1, 25, 23, 57))
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 1, 26, 0, 5), zone: london, time: late,
                                          lastEnqueuedFor: day("2026-01-25")) == nil, "once")
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 1, 26, 0, 58), zone: london, time: late,
                                          lastEnqueuedFor: day("2026-01-24")) == nil, "over an hour late: not owed")
    }

    @Test func alreadyEnqueuedToday() {
        let now = utc(2026, 1, 25, 12)
        #expect(ReminderSchedule.dailyDue(now: now, zone: london, time: nine, lastEnqueuedFor: day("2026-01-25")) == nil)
        #expect(ReminderSchedule.dailyDue(now: now, zone: london, time: nine, lastEnqueuedFor: day("2026-01-26")) == nil)
        #expect(ReminderSchedule.dailyDue(now: now, zone: london, time: nine, lastEnqueuedFor: day("2026-01-20"))?.date == day("2026-01-25"))
    }

    @Test func springForwardGap() throws {
        let ny = zone("America/New_York")
        // 2026-03-08: 02:30 does not exist in New York; clocks jump from 02:00 EST to 03:00 EDT at 07:00 UTC.
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 3, 8, 6, 59, 59), zone: ny, time: t("02:30"), lastEnqueuedFor: nil) == nil)
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 3, 8, 7), zone: ny, time: t("02:30"), lastEnqueuedFor: nil))
        #expect(due.date == day("2026-03-08"))
        #expect(due.at == utc(2026, 3, 8, 7))
        // The next day 02:30 exists again (EDT): 06:30 UTC.
        let next = try #require(ReminderSchedule.dailyDue(now: utc(2026, 3, 9, 6, 30), zone: ny, time: t("02:30"),
                                                          lastEnqueuedFor: day("2026-03-08")))
        #expect(next.at == utc(2026, 3, 9, 6, 30))
    }

    @Test func fallBackOverlapIsTheFirstTime() throws {
        let ny = zone("America/New_York")
        // 2026-11-01: 01:30 happens at 05:30 UTC (EDT) and again at 06:30 UTC (EST).
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 11, 1, 5, 30), zone: ny, time: t("01:30"), lastEnqueuedFor: nil))
        #expect(due.at == utc(2026, 11, 1, 5, 30))
        // The second 01:30 does not repeat it once enqueued.
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 11, 1, 6, 30), zone: ny, time: t("01:30"),
                                          lastEnqueuedFor: day("2026-11-01")) == nil)
    }

    @Test func zonesFarFromUTC() throws {
        // 2026-01-25T10:30Z is 00:30 on the 26th in Kiritimati (+14) and 23:30 on the 24th in Pago Pago (−11).
        let now = utc(2026, 1, 25, 10, 30)
        let kiri = try #require(ReminderSchedule.dailyDue(now: now, zone: zone("Pacific/Kiritimati"), time: t("00:15"), lastEnqueuedFor: nil))
        #expect(kiri.date == day("2026-01-26") && kiri.at == utc(2026, 1, 25, 10, 15))
        #expect(ReminderSchedule.dailyDue(now: now, zone: zone("Pacific/Kiritimati"), time: t("23:00"), lastEnqueuedFor: nil) == nil)
        let pago = try #require(ReminderSchedule.dailyDue(now: now, zone: zone("Pacific/Pago_Pago"), time: t("23:00"), lastEnqueuedFor: nil))
        #expect(pago.date == day("2026-01-24") && pago.at == utc(2026, 1, 25, 10))
        #expect(ReminderSchedule.dailyDue(now: now, zone: zone("Pacific/Pago_Pago"), time: t("23:45"), lastEnqueuedFor: nil) == nil)
        // Kolkata's half-hour offset: 09:00 IST is 03:30 UTC.
        let kol = try #require(ReminderSchedule.dailyDue(now: now, zone: zone("Asia/Kolkata"), time: nine, lastEnqueuedFor: nil))
        #expect(kol.at == utc(2026, 1, 25, 3, 30))
    }
}

/// Each reminder type of seed 001 due at the right local instant.
@Suite struct ReminderTypeScheduleTests {
    let ny = zone("America/New_York")
    let london = zone("Europe/London")

    @Test func dailyDoseGoesThirtyMinutesOfElapsedTimeEarly() throws {
        // A dose at 09:00 London every day: the reminder at 08:30.
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 8, 29), zone: london, time: t("09:00"), advance: 1800, lastEnqueuedFor: nil) == nil)
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 8, 30), zone: london, time: t("09:00"),
                                                         advance: 1800, lastEnqueuedFor: nil))
        #expect(due.date == day("2026-01-25") && due.at == utc(2026, 1, 25, 8, 30))
    }

    @Test func dailyDoseAcrossSpringForward() throws {
        // New York 2026-03-08: 02:00 EST → 03:00 EDT at 07:00Z. A dose at 03:15 EDT (07:15Z): its
        // reminder is 30 minutes of elapsed time earlier, 06:45Z — 01:45 EST on the wall clock, not 02:45.
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 3, 8, 6, 45), zone: ny, time: t("03:15"),
                                                         advance: 1800, lastEnqueuedFor: day("2026-03-07")))
        #expect(due.date == day("2026-03-08"))
        #expect(due.at == utc(2026, 3, 8, 6, 45))
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 3, 8, 6, 44), zone: ny, time: t("03:15"), advance: 1800,
                                          lastEnqueuedFor: day("2026-03-07")) == nil)
    }

    @Test func dailyDoseAcrossFallBack() throws {
        // New York 2026-11-01: 02:00 EDT → 01:00 EST at 06:00Z. A dose at 01:15 (the first, 05:15Z):
        // reminder at 04:45Z (00:45 EDT).
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 11, 1, 4, 45), zone: ny, time: t("01:15"),
                                                         advance: 1800, lastEnqueuedFor: day("2026-10-31")))
        #expect(due.at == utc(2026, 11, 1, 4, 45))
        // Enqueued once: the repeated hour does not repeat it.
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 11, 1, 5, 45), zone: ny, time: t("01:15"), advance: 1800,
                                          lastEnqueuedFor: day("2026-11-01")) == nil)
    }

    @Test func aDoseJustAfterMidnightIsRemindedTheEveningBefore() throws {
        // Dose at 00:10 London on the 26th: reminder at 23:40 on the 25th, for the 26th.
        let due = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 23, 40), zone: london, time: t("00:10"),
                                                         advance: 1800, lastEnqueuedFor: day("2026-01-25")))
        #expect(due.date == day("2026-01-26"))
        #expect(due.at == utc(2026, 1, 25, 23, 40))
    }

    /// 24:00 (PostgreSQL's `time` accepts it) is midnight as each local date begins: due once a day, at
    /// 00:00, for the date that begins. It never came due when compared with the wall clock as it was.
    @Test func midnightWrittenAs2400IsDueOnceADayAsTheDateBegins() throws {
        let midnight = t("24:00")
        let first = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 26, 0, 5), zone: london, time: midnight,
                                                           lastEnqueuedFor: day("2026-01-25")))
        #expect(first.date == day("2026-01-26"))
        #expect(first.at == utc(2026, 1, 26))
        // Once that day, whenever the passes run: nothing more until the 27th begins.
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 1, 26, 12), zone: london, time: midnight, lastEnqueuedFor: first.date) == nil)
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 1, 26, 23, 59, 59), zone: london, time: midnight, lastEnqueuedFor: first.date) == nil)
        let next = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 27), zone: london, time: midnight, lastEnqueuedFor: first.date))
        #expect(next.date == day("2026-01-27") && next.at == utc(2026, 1, 27))
        // The same as 00:00, in any zone; a dose at 24:00 is reminded 30 minutes before that midnight.
        let tokyo = zone("Asia/Tokyo")
        #expect(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 15, 1), zone: tokyo, time: midnight, lastEnqueuedFor: nil)?.at
                == ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 15, 1), zone: tokyo, time: t("00:00"), lastEnqueuedFor: nil)?.at)
        let dose = try #require(ReminderSchedule.dailyDue(now: utc(2026, 1, 25, 23, 30), zone: london, time: midnight,
                                                          advance: 1800, lastEnqueuedFor: day("2026-01-25")))
        #expect(dose.date == day("2026-01-26") && dose.at == utc(2026, 1, 25, 23, 30))
    }

    @Test func oneOffEvents() {
        let dose = utc(2026, 3, 8, 7, 15)
        #expect(ReminderSchedule.onceDue(now: utc(2026, 3, 8, 6, 44), event: dose, advance: 1800) == nil)
        #expect(ReminderSchedule.onceDue(now: utc(2026, 3, 8, 6, 45), event: dose, advance: 1800) == utc(2026, 3, 8, 6, 45))
        #expect(ReminderSchedule.onceDue(now: utc(2026, 3, 8, 9), event: dose, advance: 1800) == utc(2026, 3, 8, 6, 45))
        // A washout's start and end, a test start: at their instants.
        #expect(ReminderSchedule.onceDue(now: utc(2026, 3, 8, 6, 59), event: utc(2026, 3, 8, 7)) == nil)
        #expect(ReminderSchedule.onceDue(now: utc(2026, 3, 8, 7), event: utc(2026, 3, 8, 7)) == utc(2026, 3, 8, 7))
    }
}
