import Foundation
import HeraldCore
import HeraldPostgres

/// The metric values the pattern rules read for a set of users: per user and metric, the 120 days
/// ending at the user's latest metric date (L), NaN where a day has no value.
///
///     let windows = try MetricWindows.read(users: chunk, latest: latestByUser, metrics: ["sleep_minutes"], db: db)
///     PatternEvaluator.evaluate(window: windows.window(slot: 0, metric: 0), latest: l, threshold: t)   // users[0]
struct MetricWindows: Sendable {
    let metrics: [String]
    /// The users it holds windows of, in the order read.
    let users: [UUID]
    private(set) var values: [Double]
    /// Users with a value no rule can use (NaN, infinite, beyond float8): their evaluation fails.
    private(set) var poisoned: Set<UUID> = []

    private static let days = PatternEvaluator.windowDays

    /// The most users whose windows fill 12 MiB of values (3,276 users of 4 metrics): what the
    /// pattern phase's readers share. Each read scans what it must of the table (apps write a day's
    /// rows for all users together, so even a thousand users' rows lie on most pages); a reader
    /// evaluates its windows as soon as they are read and drops them (`PatternEvaluations`), so two
    /// readers with half of it each hold no more than one reader with all of it: the pass's peak
    /// stays under that of reading one chunk at a time with whole results (54 MB at 10,000 users ×
    /// 4 metrics).
    ///
    ///     MetricWindows.maxUsers(metrics: 4)   // 3276
    static func maxUsers(metrics: Int) -> Int {
        max(1, cellBudget / (max(1, metrics) * days))
    }

    static let cellBudget = 12 * 1_048_576 / MemoryLayout<Double>.size

    init(users: [UUID], metrics: [String]) {
        self.metrics = metrics
        self.users = users
        values = [Double](repeating: .nan, count: users.count * metrics.count * Self.days)
    }

    /// The window of `users[slot]` for `metrics[metric]`: what a walk over every user reads, with
    /// no dictionary to hash a uuid or a metric's name in.
    func window(slot: Int, metric: Int) -> ArraySlice<Double> {
        let start = offset(slot, metric)
        return values[start..<start + Self.days]
    }

    /// The position of `metric` in `metrics`; nil if it was not read.
    func metricPosition(_ metric: String) -> Int? { metrics.firstIndex(of: metric) }

    private func offset(_ u: Int, _ m: Int) -> Int { (u * metrics.count + m) * Self.days }

    /// Reads the users' rows in one query, streamed (`PGConnection.stream`): each row goes into its
    /// window as it arrives, while the server produces the next, and no result holding every row is
    /// ever built, so the read's memory is the windows'. Unordered: apps write a day's rows for every
    /// user together, so a user's rows lie on as many pages as they have days, and an ORDER BY by
    /// user (an index scan, or a sort) costs the server several times the plain scan; the planner
    /// serves `= any(…)` from a scan with a hashed filter or, for a few users, from the
    /// (user_id, metric_date) index. `metrics` are numeric columns of wearable_daily_metrics; users
    /// without an L are left out. `keyByHash: false` reads the uuids themselves, as a chunk whose
    /// users share a hash does.
    static func read(users: [UUID], latest: [UUID: LocalDate], metrics: [String], db: PGConnection,
                     keyByHash: Bool = true) throws -> MetricWindows {
        let users = users.filter { latest[$0] != nil }
        var windows = MetricWindows(users: users, metrics: metrics)
        guard let earliestLatest = users.compactMap({ latest[$0] }).min(), !metrics.isEmpty else { return windows }
        // The columns as the server holds them (numeric), parsed here with strtod: no float8 conversion
        // per cell on the server. A value no rule can use (numeric NaN, ±Infinity, or beyond a Double
        // such as 1e400, which strtod reads as infinity) marks its user poisoned instead of failing
        // the read.
        let columns = metrics.map { "m.\(SQL.quoteIdentifier($0))" }.joined(separator: ", ")
        // Each row names its user by `uuid_hash(user_id)`, an int4 the server prints several times
        // faster than the uuid's 36 characters (the uuid's text is a third of the read's server time).
        // The chunk's own hashes, asked first, map them back; if two of its users share one, the
        // rows carry the uuid itself.
        let slotByHash = keyByHash ? try hashSlots(users, db: db) : nil
        let key = slotByHash == nil ? "m.user_id" : "uuid_hash(m.user_id)"
        let firstDay = users.map { latest[$0]!.daysSinceEpoch - (days - 1) }
        // Columns by position, parsed where libpq holds them: this loop reads millions of cells.
        let metricColumns = metrics.enumerated().map { m, _ in 2 + m }
        // Without hashes, rows name the uuid itself: a user listed twice fills their first slot.
        let slot = slotByHash == nil ? Dictionary(users.enumerated().map { ($1, $0) }) { first, _ in first } : [:]
        let stride = metrics.count * days
        var poisoned = Set<Int>()
        _ = try windows.values.withUnsafeMutableBufferPointer { values in
            try db.stream("""
                select \(unescaped: key), (metric_date - date '1970-01-01') as d, \(unescaped: columns) from wearable_daily_metrics m
                 where user_id = any(\(users)::uuid[])
                   and metric_date > \(earliestLatest.adding(days: -days).description)::date
                """) { row in
                let user: Int?
                if let slotByHash { user = row.int(at: 0).flatMap { slotByHash[$0] } } else { user = row.uuid(at: 0).flatMap { slot[$0] } }
                // Days since 1970 arrive as an integer: no date text to parse for every row.
                guard let u = user, let day = row.int(at: 1),
                      case let offset = day - firstDay[u], offset >= 0 && offset < days else { return }
                for (m, column) in metricColumns.enumerated() {
                    guard let v = row.double(at: column) else { continue }
                    if v.isFinite { values[u * stride + m * days + offset] = v } else { poisoned.insert(u) }
                }
            }
        }
        windows.poisoned = Set(poisoned.map { users[$0] })
        return windows
    }

    /// Each user's position in `users`, by the server's `uuid_hash` of their id; nil when two of
    /// them share a hash (about one chunk of 10,000 in a thousand users) or an answer is missing.
    static func hashSlots(_ users: [UUID], db: PGConnection) throws -> HashSlots? {
        let rows = try db.query("""
            select uuid_hash(u) from unnest(\(users)::uuid[]) with ordinality as x(u, i) order by i
            """)
        guard rows.count == users.count else { return nil }
        var slots = HashSlots(capacity: users.count)
        for (i, row) in rows.enumerated() {
            guard let h = row.int(at: 0), slots.insert(h, slot: i) else { return nil }
        }
        return slots
    }
}
