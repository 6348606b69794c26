import Foundation

/// Seed 001's daily reminders: once a day at a local time, once each.
///
///     ReminderSchedule.dailyDue(now: now, zone: zone("Europe/London"), time: t("09:00"), lastEnqueuedFor: day("2026-01-24"))
///     // (2026-01-25, 2026-01-25T09:00Z) once London's clock reached 09:00 on the 25th; nil before,
///     // and nil once lastEnqueuedFor is 2026-01-25
public enum ReminderSchedule {
    /// A daily reminder at a local time: the local date it is due for at `now` (the recipient's local date
    /// once the local clock reached `time` on it), unless `lastEnqueuedFor` is that date already (or a later
    /// one: a zone change that moved the user back a day does not repeat a reminder); and the instant it
    /// was meant for (DST gap → the moment clocks jump; a time that occurs twice → the first).
    public static func dailyDue(now: Date, zone: TimeZone, time: LocalTime,
                                lastEnqueuedFor: LocalDate?) -> (date: LocalDate, at: Date)? {
        guard let date = DailyTime.dateReached(time, at: now, in: zone) else { return nil }
        if let last = lastEnqueuedFor, last >= date { return nil }
        return (date, Zone.instant(of: date, time, in: zone))
    }
}
