/// A day of the week, numbered as the reminders design's weekly trigger numbers it (Expo's
/// `WeeklyTriggerInput.weekday`, and `reminders.weekday`): 1 is Sunday, 7 is Saturday.
///
///     LocalDate("2026-03-08")!.weekday   // .sunday (rawValue 1)
public enum Weekday: Int, CaseIterable, Sendable, Codable {
    case sunday = 1, monday, tuesday, wednesday, thursday, friday, saturday
}

extension LocalDate {
    /// The day of the week of this date (proleptic Gregorian: 1970-01-01 was a Thursday).
    public var weekday: Weekday {
        let sinceSunday = ((daysSinceEpoch + 4) % 7 + 7) % 7
        return Weekday(rawValue: sinceSunday + 1)!
    }
}
