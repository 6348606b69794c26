import Foundation

/// When to retry a failed delivery.
///
///     Backoff.delay(attempt: 1, retryAfter: nil, random: 0.5)    // 30 s
///     Backoff.delay(attempt: 3, retryAfter: nil, random: 0.5)    // 120 s
///     Backoff.delay(attempt: 3, retryAfter: 7, random: 0.5)      // 7 s: the provider's Retry-After wins
///     Backoff.parseRetryAfter("120", now: now)                   // 120
///     Backoff.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: now)
public enum Backoff {
    public static let base: Double = 30
    public static let cap: Double = 3600
    /// A provider's Retry-After is honoured up to this long.
    public static let retryAfterCap: Double = 24 * 3600
    public static let jitter: Double = 0.2

    /// Seconds to wait before the next attempt. `attempt` counts from 1 (the attempt that just failed);
    /// `random` is a number in 0..<1, injected so the result is reproducible. Without a `retryAfter`:
    /// 30 s × 2^(attempt−1), capped at 1 h, then ±20 % (random 0 → −20 %, 0.5 → exact, →1 → +20 %).
    public static func delay(attempt: Int, retryAfter: Double?, random: Double) -> Double {
        if let retryAfter = retryAfter.flatMap(clampedWait) {
            return retryAfter
        }
        let exponent = Double(min(max(attempt, 1) - 1, 30))
        let plain = min(base * pow(2, exponent), cap)
        let r = random.isFinite ? min(max(random, 0), 1) : 0.5
        return plain * (1 + jitter * (2 * r - 1))
    }

    /// A provider's wait as a delay: at most `retryAfterCap` (24 h), at least 0; nil when it is not a
    /// number at all (NaN, ±infinity). Every wait a provider names goes through here.
    ///
    ///     Backoff.clampedWait(120)       // 120
    ///     Backoff.clampedWait(1e300)     // 86400
    ///     Backoff.clampedWait(-5)        // 0
    ///     Backoff.clampedWait(.nan)      // nil
    public static func clampedWait(_ seconds: Double) -> Double? {
        guard seconds.isFinite else { return nil }
        return min(max(seconds, 0), retryAfterCap)
    }

    /// Parses an HTTP `Retry-After` header into seconds from `now`: delta-seconds ("120") or an
    /// HTTP-date (IMF-fixdate "Wed, 21 Oct 2015 07:28:00 GMT", and the obsolete RFC 850 and asctime
    /// forms). A date in the past gives 0; a wait longer than 24 h (however many digits) gives 24 h.
    /// Nil when the header is neither (negative or fractional numbers, garbage, a date outside the
    /// years 1–9999).
    public static func parseRetryAfter(_ header: String, now: Date) -> Double? {
        let h = header.trimmingCharacters(in: .whitespaces)
        if !h.isEmpty, h.allSatisfy(\.isASCII), h.allSatisfy(\.isNumber) {
            return Double(h).map { $0.isFinite ? min($0, retryAfterCap) : retryAfterCap }   // 400 digits: +inf
        }
        guard let date = httpDate(h) else { return nil }
        return clampedWait(date.timeIntervalSince(now))
    }

    /// Parses a rate-limit reset header given as a unix time in seconds (SendGrid's `X-RateLimit-Reset`)
    /// into seconds from `now`, within 0…24 h. Nil when it is not a non-negative number (`-1`, `inf`,
    /// `nan`, garbage).
    ///
    ///     Backoff.parseResetTime("1769310060", now: now)   // 60 when now is 1769310000
    ///     Backoff.parseResetTime("1e300", now: now)        // 86400
    ///     Backoff.parseResetTime("-1", now: now)           // nil
    public static func parseResetTime(_ header: String, now: Date) -> Double? {
        let h = header.trimmingCharacters(in: .whitespaces)
        guard !h.isEmpty, h.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "e" || $0 == "E" || $0 == "+") }),
              let reset = Double(h), !reset.isNaN, reset >= 0 else { return nil }
        // A reset too far ahead for a Double ("1e400", 400 digits) is as far ahead as the cap.
        return reset.isInfinite ? retryAfterCap : clampedWait(reset - now.timeIntervalSince1970)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun",
                                 "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Parses the three HTTP-date forms of RFC 9110 §5.6.7.
    static func httpDate(_ s: String) -> Date? {
        // Split on spaces, commas and (for RFC 850) dashes in the date part.
        let words = s.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: String?
        switch words.count {
        case 6 where words[5].uppercased() == "GMT":            // Wed, 21 Oct 2015 07:28:00 GMT
            day = Int(words[1]); month = monthIndex(words[2]); year = Int(words[3]); clock = words[4]
        case 4 where words[3].uppercased() == "GMT":            // Wednesday, 21-Oct-15 07:28:00 GMT
            let d = words[1].split(separator: "-").map(String.init)
            guard d.count == 3, let yy = Int(d[2]) else { return nil }
            day = Int(d[0]); month = monthIndex(d[1]); clock = words[2]
            year = d[2].count == 2 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
        case 5:                                                 // Wed Oct 21 07:28:00 2015
            month = monthIndex(words[1]); day = Int(words[2]); clock = words[3]; year = Int(words[4])
        default:
            return nil
        }
        // HTTP-dates have four-digit years (RFC 9110 §5.6.7); a larger one is not a date, and would
        // overflow the day arithmetic.
        guard let day, let month, let year, let clock, let t = LocalTime(clock), (1...31).contains(day),
              (1...9999).contains(year) else {
            return nil
        }
        let days = LocalDate(year: year, month: month, day: day).daysSinceEpoch
        return Date(timeIntervalSince1970: Double(days * 86_400 + t.secondsSinceMidnight))
    }

    private static func monthIndex(_ s: String) -> Int? {
        months.firstIndex(of: s.lowercased()).map { $0 + 1 }
    }
}
