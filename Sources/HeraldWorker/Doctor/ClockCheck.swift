import Foundation
import HeraldPostgres

/// `clock.skew`: this host's clock against the database's (`now()`). A pass reads both: the database
/// says which rows are due and holds the leases, this host decides quiet hours and schedules and signs
/// the providers' tokens. Skew above `warnAbove` is a warning; above `failAbove` it fails, since a
/// shared APNs token minted by a host that far ahead reads as from the future to the others
/// (`APNsTokenCache.isUsable`) and providers refuse tokens whose issue time is off by minutes.
///
///     ClockCheck.check(databaseNow: db, sentAt: t0, receivedAt: t1)   // ok   clock.skew  0.002 s …
enum ClockCheck {
    /// Seconds of skew above which the doctor warns.
    static let warnAbove: TimeInterval = 5
    /// Seconds of skew above which the doctor fails.
    static let failAbove: TimeInterval = 60

    /// Reads the database's `now()` and judges it against the local clock around the round trip.
    static func measure(_ db: PGConnection) -> DoctorCheck {
        let sentAt = Date()
        do {
            guard let databaseNow = try db.query("select now() as now").first?["now"].date else {
                return DoctorCheck("clock.skew", .fail, "the database's now() could not be read")
            }
            return check(databaseNow: databaseNow, sentAt: sentAt, receivedAt: Date())
        } catch {
            return DoctorCheck("clock.skew", .fail, "cannot read the database's now(): \(error)")
        }
    }

    /// The verdict on `databaseNow`, read between `sentAt` and `receivedAt` by the local clock: the skew
    /// is taken against the middle of the round trip, less half of it (what the measure cannot tell).
    static func check(databaseNow: Date, sentAt: Date, receivedAt: Date) -> DoctorCheck {
        let halfTrip = max(0, receivedAt.timeIntervalSince(sentAt)) / 2
        let skew = databaseNow.timeIntervalSince(sentAt.addingTimeInterval(halfTrip))
        let certain = max(0, abs(skew) - halfTrip)
        let side = skew >= 0 ? "ahead of" : "behind"
        let detail = "the database's clock is \(seconds(abs(skew))) s \(side) this host's (±\(seconds(halfTrip)) s)"
        if certain > failAbove {
            return DoctorCheck("clock.skew", .fail, detail + "; more than \(Int(failAbove)) s: fix the time sync (NTP) of the host or the database")
        }
        if certain > warnAbove {
            return DoctorCheck("clock.skew", .warn, detail + "; more than \(Int(warnAbove)) s")
        }
        return DoctorCheck("clock.skew", .ok, detail)
    }

    /// Seconds with three decimals.
    static func seconds(_ value: TimeInterval) -> String {
        String(format: "%.3f", value)
    }
}
