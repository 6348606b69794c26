import Foundation

/// Fast conversion between `Date` and PostgreSQL's timestamp text, by hand: batches of thousands of
/// rows parse one timestamp per cell, and `DateFormatter` is far too slow for that.
///
///     PGTimestamp.format(date)                              // "2026-01-25T03:00:00.123456Z"
///     PGTimestamp.parse("2026-01-25 03:00:00.123456+00")    // a Date
enum PGTimestamp {
    /// Seconds from 1970-01-01 to 2001-01-01 (Foundation's reference date).
    private static let referenceOffsetMicros: Int64 = 978_307_200_000_000
    private static let microsPerDay: Int64 = 86_400_000_000

    /// Microseconds since 1970-01-01 UTC, rounded to the nearest microsecond (PostgreSQL's precision).
    static func micros(_ date: Date) -> Int64 {
        let scaled = (date.timeIntervalSinceReferenceDate * 1_000_000).rounded()
        let limit = 9.0e18
        let clamped = scaled.isNaN ? 0 : Swift.min(Swift.max(scaled, -limit), limit)
        return Int64(clamped) + referenceOffsetMicros
    }

    static func date(micros: Int64) -> Date {
        let (since2001, overflow) = micros.subtractingReportingOverflow(referenceOffsetMicros)
        guard !overflow else { return Date(timeIntervalSinceReferenceDate: (Double(micros) - Double(referenceOffsetMicros)) / 1_000_000) }
        return Date(timeIntervalSinceReferenceDate: Double(since2001) / 1_000_000)
    }

    /// ISO-8601 in UTC with exactly six fractional digits: `2026-01-25T03:00:00.123456Z`
    /// (years before 1 as PostgreSQL reads them: `0001-12-30T00:00:00.000000Z BC`).
    static func format(_ date: Date) -> String {
        let micros = micros(date)
        var days = micros / microsPerDay
        var rest = micros % microsPerDay
        if rest < 0 { rest += microsPerDay; days -= 1 }
        let (year, month, day) = civil(fromDays: days)
        let seconds = rest / 1_000_000
        let fraction = rest % 1_000_000

        guard (1...9999).contains(year) else {
            // Outside four-digit years, rare enough to format the slow way; PostgreSQL writes
            // year 0 as 1 BC, -1 as 2 BC, and so on.
            let time = "\(pad(seconds / 3600, 2)):\(pad(seconds / 60 % 60, 2)):\(pad(seconds % 60, 2)).\(pad(fraction, 6))Z"
            if year < 1 { return "\(pad(1 - year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(time) BC" }
            return "\(year)-\(pad(month, 2))-\(pad(day, 2))T\(time)"
        }
        return String(unsafeUninitializedCapacity: 27) { buffer in
            var i = 0
            func put(_ value: Int64, _ width: Int) {
                var value = value
                for position in stride(from: i + width - 1, through: i, by: -1) {
                    buffer[position] = UInt8(truncatingIfNeeded: 48 + value % 10)
                    value /= 10
                }
                i += width
            }
            func put(_ char: Unicode.Scalar) {
                buffer[i] = UInt8(ascii: char)
                i += 1
            }
            put(year, 4); put("-"); put(month, 2); put("-"); put(day, 2); put("T")
            put(seconds / 3600, 2); put(":"); put(seconds / 60 % 60, 2); put(":"); put(seconds % 60, 2)
            put("."); put(fraction, 6); put("Z")
            return i
        }
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// Parses `YYYY-MM-DD[ |T]HH:MM:SS[.ffffff][Z|±HH[:MM[:SS]]]`, a bare date `YYYY-MM-DD`
    /// (midnight UTC), `infinity` and `-infinity`. No offset means UTC. Nil for anything else.
    static func parse(_ text: String) -> Date? {
        if let result = text.utf8.withContiguousStorageIfAvailable({ parse(bytes: $0) }) {
            return result
        }
        return Array(text.utf8).withUnsafeBufferPointer { parse(bytes: $0) }
    }

    static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        guard let micros = parseMicros(bytes) else {
            let text = String(decoding: bytes, as: UTF8.self)
            if text == "infinity" { return .distantFuture }
            if text == "-infinity" { return .distantPast }
            return nil
        }
        return date(micros: micros)
    }

    /// Microseconds since 1970-01-01 UTC of the text `parse` reads (not the infinities), or nil.
    private static func parseMicros(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var scan = TimestampScanner(bytes)
        guard let date = scan.date() else { return nil }
        var year = date.year
        var seconds: Int64 = 0, fraction: Int64 = 0, offset: Int64 = 0
        if scan.skip(" ") || scan.skip("T") {
            guard let time = scan.timeOfDay(), let micro = scan.fraction(), let east = scan.offset() else { return nil }
            (seconds, fraction, offset) = (time, micro, east)
        }
        if !scan.atEnd {
            // " BC": year 1 BC is astronomical year 0.
            guard scan.rest(is: " BC") else { return nil }
            year = 1 - year
        }
        return micros(year: year, month: date.month, day: date.day, seconds: seconds - offset, fraction: fraction)
    }

    /// Microseconds since 1970-01-01 UTC of a date, `seconds` into it (UTC) and `fraction` microseconds.
    /// Years of up to nine digits parse, but microseconds since 1970 fit an Int64 only within about
    /// ±292,000 years (PostgreSQL's own timestamps end at 294276): anything beyond is refused, not
    /// left to overflow.
    private static func micros(year: Int64, month: Int64, day: Int64, seconds: Int64, fraction: Int64) -> Int64? {
        guard abs(year) <= 1_000_000 else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let (micros, overflow) = (days * 86_400 + seconds).multipliedReportingOverflow(by: 1_000_000)
        guard !overflow else { return nil }
        let (total, overflow2) = micros.addingReportingOverflow(fraction)
        return overflow2 ? nil : total
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (month <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, month, day)
    }
}

/// Reads PostgreSQL's timestamp text from left to right: each read moves past what it read, or
/// returns nil (or false) when the text does not go on as expected.
///
///     var scan = TimestampScanner(bytes)   // "2026-01-25 03:00:00.5+01"
///     scan.date()                          // (2026, 1, 25)
///     scan.skip(" ")                       // true
///     scan.timeOfDay()                     // 10800
private struct TimestampScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    var atEnd: Bool { i >= bytes.count }

    /// `YYYY-MM-DD`, the year of four to nine digits.
    mutating func date() -> (year: Int64, month: Int64, day: Int64)? {
        var year: Int64 = 0
        let yearStart = i
        while let d = digit() {
            year = year * 10 + d
            i += 1
            if i - yearStart > 9 { return nil }
        }
        guard i - yearStart >= 4, skip("-"),
              let month = fixed(2), (1...12).contains(month), skip("-"),
              let day = fixed(2), (1...31).contains(day)
        else { return nil }
        return (year, month, day)
    }

    /// `HH:MM:SS` (hour ≤ 24, minute ≤ 59, second ≤ 60), as seconds into the day.
    mutating func timeOfDay() -> Int64? {
        guard let hour = fixed(2), hour <= 24, skip(":"),
              let minute = fixed(2), minute <= 59, skip(":"),
              let second = fixed(2), second <= 60
        else { return nil }
        return hour * 3600 + minute * 60 + second
    }

    /// `.ffffff` as microseconds (digits past the sixth count for nothing); 0 when there is no `.`,
    /// nil for a `.` without digits.
    mutating func fraction() -> Int64? {
        guard skip(".") else { return 0 }
        var fraction: Int64 = 0
        var scale: Int64 = 100_000
        let start = i
        while let d = digit() {
            fraction += d * scale
            scale /= 10
            i += 1
        }
        return i > start ? fraction : nil
    }

    /// `Z` or `±HH[:MM[:SS]]` as seconds east of UTC; 0 when the text goes on with neither.
    mutating func offset() -> Int64? {
        if skip("Z") { return 0 }
        let east = skip("+")
        guard east || skip("-") else { return 0 }
        guard let hours = fixed(2) else { return nil }
        var total = hours * 3600
        if skip(":") {
            guard let minutes = fixed(2) else { return nil }
            total += minutes * 60
            if skip(":") {
                guard let seconds = fixed(2) else { return nil }
                total += seconds
            }
        }
        return east ? total : -total
    }

    /// Moves past `char` if it comes next.
    @inline(__always) mutating func skip(_ char: Unicode.Scalar) -> Bool {
        guard i < bytes.count, bytes[i] == UInt8(ascii: char) else { return false }
        i += 1
        return true
    }

    /// Whether what is left is exactly `text` (ASCII).
    func rest(is text: StaticString) -> Bool {
        bytes.count - i == text.utf8CodeUnitCount
            && (0..<text.utf8CodeUnitCount).allSatisfy { bytes[i + $0] == text.utf8Start[$0] }
    }

    /// The digit at the current position, without moving.
    @inline(__always) private func digit() -> Int64? {
        guard i < bytes.count else { return nil }
        let value = Int64(bytes[i]) - 48
        return (0...9).contains(value) ? value : nil
    }

    /// Exactly `count` digits.
    @inline(__always) private mutating func fixed(_ count: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<count {
            guard let d = digit() else { return nil }
            value = value * 10 + d
            i += 1
        }
        return value
    }
}
