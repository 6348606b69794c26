import Foundation

/// A day's flare risk, as `daily_forecasts.risk_level` stores it.
public enum RiskLevel: String, Sendable, CaseIterable {
    case low = "LOW", moderate = "MODERATE", high = "HIGH"
}

/// The pressure drops, in hPa over 24 hours, at which the risk rises (10 and 5 unless configured).
public struct RiskThresholds: Sendable, Equatable {
    public var highDropHPa = 10.0
    public var moderateDropHPa = 5.0

    public init(highDropHPa: Double = 10, moderateDropHPa: Double = 5) {
        self.highDropHPa = highDropHPa
        self.moderateDropHPa = moderateDropHPa
    }
}

/// The daily flare forecast, one per user per local day: when it is due, and the risk from the pressure
/// change.
///
///     FlareForecast.dueDate(now: now, zone: zone("Asia/Tokyo"), notificationTime: LocalTime("08:00")!)
///     // the Tokyo date once Tokyo's clock reached 08:00 on it, else nil
///     FlareForecast.risk(pressureChangeHPa: -7.5)    // .moderate
public enum FlareForecast {
    /// The local date whose forecast is due at `now`: the recipient's local date once their local clock has
    /// reached `notificationTime` on it; nil before. (See `DailyTime` for DST gaps and overlaps.)
    public static func dueDate(now: Date, zone: TimeZone, notificationTime: LocalTime) -> LocalDate? {
        DailyTime.dateReached(notificationTime, at: now, in: zone)
    }

    /// The local dates whose forecast is to be made at `now`: each date (today or tomorrow, in `zone`)
    /// whose notification instant is at most `lead` seconds away or has passed, with that instant. The
    /// weather is fetched within the lead so that the push goes out at its time; a date whose
    /// notification has passed stays until the date is over, and a past date never comes back.
    ///
    ///     FlareForecast.datesToPrepare(now: 07:10 London, zone: london, notificationTime: 08:00, lead: 3600)
    ///     // [(today, 08:00 London)]: the weather is fetched 50 minutes ahead
    ///     FlareForecast.datesToPrepare(now: 23:30 London, zone: london, notificationTime: 00:15, lead: 3600)
    ///     // [(today, 00:15 today), (tomorrow, 00:15 tomorrow)]
    public static func datesToPrepare(now: Date, zone: TimeZone, notificationTime: LocalTime,
                                      lead: TimeInterval) -> [(date: LocalDate, at: Date)] {
        let time = DailyTime.timeOfDay(notificationTime)
        let today = Zone.localDate(now, in: zone)
        return [today, today.adding(days: 1)].compactMap { date in
            let at = Zone.instant(of: date, time, in: zone)
            return at.addingTimeInterval(-lead) <= now ? (date, at) : nil
        }
    }

    /// Risk from the 24-hour pressure change (pressure 24 h after the notification time minus at it):
    /// a drop ≥ 10 hPa → HIGH, ≥ 5 → MODERATE, else LOW. A rise is LOW.
    ///
    ///     FlareForecast.risk(pressureChangeHPa: -10)    // .high
    ///     FlareForecast.risk(pressureChangeHPa: -4.9)   // .low
    public static func risk(pressureChangeHPa change: Double, thresholds: RiskThresholds = .init()) -> RiskLevel {
        let drop = -change
        if drop >= thresholds.highDropHPa { return .high }
        if drop >= thresholds.moderateDropHPa { return .moderate }
        return .low
    }

    /// Four decimals (about 11 m), never exponent notation.
    static func coordinate(_ x: Double) -> String {
        String(format: "%.4f", x)
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters ("/" too: it is a query value).
    static func percentEncoded(_ s: String) -> String { PercentEncoding.encode(s) }
}
