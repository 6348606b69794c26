import Foundation

/// "Once a day at a local time": which local date a daily event is due for at an instant.
///
///     DailyTime.dateReached(LocalTime("08:00")!, at: now, in: zone("America/New_York"))
///     // 2026-01-25 once New York's clock shows 08:00 or later on the 25th; nil from midnight to 07:59:59
///
/// The wall clock is compared, so a time inside a spring-forward gap (02:30 when 02:00 jumps to 03:00)
/// is reached at the jump, and a time that occurs twice (clocks set back) is reached the first time.
/// Before the time it is nil — the previous day's event is not owed any more — except within `catchUp`
/// seconds after the previous day's time: a reminder at 23:57 is first seen by the pass at 00:00, and
/// with no catch-up it would never go out.
///
/// 24:00 (PostgreSQL's `time` accepts it) is midnight: the event of each local date is due as that date
/// begins, at 00:00, once a day, like a time of 00:00. A person who picks "24:00" for a reminder or a
/// forecast means midnight; reading it as the end of the date instead would send a forecast for a date
/// that has just passed.
public enum DailyTime {
    public static func dateReached(_ time: LocalTime, at now: Date, in zone: TimeZone,
                                   catchUp: TimeInterval = 0) -> LocalDate? {
        let wall = Zone.local(now, in: zone)
        let time = timeOfDay(time)
        if wall.time >= time { return wall.date }
        guard catchUp > 0 else { return nil }
        let yesterday = wall.date.adding(days: -1)
        let missed = now.timeIntervalSince(Zone.instant(of: yesterday, time, in: zone))
        return missed >= 0 && missed <= catchUp ? yesterday : nil
    }

    /// The wall-clock time an event of each day is at: `time`, except 24:00, which is 00:00 (see above).
    /// Compute the instant of a date's event with this time, not the stored one: `Zone.instant` reads
    /// 24:00 as the end of the date.
    ///
    ///     DailyTime.timeOfDay(LocalTime("24:00")!)   // 00:00:00
    public static func timeOfDay(_ time: LocalTime) -> LocalTime {
        time.secondsSinceMidnight >= 86_400 ? LocalTime(hour: 0, minute: 0) : time
    }
}
