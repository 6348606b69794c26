import Foundation

/// Random daily prompts: N prompts spread across the waking window of a local day, one per equal segment,
/// each at the segment's centre ± up to 30% of the segment's length.
///
///     PromptSchedule.instants(user: alice, date: day("2026-01-25"), count: 4,
///                             wakingStartHour: 7, wakingEndHour: 22, zone: zone("Europe/London"))
///     // 4 instants, one in each of 07:00–10:45, 10:45–14:30, 14:30–18:15, 18:15–22:00 (London),
///     // the same 4 every time for alice on that date
///
/// - The window starts at `wakingStartHour`:00 on `date`; when `wakingEndHour` ≤ `wakingStartHour` it
///   ends on the next local day (22 → 2 crosses midnight, 7 → 7 is 24 hours).
/// - The window's ends are wall times turned into instants with `Zone` (a wall time in a DST gap is the
///   moment clocks jump); the window between them is split in elapsed time, so on a DST day the segments
///   stay equal and every prompt stays inside the window.
/// - Prompts are whole seconds, seeded by (user, date), and returned sorted.
/// - A count below 1 gives no prompts; above 100 is treated as 100. Hours outside 0–23 give no prompts.
public enum PromptSchedule {
    public static let maxCount = 100
    /// How far from its segment's centre a prompt may fall, as a fraction of the segment's length.
    public static let spread = 0.3

    public static func instants(user: UUID, date: LocalDate, count: Int, wakingStartHour: Int, wakingEndHour: Int,
                                zone: TimeZone) -> [Date] {
        guard count >= 1, (0...23).contains(wakingStartHour), (0...23).contains(wakingEndHour) else { return [] }
        let n = min(count, maxCount)
        let (start, end) = window(date: date, wakingStartHour: wakingStartHour, wakingEndHour: wakingEndHour,
                                  zone: zone)
        let from = Double(Zone.wholeSeconds(start))
        let segment = (Double(Zone.wholeSeconds(end)) - from) / Double(n)
        var rng = SplitMix64(seed: SplitMix64.seed(user, date))
        return (0..<n).map { i in
            let centre = from + segment * (Double(i) + 0.5)
            let lo = Int((centre - spread * segment).rounded(.up))
            let hi = Int((centre + spread * segment).rounded(.down))
            let t = lo + Int(rng.next(below: UInt64(max(0, hi - lo) + 1)))
            return Date(timeIntervalSince1970: Double(t))
        }
    }

    /// The waking window of `date` as instants: [start, end).
    public static func window(date: LocalDate, wakingStartHour: Int, wakingEndHour: Int,
                              zone: TimeZone) -> (start: Date, end: Date) {
        let endDate = wakingEndHour <= wakingStartHour ? date.adding(days: 1) : date
        return (Zone.instant(of: date, LocalTime(hour: wakingStartHour, minute: 0), in: zone),
                Zone.instant(of: endDate, LocalTime(hour: wakingEndHour, minute: 0), in: zone))
    }
}
