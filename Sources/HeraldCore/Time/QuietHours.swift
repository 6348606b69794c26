import Foundation

/// A recipient's quiet hours: a daily window of wall-clock time, judged in the recipient's zone.
///
///     let w = QuietWindow(start: LocalTime("22:00"), end: LocalTime("07:00"))   // spans midnight
///     w.contains(LocalTime("23:30")!)        // true
///     w.contains(LocalTime("07:00")!)        // false: the end is not quiet
///     w.isQuiet(at: now, in: Zone.named("Europe/London")!)
///
/// There is no window when either end is missing or both are equal (seed 000).
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

    /// Seed 000's rule, with seconds: spanning midnight (start > end) it is quiet when
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
    /// `now` itself when it is not quiet.
    ///
    /// Being out of the window is judged by the wall clock at each instant:
    /// - when the end wall time falls in a spring-forward gap (a 22:00–02:30 window on a night when
    ///   clocks jump 02:00 → 03:00), the window ends at the jump;
    /// - when the end falls in a fall-back overlap (a window ending at 01:30 on a night when 02:00
    ///   becomes 01:00 again), the window ends at the *first* 01:30. The wall clock re-enters the
    ///   window at the second 01:00 and, if asked then, the window ends at the second 01:30.
    ///
    ///     w.end(after: Date("2026-01-25T03:00Z"), in: london)   // 2026-01-25T07:00Z
    public func end(after now: Date, in zone: TimeZone) -> Date {
        guard let s = start, let e = end else { return now }
        let wall = Zone.local(now, in: zone)
        guard contains(wall.time) else { return now }
        // Inside a window that spans midnight and began today, it ends tomorrow; otherwise today.
        let endDate = (s > e && wall.time >= s) ? wall.date.adding(days: 1) : wall.date
        let earlier = Zone.instant(of: endDate, e, in: zone, overlap: .earlier)
        if earlier >= now { return earlier }
        return Zone.instant(of: endDate, e, in: zone, overlap: .later)
    }

    /// "22:00:00-07:00:00", or nil when there is no window (for the decision trail).
    public var trailText: String? {
        guard !isNone, let s = start, let e = end else { return nil }
        return "\(s)-\(e)"
    }

    public var description: String { trailText ?? "none" }
}
