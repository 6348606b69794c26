import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// Quiet hours and follow-ups, at `--now` instants against the fakes: a non-critical step waits for
/// the window's end, a critical one goes on as critical alerts do.
@Suite struct FollowUpQuietHoursTests {
    static let policy = """
        {"steps": [{"after_seconds": 900, "channels": ["sms"], "to": "same", "until": "read"}]}
        """

    /// A non-critical step due inside the admin's quiet hours (22:00–07:00, level none, action skip) is
    /// held until the window ends — deferred, not dropped — and goes out then, once.
    @Test func aNonCriticalStepWaitsForTheEndOfQuietHours() throws {
        let family = try FollowUpFamily(policy: Self.policy, quiet: ("22:00", "07:00"), level: "none")
        defer { family.cleanup() }
        let t = instant("2026-03-02T21:50:00Z")
        _ = try family.alert(at: t, severity: "attention")
        family.pass(t)
        #expect(family.pushCount(to: family.firstToken) == 1)

        let held = family.pass(instant("2026-03-02T22:10:00Z"))
        #expect(held.deferred == 1)
        #expect(family.twilio.accepted.isEmpty)
        let step = try #require(try family.chain().first)
        #expect(step["status"].string == "pending", "held, not skipped")
        #expect(step["run_after"].date == instant("2026-03-03T07:00:00Z"))

        family.pass(instant("2026-03-03T07:01:00Z"))
        #expect(family.smsCount(to: family.firstPhone) == 1)
    }

    /// A critical step inside quiet hours whose level lets critical alerts through goes at its time.
    @Test func aCriticalStepGoesOnThroughQuietHours() throws {
        let family = try FollowUpFamily(policy: Self.policy, quiet: ("22:00", "07:00"), level: "critical_only")
        defer { family.cleanup() }
        let t = instant("2026-03-02T21:50:00Z")
        _ = try family.alert(at: t, severity: "critical")
        family.pass(t)
        family.pass(instant("2026-03-02T22:10:00Z"))
        #expect(family.smsCount(to: family.firstPhone) == 1)
        #expect(try family.chain().first?["status"].string == "sent")
    }
}
