/// A wall-clock date and time without a zone: what a clock on the recipient's wall shows.
///
///     let t = LocalDateTime(date: LocalDate(year: 2026, month: 1, day: 25), time: LocalTime(hour: 22, minute: 0))
///     t.description        // "2026-01-25T22:00:00"
public struct LocalDateTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var date: LocalDate
    public var time: LocalTime

    public init(date: LocalDate, time: LocalTime) {
        self.date = date
        self.time = time
    }

    /// Seconds since 1970-01-01T00:00:00 on this wall clock (not an instant: no zone is involved).
    public var wallSeconds: Int { date.daysSinceEpoch * 86_400 + time.secondsSinceMidnight }

    /// ISO 8601 without an offset, e.g. "2026-01-25T22:00:00".
    public var description: String { "\(date)T\(time)" }

    public static func < (a: LocalDateTime, b: LocalDateTime) -> Bool { a.wallSeconds < b.wallSeconds }
}
