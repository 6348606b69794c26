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
