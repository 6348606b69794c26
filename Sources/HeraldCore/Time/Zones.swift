import Foundation

/// Time zone arithmetic on whole seconds: instant → wall clock, and wall clock → instant.
///
///     let ny = Zone.named("America/New_York")!
///     Zone.local(Date(timeIntervalSince1970: 1_769_310_000), in: ny)   // 2026-01-24T22:00:00
///     Zone.instant(of: LocalDate("2026-03-08")!, LocalTime("02:30")!, in: ny)
///     // 02:30 does not exist that night: the moment clocks jump to 03:00 (07:00 UTC)
///
/// Wall clocks are judged at whole seconds: fractional seconds of an instant are dropped (floored).
public enum Zone {
    /// Which of the two instants to take when a wall time occurs twice (clocks set back).
    public enum Overlap: Sendable {
        case earlier, later
    }

    // MARK: Lookup

    nonisolated(unsafe) private static var cache: [String: TimeZone?] = [:]
    private static let lock = NSLock()
    private static let known: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC", "GMT"])

    /// The zone for an IANA identifier, or nil when the identifier is not a known zone.
    /// Lookups are cached (the worker asks for the same few zones thousands of times).
    ///
    ///     Zone.named("Europe/London")   // TimeZone
    ///     Zone.named("Mars/Olympus")    // nil
    ///     Zone.named("GMT+5")           // nil: Foundation accepts it loosely, IANA does not know it
    public static func named(_ id: String) -> TimeZone? {
        lock.lock()
        defer { lock.unlock() }
        if let hit = cache[id] { return hit }
        var zone: TimeZone? = nil
        if let tz = TimeZone(identifier: id), isIANA(id, resolvedAs: tz.identifier) { zone = tz }
        cache[id] = zone
        return zone
    }

    /// Foundation resolves loose spellings ("GMT+5" → "GMT+0500", "america/new_york"); IANA names only
    /// resolve to themselves. ICU's known list holds the canonical names (it lacks some current aliases
    /// such as "Asia/Kolkata"), so a name is accepted when it is known or resolves to itself, and is not
    /// an ad-hoc offset.
    private static func isIANA(_ id: String, resolvedAs resolved: String) -> Bool {
        if known.contains(id) { return true }
        guard resolved == id else { return false }
        let adHocOffset = ["GMT+", "GMT-", "UTC+", "UTC-"].contains { id.hasPrefix($0) }
        return !adHocOffset
    }

    // MARK: Instant → wall clock

    /// The wall-clock date and time of `instant` in `zone`.
    public static func local(_ instant: Date, in zone: TimeZone) -> LocalDateTime {
        let t = wholeSeconds(instant)
        let wall = t + zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t)))
        let days = floorDiv(wall, 86_400)
        let s = wall - days * 86_400
        return LocalDateTime(date: LocalDate(daysSinceEpoch: days),
                             time: LocalTime(hour: s / 3600, minute: s % 3600 / 60, second: s % 60))
    }

    /// The wall-clock date of `instant` in `zone`.
    public static func localDate(_ instant: Date, in zone: TimeZone) -> LocalDate {
        local(instant, in: zone).date
    }

    // MARK: Wall clock → instant

    /// The instant at which the wall clock in `zone` shows `date` `time`.
    ///
    /// - In a gap (clocks jump forward over this wall time) it is the first instant after the gap:
    ///   the moment the clocks jump.
    /// - In an overlap (clocks set back, the wall time occurs twice) it is the earlier instant, or the
    ///   later one when `overlap` is `.later`.
    ///
    /// `time` may be 24:00:00 (PostgreSQL allows it): midnight at the end of `date`.
    public static func instant(of date: LocalDate, _ time: LocalTime, in zone: TimeZone,
                               overlap: Overlap = .earlier) -> Date {
        instant(of: LocalDateTime(date: date, time: time), in: zone, overlap: overlap)
    }

    public static func instant(of wall: LocalDateTime, in zone: TimeZone, overlap: Overlap = .earlier) -> Date {
        let w = wall.wallSeconds
        // The offsets in force a day either side of the wall time cover any one transition near it.
        let before = offset(at: w - 86_400, in: zone)
        let after = offset(at: w + 86_400, in: zone)
        let candidates = Set([before, offset(at: w, in: zone), after])
            .map { w - $0 }
            .filter { w - offset(at: $0, in: zone) == $0 }      // t + offset(t) == w
            .sorted()
        if let first = candidates.first, let last = candidates.last {
            return date(overlap == .earlier ? first : last)
        }
        // A gap: no instant shows this wall time. Clocks jumped between w - after and w - before;
        // find the first second carrying the new offset.
        var lo = min(w - after, w - before), hi = max(w - after, w - before)
        let old = offset(at: lo, in: zone)
        while lo + 1 < hi {                                       // invariant: offset(lo) == old != offset(hi)
            let mid = lo + (hi - lo) / 2
            if offset(at: mid, in: zone) == old { lo = mid } else { hi = mid }
        }
        return date(hi)
    }

    // MARK: Transitions

    /// The first whole second in `(after, through]` at which `zone`'s UTC offset differs from its offset
    /// at `after`: the moment its clocks jump. Nil when they do not jump in that span.
    ///
    /// The offset is sampled every hour and the change bisected to the second, so two jumps less than an
    /// hour apart that cancel out would go unseen (no zone in tzdata has done that since 1970).
    ///
    ///     Zone.nextTransition(after: 2026-03-08T00:00Z, through: 2026-03-09T00:00Z, in: newYork)
    ///     // 2026-03-08T07:00Z (02:00 EST → 03:00 EDT)
    public static func nextTransition(after start: Int, through limit: Int, in zone: TimeZone) -> Int? {
        let old = offset(at: start, in: zone)
        var lo = start
        while lo < limit {
            let hi = min(lo + 3600, limit)
            if offset(at: hi, in: zone) != old {
                var (a, b) = (lo, hi)                             // invariant: offset(a) == old != offset(b)
                while a + 1 < b {
                    let mid = a + (b - a) / 2
                    if offset(at: mid, in: zone) == old { a = mid } else { b = mid }
                }
                return b
            }
            lo = hi
        }
        return nil
    }

    // MARK: Helpers

    static func wholeSeconds(_ d: Date) -> Int { Int(d.timeIntervalSince1970.rounded(.down)) }
    private static func date(_ t: Int) -> Date { Date(timeIntervalSince1970: Double(t)) }
    private static func offset(at t: Int, in zone: TimeZone) -> Int { zone.secondsFromGMT(for: date(t)) }
    private static func floorDiv(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
