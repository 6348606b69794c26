import Foundation

/// A recipient's quiet hours: a daily window of wall-clock time, judged in the recipient's zone.
///
///     let w = QuietWindow(start: LocalTime("22:00"), end: LocalTime("07:00"))   // spans midnight
///     w.contains(LocalTime("23:30")!)        // true
///     w.contains(LocalTime("07:00")!)        // false: the end is not quiet
///     w.isQuiet(at: now, in: Zone.named("Europe/London")!)
///
/// There is no window when either end is missing or both are equal.
public struct QuietWindow: Sendable, Equatable, CustomStringConvertible {
    public var start: LocalTime?
    public var end: LocalTime?

    public init(start: LocalTime?, end: LocalTime?) {
        self.start = start
        self.end = end
    }

    /// True when the window is empty: a missing end, or start == end.
    public var isNone: Bool {
        guard let s = start, let e = end else { return true }
        return s.secondsSinceMidnight == e.secondsSinceMidnight
    }

    /// To the second: spanning midnight (start > end) it is quiet when
    /// `t >= start || t < end`; otherwise when `start <= t < end`.
    public func contains(_ t: LocalTime) -> Bool {
        guard !isNone, let s = start?.secondsSinceMidnight, let e = end?.secondsSinceMidnight else { return false }
        let x = t.secondsSinceMidnight
        return s > e ? (x >= s || x < e) : (x >= s && x < e)
    }

    /// Whether the wall clock in `zone` is inside the window at `instant`.
    public func isQuiet(at instant: Date, in zone: TimeZone) -> Bool {
        contains(Zone.local(instant, in: zone).time)
    }

    /// The first instant at or after `now` at which the wall clock is no longer in the window;
    /// `now` itself when it is not quiet. A row deferred to it is not quiet then, and would have been quiet
    /// at every earlier instant: this is `isQuiet`'s own answer, second by second.
    ///
    /// The wall clock runs on until it reads the end, unless the clocks jump first. A jump may leave the
    /// window (the first instant after it reads outside) or not (the clock runs on from the new reading):
    /// - an end in a spring-forward gap (a 22:00–02:30 window on a night when clocks jump 02:00 → 03:00):
    ///   the window ends at the jump;
    /// - a gap over the whole open part (02:30–02:00 that night): still quiet at 03:00, until 02:00 the
    ///   next night;
    /// - an end in a fall-back overlap (a window ending at 01:30 on a night when 02:00 becomes 01:00
    ///   again): the window ends at the *first* 01:30. The wall clock re-enters the window at the second
    ///   01:00 and, if asked then, the window ends at the second 01:30;
    /// - a window entered in the repeated hour (01:30–01:00, at the first 01:30): the clocks go back to
    ///   01:00, outside, and the window ends at that jump, not at 01:00 the next night.
    ///
    /// A window of the whole day (00:00–24:00) never ends; it is deferred to the next local midnight.
    ///
    ///     w.end(after: Date("2026-01-25T03:00Z"), in: london)   // 2026-01-25T07:00Z
    public func end(after now: Date, in zone: TimeZone) -> Date {
        guard !isNone, let e = end?.secondsSinceMidnight else { return now }
        guard contains(Zone.local(now, in: zone).time) else { return now }
        let endOfDay = e % 86_400                                   // 24:00 is the next midnight
        var t = Zone.wholeSeconds(now)
        // Each round follows one stretch of constant UTC offset; a zone changes offset a few times a year,
        // so this ends in a round or two. The bound only guards against a zone that jumps forever.
        for _ in 0..<16 {
            let offset = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t)))
            let tod = Self.mod(t + offset, 86_400)
            let toEnd = Self.mod(endOfDay - tod, 86_400)
            let reach = t + (toEnd == 0 ? 86_400 : toEnd)           // 0 only for the whole-day window
            // Inside, running on: every reading until the end is inside (the window is one arc of the
            // day's circle, and this one starts inside it), and the end is not.
            guard let jump = Zone.nextTransition(after: t, through: reach, in: zone) else {
                return Date(timeIntervalSince1970: Double(reach))
            }
            let there = Date(timeIntervalSince1970: Double(jump))
            if !contains(Zone.local(there, in: zone).time) { return there }
            t = jump
        }
        return Date(timeIntervalSince1970: Double(t))
    }

    private static func mod(_ a: Int, _ b: Int) -> Int { ((a % b) + b) % b }

    /// "22:00:00-07:00:00", or nil when there is no window (for the decision trail).
    public var trailText: String? {
        guard !isNone, let s = start, let e = end else { return nil }
        return "\(s)-\(e)"
    }

    public var description: String { trailText ?? "none" }
}
