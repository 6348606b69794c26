import Foundation

/// RFC 3339 timestamps without a formatter object (fast, thread-safe, no locale surprises).
///
///     ISO8601.string(date)                      // "2026-01-25T03:00:00.000000Z"
///     ISO8601.parse("2026-01-25T03:00:00Z")     // a Date
///     ISO8601.parse("2026-01-25T22:00:00-05:00")
public enum ISO8601 {
    /// The whole seconds written as they are: the four-digit years from 0001-01-01T00:00:00Z to
    /// 9999-12-31T23:59:59Z. Year 0000 is left out: PostgreSQL refuses it (it writes 1 BC instead), and
    /// this text goes into `timestamptz` columns.
    static let writableSeconds: ClosedRange<Int> = -62_135_596_800 ... 253_402_300_799

    /// Whether `date` is written as itself, not clamped: within the years 0001–9999.
    ///
    ///     ISO8601.isWritable(Date(timeIntervalSince1970: -62_135_596_800))   // true: 0001-01-01T00:00:00Z
    ///     ISO8601.isWritable(Date.distantPast)   // false: 0000-12-30 (Foundation's is Julian 0001-01-01)
    public static func isWritable(_ date: Date) -> Bool {
        let t = date.timeIntervalSince1970
        return t >= Double(writableSeconds.lowerBound) && t < Double(writableSeconds.upperBound + 1)
    }

    /// Any date, including those computed from a provider's numbers: one outside the years 0001–9999 is
    /// written as the nearest end of that range (…T00:00:00.000000Z or …T23:59:59.999999Z), and NaN as
    /// the epoch, so writing never traps and PostgreSQL reads whatever it writes. Where a clamped date
    /// would be wrong rather than merely odd, check `isWritable` first.
    public static func string(_ date: Date) -> String {
        let raw = date.timeIntervalSince1970
        let low = Double(writableSeconds.lowerBound), high = Double(writableSeconds.upperBound)
        let t = raw.isNaN ? 0 : min(max(raw, low), high + 1)
        var secs = Int(t.rounded(.down))
        var micros = Int(((t - Double(secs)) * 1_000_000).rounded())
        if micros >= 1_000_000 { secs += 1; micros -= 1_000_000 }
        if secs > writableSeconds.upperBound { secs = writableSeconds.upperBound; micros = 999_999 }
        let days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400
        let rem = secs - days * 86400
        let time = LocalTime(hour: rem / 3600, minute: rem % 3600 / 60, second: rem % 60)
        return "\(LocalDate(daysSinceEpoch: days))T\(time).\(pad(micros, 6))Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM[:SS[.fff…]](Z|±HH:MM)`; a space may stand for the `T`.
    public static func parse(_ text: String) -> Date? {
        let s = Array(text.utf8)
        guard s.count >= 16 else { return nil }
        func num(_ from: Int, _ len: Int) -> Int? {
            guard from + len <= s.count else { return nil }
            var v = 0
            for i in from..<(from + len) {
                let c = s[i]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            return v
        }
        guard let y = num(0, 4), s[4] == 45, let mo = num(5, 2), s[7] == 45, let d = num(8, 2),
              s[10] == 84 || s[10] == 32 || s[10] == 116, let h = num(11, 2), s[13] == 58, let mi = num(14, 2),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60 else { return nil }
        var i = 16
        var sec = 0
        var frac = 0.0
        if i < s.count, s[i] == 58 {
            guard let ss = num(i + 1, 2), ss < 61 else { return nil }
            sec = ss
            i += 3
            if i < s.count, s[i] == 46 {
                i += 1
                var scale = 0.1
                while i < s.count, s[i] >= 48, s[i] <= 57 {
                    frac += Double(s[i] - 48) * scale
                    scale /= 10
                    i += 1
                }
            }
        }
        var offset = 0
        guard i < s.count else { return nil }  // a zone is required: no silent local-time guesses
        if s[i] == 90 || s[i] == 122 {
            i += 1
        } else if s[i] == 43 || s[i] == 45 {
            let sign = s[i] == 45 ? -1 : 1
            guard let oh = num(i + 1, 2) else { return nil }
            var om = 0
            if i + 3 < s.count, s[i + 3] == 58 {
                guard let m = num(i + 4, 2) else { return nil }
                om = m
                i += 6
            } else if let m = num(i + 3, 2) {
                om = m
                i += 5
            } else {
                i += 3
            }
            offset = sign * (oh * 3600 + om * 60)
        } else {
            return nil
        }
        guard i == s.count else { return nil }
        let days = LocalDate(year: y, month: mo, day: d).daysSinceEpoch
        let seconds = days * 86400 + h * 3600 + mi * 60 + sec - offset
        return Date(timeIntervalSince1970: Double(seconds) + frac)
    }

    private static func pad(_ n: Int, _ w: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: max(0, w - s.count)) + s
    }
}
