import Foundation
import Testing
@testable import HeraldCore

/// The decision's last rules, continued from DecisionTests.swift: the rate limits, and the trail each
/// decision leaves.
extension DecisionRuleTests {
    // MARK: 6. Rate limits

    @Test func repeatedKindsInOneBatchAreSpaced() {
        let now = utc(2026, 1, 25, 12)                                // noon in London
        var decider = Decider(options: DecisionOptions(now: now), history: [])
        let prefs = Preferences(userId: alice, timezone: "Europe/London", notifyPush: true)
        let kinds = ["pattern_alert", "daily_forecast", "prompt", "reminder", "system"]
        var decisions: [Decision] = []
        for i in 0..<11 {
            let row = item(kind: kinds[i % 5], payload: "{}", scheduledAt: now)
            decisions.append(decider.decide(row, DecisionContext(preferences: prefs, destinations: aPhone)).decision)
        }
        // Rows 0–4 send; rows 5–10 repeat a kind within the hour and are spaced, except prompts
        // (rows 7: seed 002's prompts are outside the spacing).
        #expect(decisions.prefix(5).allSatisfy { $0 == .send })
        #expect(decisions[5] == .deferUntil(now.addingTimeInterval(3600), .kindSpacing))
        #expect(decisions[7] == .send)
        #expect(decisions[8] == .deferUntil(now.addingTimeInterval(3600), .kindSpacing))
    }

    @Test func eleventhOfADayInOneBatchIsDeferredToLocalMidnight() {
        let now = utc(2026, 1, 25, 12)
        let options = DecisionOptions(types: NotificationTypes.builtIn.withLimits(RateLimits(sameTypeSpacing: 0)), now: now)
        var decider = Decider(options: options, history: [])
        let prefs = Preferences(userId: alice, timezone: "Europe/London", notifyPush: true)
        var results: [DecisionResult] = []
        for _ in 0..<11 {
            results.append(decider.decide(item(kind: "reminder", scheduledAt: now),
                                          DecisionContext(preferences: prefs, destinations: aPhone)))
        }
        #expect(results.prefix(10).allSatisfy { $0.decision == .send })
        #expect(results[10].decision == .deferUntil(utc(2026, 1, 26), .dailyLimit))
        #expect(results[10].rule == "rate_limit_daily")
        #expect(results[10].trail["counters"]?["sent_today"] == 10)
    }

    @Test func criticalIsExemptButCounts() {
        let now = utc(2026, 1, 25, 12)
        var decider = Decider(options: DecisionOptions(now: now), history: [])
        let prefs = Preferences(userId: alice, timezone: "Europe/London", notifyPush: true)
        let ctx = DecisionContext(preferences: prefs, destinations: aPhone)
        #expect(decider.decide(item(kind: "reminder", severity: .critical, scheduledAt: now), ctx).decision == .send)
        #expect(decider.decide(item(kind: "reminder", severity: .critical, scheduledAt: now), ctx).decision == .send)
        // The two critical sends count: a non-critical one of the same kind is spaced.
        #expect(decider.decide(item(kind: "reminder", severity: .watch, scheduledAt: now), ctx).decision
                == .deferUntil(now.addingTimeInterval(3600), .kindSpacing))
    }

    @Test func historyCountsAndSkipsDoNot() {
        let now = utc(2026, 1, 25, 12)
        let prefs = Preferences(userId: alice, timezone: "Europe/London", notifyPush: true)
        var decider = Decider(options: DecisionOptions(now: now),
                              history: [SentRecord(recipient: alice, channel: .push, kind: "daily_forecast", at: now.addingTimeInterval(-900))])
        #expect(decider.decide(item(kind: "daily_forecast", scheduledAt: now), DecisionContext(preferences: prefs, destinations: aPhone)).decision
                == .deferUntil(now.addingTimeInterval(2700), .kindSpacing))
        // A skipped row is not counted.
        #expect(decider.decide(item(kind: "reminder", scheduledAt: now), DecisionContext(preferences: prefs)).decision
                == .skip(.noDestination))
        #expect(decider.decide(item(kind: "reminder", scheduledAt: now), DecisionContext(preferences: prefs, destinations: aPhone)).decision
                == .send)
    }

    // MARK: The trail

    @Test func trailRecordsTheInputs() {
        var s = Scenario(); s.prefs.quietLevel = .criticalOnly; s.alert?.severity = .attention
        let trail = s.decide().trail
        #expect(trail["rule"] == "quiet_hours")
        #expect(trail["recipient_local_time"] == "2026-01-25T03:00:00")
        #expect(trail["timezone"] == "Europe/London")
        #expect(trail["quiet_window"] == "22:00:00-07:00:00")
        #expect(trail["quiet_level"] == "critical_only")
        #expect(trail["quiet_action"] == "skip")
        #expect(trail["in_quiet_hours"] == true)
        #expect(trail["severity"] == "attention")

        s.now = utc(2026, 1, 25, 12)
        let sent = s.decide().trail
        #expect(sent["rule"] == "send")
        #expect(sent["counters"] == ["sent_today": 0, "minutes_since_last_same_type": nil, "sent_last_minute": 0])
    }
}
