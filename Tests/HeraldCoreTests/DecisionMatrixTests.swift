import Foundation
import Testing
@testable import HeraldCore

/// The decision matrix of push, quiet hours and severity, one test per row.
@Suite struct DecisionMatrixTests {
    /// One row per case. London at 03:00 is inside 22:00–07:00; at 12:00 it is not.
    @Test func row1PushDisabledSkips() {
        var s = Scenario(); s.prefs.notifyPush = false
        #expect(s.decide().decision == .skip(.channelDisabled))
    }
    @Test func row2NotInQuietHoursSends() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12)
        #expect(s.decide().decision == .send)
    }
    @Test func row3QuietLevelNoneSkips() {
        var s = Scenario(); s.prefs.quietLevel = .none; s.alert?.severity = .critical
        #expect(s.decide().decision == .skip(.quietHours))
    }
    @Test func row4CriticalOnlyWatchSkips() {
        var s = Scenario(); s.prefs.quietLevel = .criticalOnly; s.alert?.severity = .watch
        #expect(s.decide().decision == .skip(.quietHours))
    }
    @Test func row5CriticalOnlyAttentionSkips() {
        var s = Scenario(); s.prefs.quietLevel = .criticalOnly; s.alert?.severity = .attention
        #expect(s.decide().decision == .skip(.quietHours))
    }
    @Test func row6CriticalOnlyCriticalSends() {
        var s = Scenario(); s.prefs.quietLevel = .criticalOnly; s.alert?.severity = .critical
        #expect(s.decide().decision == .send)
    }
    @Test func row7QuietLevelAllSends() {
        var s = Scenario(); s.prefs.quietLevel = .all
        #expect(s.decide().decision == .send)
    }
    @Test func row8SnoozedSkips() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.alert?.snoozeUntil = day("2026-01-27")
        #expect(s.decide().decision == .skip(.alertSnoozed))
    }
    @Test func row9DismissedSkips() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.alert?.dismissedAt = utc(2026, 1, 24)
        #expect(s.decide().decision == .skip(.alertDismissed))
    }

    @Test(arguments: [("America/Los_Angeles", true), ("Europe/London", false), ("Asia/Tokyo", true)])
    func seed000ThreeTimezones(_ tz: String, _ sends: Bool) {
        var s = Scenario(); s.prefs.timezone = tz
        let r = s.decide()
        #expect(r.decision == (sends ? .send : .skip(.quietHours)))
        #expect(r.trail["in_quiet_hours"] == .bool(!sends))
    }
}
