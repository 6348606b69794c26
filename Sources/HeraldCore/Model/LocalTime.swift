/// A wall-clock time of day, as PostgreSQL's `time` stores it ("22:00:00").
///
///     let start = LocalTime("22:00")!        // 22:00:00
///     start.secondsSinceMidnight             // 79200
public struct LocalTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var hour: Int
    public var minute: Int
    public var second: Int

    public init(hour: Int, minute: Int, second: Int = 0) {
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    /// Parses "HH:MM" or "HH:MM:SS" (fractional seconds are dropped). Nil when malformed or out of range.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3,
              let h = Int(parts[0]), let m = Int(parts[1]) else { return nil }
        var s = 0
        if parts.count == 3 {
            guard let whole = Int(parts[2].split(separator: ".").first ?? "") else { return nil }
            s = whole
        }
        guard (0...23).contains(h), (0...59).contains(m), (0...59).contains(s) else {
            // PostgreSQL allows 24:00:00; treat it as the end of the day.
            if h == 24 && m == 0 && s == 0 { self.init(hour: 24, minute: 0, second: 0); return }
            return nil
        }
        self.init(hour: h, minute: m, second: s)
    }

    public var secondsSinceMidnight: Int { hour * 3600 + minute * 60 + second }

    public var description: String {
        guard (0..<100).contains(hour), (0..<100).contains(minute), (0..<100).contains(second) else {
            func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            return "\(two(hour)):\(two(minute)):\(two(second))"
        }
        // Digits written in place: every decision's trail writes a time or two.
        return String(unsafeUninitializedCapacity: 8) { out in
            for (i, n) in [hour, minute, second].enumerated() {
                out[i * 3] = UInt8(ascii: "0") + UInt8(n / 10)
                out[i * 3 + 1] = UInt8(ascii: "0") + UInt8(n % 10)
                if i < 2 { out[i * 3 + 2] = UInt8(ascii: ":") }
            }
            return 8
        }
    }

    public static func < (a: LocalTime, b: LocalTime) -> Bool { a.secondsSinceMidnight < b.secondsSinceMidnight }
}

/// A calendar date without a time zone, as PostgreSQL's `date` stores it ("2026-01-25").
public struct LocalDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses "YYYY-MM-DD".
    public init?(_ text: String) {
        // The fixed form PostgreSQL prints, without building substrings (read for every metric row).
        var text = text
        let fast: (Int, Int, Int)? = text.withUTF8 { u in
            guard u.count == 10, u[4] == 45, u[7] == 45 else { return nil }
            var n = [0, 0, 0]
            for (i, range) in [(0, 0..<4), (1, 5..<7), (2, 8..<10)] {
                for j in range {
                    guard u[j] >= 48 && u[j] <= 57 else { return nil }
                    n[i] = n[i] * 10 + Int(u[j] - 48)
                }
            }
            return (n[0], n[1], n[2])
        }
        if let (y, m, d) = fast {
            guard (1...12).contains(m), (1...31).contains(d) else { return nil }
            self.init(year: y, month: m, day: d)
            return
        }
        let parts = text.split(separator: "-")
        guard parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              (0...LocalDate.maxYear).contains(y), (1...12).contains(m), (1...31).contains(d) else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// PostgreSQL's last year for `date`; parsed years beyond it are refused, which also keeps the day
    /// arithmetic (`daysSinceEpoch`, seconds of a wall clock) far from overflowing.
    public static let maxYear = 5_874_897

    public var description: String {
        guard (0..<10_000).contains(year), (0..<100).contains(month), (0..<100).contains(day) else {
            func pad(_ n: Int, _ w: Int) -> String {
                let s = String(n); return String(repeating: "0", count: max(0, w - s.count)) + s
            }
            return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
        }
        // Digits written in place: every decision's trail writes its local date.
        return String(unsafeUninitializedCapacity: 10) { out in
            let digits = [year / 1000, year / 100 % 10, year / 10 % 10, year % 10, -1,
                          month / 10, month % 10, -1, day / 10, day % 10]
            for (i, d) in digits.enumerated() { out[i] = d < 0 ? UInt8(ascii: "-") : UInt8(ascii: "0") + UInt8(d) }
            return 10
        }
    }

    /// Days since 1970-01-01 (proleptic Gregorian), for arithmetic without a calendar object.
    public var daysSinceEpoch: Int {
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    public init(daysSinceEpoch z0: Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.init(year: yoe + era * 400 + (m <= 2 ? 1 : 0), month: m, day: d)
    }

    public func adding(days: Int) -> LocalDate { LocalDate(daysSinceEpoch: daysSinceEpoch + days) }

    public static func < (a: LocalDate, b: LocalDate) -> Bool { a.daysSinceEpoch < b.daysSinceEpoch }
}
