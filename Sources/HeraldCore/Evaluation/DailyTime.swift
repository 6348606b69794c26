import Foundation

/// "Once a day at a local time": which local date a daily event is due for at an instant.
///
///     DailyTime.dateReached(LocalTime("08:00")!, at: now, in: zone("America/New_York"))
///     // 2026-01-25 once New York's clock shows 08:00 or later on the 25th; nil from midnight to 07:59:59
///
/// The wall clock is compared, so a time inside a spring-forward gap (02:30 when 02:00 jumps to 03:00)
/// is reached at the jump, and a time that occurs twice (clocks set back) is reached the first time.
/// Before the time it is nil: the previous day's event is not owed any more.
public enum DailyTime {
    public static func dateReached(_ time: LocalTime, at now: Date, in zone: TimeZone) -> LocalDate? {
        let wall = Zone.local(now, in: zone)
        return wall.time >= time ? wall.date : nil
    }
}
