import Foundation

/// Reminders: when each type is due.
///
///     ReminderSchedule.dailyDue(now: now, zone: zone("Europe/London"), time: t("09:00"), lastEnqueuedFor: day("2026-01-24"))
///     // (2026-01-25, 2026-01-25T09:00Z) once London's clock reached 09:00 on the 25th; nil before,
///     // and nil once lastEnqueuedFor is 2026-01-25
///     ReminderSchedule.dailyDue(now: now, zone: london, time: t("09:00"), advance: 30 * 60, lastEnqueuedFor: nil)
///     // a daily dose at 09:00: due at 08:30 London time (30 minutes of elapsed time before the dose)
///
/// | type | due at |
/// |---|---|
/// | daily | `local_time` on each local date (wall clock), or `at` |
/// | daily or dose, weekly | `local_time` on each local date that falls on `weekday` |
/// | dose | the dose time (`local_time` each day, or `at`) minus `dose_reminder_advance_minutes` of elapsed time |
/// | washout | `at` (its start) and `ends_at` (its end) |
/// | test_start | `at` |
public enum ReminderSchedule {
    /// A daily reminder at a local time: the local date it is due for at `now` (the recipient's local date
    /// once the local clock reached `time` on it), unless `lastEnqueuedFor` is that date already (or a later
    /// one: a zone change that moved the user back a day does not repeat a reminder); and the instant it
    /// was meant for (DST gap → the moment clocks jump; a time that occurs twice → the first).
    ///
    /// With `advance` (a dose reminder), the date is that of the dose and the instant is `advance` seconds
    /// before the dose's instant: the reminder for a dose at 00:10 goes out at 23:40 the evening before.
    /// How long after its time a daily reminder missed across midnight is still sent: passes run every
    /// few minutes, so one at 23:57 is first seen after midnight, on the next local date.
    public static let catchUp: TimeInterval = 3600

    public static func dailyDue(now: Date, zone: TimeZone, time: LocalTime, advance: TimeInterval = 0,
                                lastEnqueuedFor: LocalDate?) -> (date: LocalDate, at: Date)? {
        let time = DailyTime.timeOfDay(time)                          // 24:00 is midnight, as the date begins
        guard let date = DailyTime.dateReached(time, at: now.addingTimeInterval(advance), in: zone,
                                               catchUp: catchUp) else { return nil }
        if let last = lastEnqueuedFor, last >= date { return nil }
        return (date, Zone.instant(of: date, time, in: zone).addingTimeInterval(-advance))
    }

    /// A weekly reminder: as `dailyDue`, on the local dates that fall on `weekday` only. So it is due
    /// once a week, at the wall-clock time on that weekday whatever the UTC offset that week (the DST
    /// rules of `dailyDue` apply); a week whose weekday passed with no pass after the time (and none in
    /// the hour's `catchUp` after midnight) is not owed any more. With `advance` (a weekly dose), the
    /// dose's date is the one on `weekday`.
    ///
    ///     ReminderSchedule.weeklyDue(now: now, zone: london, weekday: .monday, time: t("09:00"), lastEnqueuedFor: nil)
    ///     // (2026-03-30, 2026-03-30T08:00Z) once London's clock reached 09:00 BST on Monday the 30th;
    ///     // nil on every other day of the week
    public static func weeklyDue(now: Date, zone: TimeZone, weekday: Weekday, time: LocalTime,
                                 advance: TimeInterval = 0, lastEnqueuedFor: LocalDate?) -> (date: LocalDate, at: Date)? {
        guard let due = dailyDue(now: now, zone: zone, time: time, advance: advance, lastEnqueuedFor: lastEnqueuedFor),
              due.date.weekday == weekday else { return nil }
        return due
    }

    /// Whether a stored instant (`at`, `ends_at`, or the reminder's instant computed from it) is a real one
    /// to schedule at. Not PostgreSQL's `-infinity` and `infinity` (read as `Date.distantPast` and
    /// `Date.distantFuture`), and within the years 0001–9999 that `ISO8601` writes as they are: a BC
    /// date, or a dose at 00:10 on 0001-01-01 reminded 30 minutes before, is not. (ISO8601.string wrote
    /// such instants as year 0000, which PostgreSQL refuses; it now clamps them to year 1.) The reminders phase
    /// skips such a reminder (and logs its id) instead of enqueuing a row PostgreSQL would refuse, which
    /// would roll back the reminders of everyone else.
    ///
    ///     ReminderSchedule.isSchedulable(.distantPast)                  // false (-infinity)
    ///     ReminderSchedule.isSchedulable(ISO8601.parse("2026-01-25T09:00:00Z")!)   // true
    public static func isSchedulable(_ instant: Date) -> Bool {
        instant > .distantPast && instant < .distantFuture && ISO8601.isWritable(instant)
    }

    /// A one-off event at an instant (a dose, a washout's start or end, a test start): the reminder's
    /// instant, `advance` seconds before the event, when it is due at `now`; nil before.
    public static func onceDue(now: Date, event: Date, advance: TimeInterval = 0) -> Date? {
        let at = event.addingTimeInterval(-advance)
        return at <= now ? at : nil
    }
}
