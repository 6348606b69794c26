import Foundation
import Testing
@testable import HeraldCore

/// Builds a decision for one row with sensible defaults; each test changes what it is about.
struct Scenario {
    var now = utc(2026, 1, 25, 3)                          // seed 000's instant
    var prefs = Preferences(userId: alice, timezone: "Europe/London", notifyPush: true,
                            quietHoursStart: t("22:00"), quietHoursEnd: t("07:00"))
    var alert: AlertState? = AlertState(id: episodeId)
    var destinations = aPhone
    var history: [SentRecord] = []
    var channel = "push"
    var kind = "pattern_alert"
    var severity: Severity? = nil
    var payload = "{}"
    var member: UUID? = nil
    var scheduledAt: Date? = nil
    var linksAlert = true

    func decide() -> DecisionResult {
        var decider = Decider(options: DecisionOptions(now: now), history: history)
        return decider.decide(row, DecisionContext(preferences: prefs, alert: alert, destinations: destinations))
    }

    var row: QueueItem {
        item(channel, kind: kind, about: member, alert: linksAlert ? episodeId : nil, severity: severity,
             payload: payload, scheduledAt: scheduledAt ?? now.addingTimeInterval(-60))
    }
}


@Suite struct DecisionRuleTests {
    // MARK: 0. Validation

    @Test func unknownChannelFails() {
        var s = Scenario(); s.channel = "fax"
        #expect(s.decide().decision == .fail("unknown channel 'fax'"))
        #expect(s.decide().rule == "unknown_channel")
    }
    /// A row whose type is not in `notification_types` (written before the check existed) fails
    /// readably; the database refuses new ones at insert.
    @Test func unknownKindFails() {
        var s = Scenario(); s.kind = "horoscope"
        #expect(s.decide().decision == .fail("unknown notification type 'horoscope'"))
        #expect(s.decide().rule == "unknown_kind")
    }
    @Test(arguments: ["[1,2]", "not json", "\"text\"", ""])
    func payloadNotAnObjectFails(_ payload: String) {
        var s = Scenario(); s.payload = payload
        guard case .fail(let message) = s.decide().decision else { Issue.record("expected fail"); return }
        #expect(message.hasPrefix("malformed payload: "))
        #expect(s.decide().rule == "malformed_payload")
    }
    @Test func missingProfileFails() {
        var decider = Decider(options: DecisionOptions(now: utc(2026, 1, 25)), history: [])
        let r = decider.decide(item(scheduledAt: utc(2026, 1, 25)), DecisionContext(preferences: nil))
        #expect(r.decision == .fail("recipient 00000000-0000-0000-0000-00000000000a has no user_profiles row"))
    }
    @Test func unknownTimezoneFails() {
        var s = Scenario(); s.prefs.timezone = "Mars/Olympus"
        #expect(s.decide().decision == .fail("unknown timezone 'Mars/Olympus' for recipient 00000000-0000-0000-0000-00000000000a"))
        #expect(s.decide().rule == "unknown_timezone")
    }
    @Test func missingEpisodeFails() {
        var s = Scenario(); s.alert = nil
        #expect(s.decide().decision == .fail("alert episode 00000000-0000-0000-0000-0000000000e1 not found"))
    }
    @Test func validationComesBeforeEverything() {
        var s = Scenario(); s.channel = "fax"; s.prefs.notifyPush = false; s.scheduledAt = utc(2020, 1, 1)
        #expect(s.decide().decision == .fail("unknown channel 'fax'"))
    }

    // MARK: 1. Expired

    @Test func olderThanMaxAgeExpires() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12)
        s.scheduledAt = s.now.addingTimeInterval(-24 * 3600 - 1)
        #expect(s.decide().decision == .skip(.expired))
        s.scheduledAt = s.now.addingTimeInterval(-24 * 3600)
        #expect(s.decide().decision == .send)
    }
    @Test func expiryComesBeforeDismissal() {
        var s = Scenario(); s.scheduledAt = utc(2026, 1, 20); s.alert?.dismissedAt = utc(2026, 1, 21)
        #expect(s.decide().decision == .skip(.expired))
    }
    @Test func forecastOnlyOnItsOwnLocalDate() {
        var s = Scenario(); s.kind = "daily_forecast"; s.linksAlert = false; s.alert = nil
        s.prefs.timezone = "America/New_York"; s.prefs.quietHoursStart = nil
        s.now = utc(2026, 1, 25, 3)                            // 22:00 on the 24th in New York
        s.payload = #"{"date":"2026-01-24","risk_level":"LOW"}"#
        #expect(s.decide().decision == .send)
        s.payload = #"{"date":"2026-01-25","risk_level":"LOW"}"#   // the UTC date, not the recipient's
        #expect(s.decide().decision == .skip(.expired))
        s.payload = #"{"date":"25/01/2026"}"#
        guard case .fail(let m) = s.decide().decision else { Issue.record("expected fail"); return }
        #expect(m.hasPrefix("malformed payload: "))
    }

    // MARK: 2. The alert episode

    @Test func snoozeIsJudgedOnTheRecipientsLocalDate() {
        var s = Scenario(); s.prefs.timezone = "America/New_York"; s.prefs.quietHoursStart = nil
        s.alert?.snoozeUntil = day("2026-01-25")
        s.now = utc(2026, 1, 26, 4, 59, 59)                   // 23:59:59 on the 25th in New York
        #expect(s.decide().decision == .skip(.alertSnoozed))
        s.now = utc(2026, 1, 26, 5)                            // midnight: the 26th
        #expect(s.decide().decision == .send)
        s.prefs.timezone = "Asia/Tokyo"; s.now = utc(2026, 1, 25, 14, 59)   // 23:59 on the 25th in Tokyo
        #expect(s.decide().decision == .skip(.alertSnoozed))
        s.now = utc(2026, 1, 25, 15)                           // 00:00 on the 26th in Tokyo
        #expect(s.decide().decision == .send)
    }
    @Test func dismissedBeforeSnoozed() {
        var s = Scenario(); s.alert?.dismissedAt = utc(2026, 1, 24); s.alert?.snoozeUntil = day("2026-02-01")
        #expect(s.decide().decision == .skip(.alertDismissed))
    }
    @Test func resolvedEpisodeSkips() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.alert?.episodeStatus = .resolved
        #expect(s.decide().decision == .skip(.alertResolved))
        s.alert?.episodeStatus = .active; s.alert?.resolvedAt = utc(2026, 1, 25, 11)
        #expect(s.decide().decision == .skip(.alertResolved))
    }
    @Test func lowerLevelThanTheEpisodeIsSuperseded() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.alert?.currentLevel = 7
        s.payload = #"{"level":3}"#
        #expect(s.decide().decision == .skip(.superseded))
        s.payload = #"{"level":7}"#
        #expect(s.decide().decision == .send)
    }

    // MARK: 3. Channel toggles

    @Test func eachChannelHasItsToggle() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12)
        s.prefs = Preferences(userId: alice, timezone: "UTC", notifyInApp: false, notifyPush: false, notifyEmail: false,
                              notifySMS: false, notifyWhatsApp: false, championNotifyEmail: false, championNotifySMS: false)
        for channel in ["push", "email", "sms", "whatsapp", "in_app"] {
            s.channel = channel
            #expect(s.decide().decision == .skip(.channelDisabled), "\(channel)")
        }
        s.channel = "webhook"
        #expect(s.decide().decision == .send)
        s.prefs.notifyPush = true; s.prefs.notifyEmail = true; s.prefs.notifySMS = true
        s.prefs.notifyWhatsApp = true; s.prefs.notifyInApp = true
        for channel in ["push", "email", "sms", "whatsapp", "in_app"] {
            s.channel = channel
            #expect(s.decide().decision == .send, "\(channel)")
        }
    }
    @Test func aboutAnotherMemberUsesChampionToggles() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.member = bob
        s.prefs.notifyEmail = true; s.prefs.championNotifyEmail = false
        s.prefs.notifySMS = false; s.prefs.championNotifySMS = true
        s.channel = "email"
        #expect(s.decide().decision == .skip(.channelDisabled))
        s.channel = "sms"
        #expect(s.decide().decision == .send)
        s.member = alice                                        // about herself: her own toggles
        #expect(s.decide().decision == .skip(.channelDisabled))
        s.channel = "email"
        #expect(s.decide().decision == .send)
    }

    // MARK: 3. The type's toggle (seed 001's NotificationPreferencesState)

    @Test(arguments: [
        ("reminder", #"{"reminder_type":"daily"}"#, "daily_reminder_enabled"),
        ("reminder", #"{"reminder_type":"dose"}"#, "dose_reminder_enabled"),
        ("reminder", #"{"reminder_type":"washout"}"#, "washout_notifications_enabled"),
        ("reminder", #"{"reminder_type":"test_start"}"#, "test_start_reminder_enabled"),
        ("reminder", "{}", "daily_reminder_enabled"),            // a reminder without a type: daily
        ("daily_forecast", "{}", "forecast_notifications_enabled"),
        ("prompt", "{}", "prompt_notifications_enabled"),
    ])
    func typeToggleSkipsTypeDisabled(_ kind: String, _ payload: String, _ toggle: String) {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.linksAlert = false; s.alert = nil
        s.kind = kind; s.payload = payload
        #expect(s.decide().decision == .send)
        switch toggle {
        case "daily_reminder_enabled": s.prefs.dailyReminderEnabled = false
        case "dose_reminder_enabled": s.prefs.doseReminderEnabled = false
        case "washout_notifications_enabled": s.prefs.washoutNotificationsEnabled = false
        case "test_start_reminder_enabled": s.prefs.testStartReminderEnabled = false
        case "forecast_notifications_enabled": s.prefs.forecastNotificationsEnabled = false
        default: s.prefs.promptNotificationsEnabled = false
        }
        let r = s.decide()
        #expect(r.decision == .skip(.typeDisabled))
        #expect(r.rule == "type_disabled")
        // Before the channel's toggle: the person turned the type off, whatever the channel.
        s.prefs.notifyPush = false
        #expect(s.decide().decision == .skip(.typeDisabled))
    }

    @Test func otherTogglesDoNotTouchOtherTypes() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.linksAlert = false; s.alert = nil
        s.kind = "reminder"; s.payload = #"{"reminder_type":"dose"}"#
        s.prefs.dailyReminderEnabled = false; s.prefs.washoutNotificationsEnabled = false
        s.prefs.testStartReminderEnabled = false; s.prefs.forecastNotificationsEnabled = false
        s.prefs.promptNotificationsEnabled = false
        #expect(s.decide().decision == .send)
        // Pattern alerts have no type toggle.
        var a = Scenario(); a.now = utc(2026, 1, 25, 12)
        a.prefs.dailyReminderEnabled = false; a.prefs.doseReminderEnabled = false
        a.prefs.forecastNotificationsEnabled = false; a.prefs.promptNotificationsEnabled = false
        #expect(a.decide().decision == .send)
    }

    // MARK: 4. No destination

    @Test func noDestinationSkips() {
        var s = Scenario(); s.now = utc(2026, 1, 25, 12); s.destinations = []
        #expect(s.decide().decision == .skip(.noDestination))
        s.prefs.notifyPush = false                                  // the toggle is judged first
        #expect(s.decide().decision == .skip(.channelDisabled))
    }

    // MARK: 5. Quiet hours

    @Test func deferToTheEndOfTheWindow() {
        var s = Scenario(); s.prefs.quietAction = .defer
        let r = s.decide()
        #expect(r.decision == .deferUntil(utc(2026, 1, 25, 7), .quietHours))   // 07:00 in London
        #expect(r.trail["until"] == "2026-01-25T07:00:00Z")
    }
    /// Seed 001's allowCritical: a dose reminder whose dose is within the hour goes through quiet hours,
    /// even at level `none` (the default), when `quiet_hours_allow_critical` (default true).
    @Test func doseWithinTheHourGoesThroughQuietHours() {
        var s = Scenario(); s.linksAlert = false; s.alert = nil; s.kind = "reminder"
        s.prefs.quietLevel = .none; s.prefs.quietAction = .skip            // the defaults
        s.payload = #"{"reminder_type":"dose","dose_at":"2026-01-25T03:30:00Z"}"#   // 03:00 London, dose at 03:30
        let r = s.decide()
        #expect(r.decision == .send)
        #expect(r.trail["quiet_override"] == "dose_within_hour")
        // Exactly an hour away: still within the hour; a minute more: not.
        s.payload = #"{"reminder_type":"dose","dose_at":"2026-01-25T04:00:00Z"}"#
        #expect(s.decide().decision == .send)
        s.payload = #"{"reminder_type":"dose","dose_at":"2026-01-25T04:01:00Z"}"#
        #expect(s.decide().decision == .skip(.quietHours))
        // A dose just past (up to 15 minutes) still goes through; one long past does not.
        s.payload = #"{"reminder_type":"dose","dose_at":"2026-01-25T02:45:00Z"}"#
        #expect(s.decide().decision == .send)
        s.payload = #"{"reminder_type":"dose","dose_at":"2026-01-25T02:44:00Z"}"#
        #expect(s.decide().decision == .skip(.quietHours))
        s.payload = #"{"reminder_type":"dose","dose_at":"2026-01-24T23:00:00Z"}"#
        #expect(s.decide().decision == .skip(.quietHours))
        #expect(s.decide().trail["quiet_override"] == nil)
        // Turned off: the level decides.
        s.payload = #"{"reminder_type":"dose","dose_at":"2026-01-25T03:30:00Z"}"#
        s.prefs.quietAllowCritical = false
        #expect(s.decide().decision == .skip(.quietHours))
        // Only dose reminders: a daily reminder with a dose_at is not one.
        s.prefs.quietAllowCritical = true
        s.payload = #"{"reminder_type":"daily","dose_at":"2026-01-25T03:30:00Z"}"#
        #expect(s.decide().decision == .skip(.quietHours))
    }

    /// At the defaults (`none` + `skip`) a critical reminder is never dropped: it is deferred to the
    /// window's end. A critical pattern alert keeps seed 000's matrix (row 3: skipped).
    @Test func criticalReminderAtNoneAndSkipIsDeferredNotDropped() {
        var s = Scenario(); s.linksAlert = false; s.alert = nil; s.kind = "reminder"
        s.prefs.quietLevel = .none; s.prefs.quietAction = .skip
        s.severity = .critical; s.payload = #"{"reminder_type":"daily"}"#
        let r = s.decide()
        #expect(r.decision == .deferUntil(utc(2026, 1, 25, 7), .quietHours))
        #expect(r.trail["critical_deferred"] == true)
        s.severity = nil
        #expect(s.decide().decision == .skip(.quietHours))                   // not critical: the user's skip
        s.severity = .critical; s.prefs.quietLevel = .criticalOnly
        #expect(s.decide().decision == .send)                                // critical_only lets it through
        var alert = Scenario(); alert.prefs.quietLevel = .none; alert.alert?.severity = .critical
        #expect(alert.decide().decision == .skip(.quietHours))
    }

    @Test func severityComesFromTheAlertThenTheRowThenWatch() {
        var s = Scenario(); s.prefs.quietLevel = .criticalOnly
        s.alert?.severity = .watch; s.severity = .critical           // the episode's severity wins
        #expect(s.decide().decision == .skip(.quietHours))
        s.linksAlert = false; s.alert = nil; s.kind = "reminder"
        #expect(s.decide().decision == .send)                        // the row's own severity
        s.severity = nil
        #expect(s.decide().decision == .skip(.quietHours))           // default: watch
        #expect(s.decide().trail["severity"] == "watch")
    }
    @Test func noWindowMeansNeverQuiet() {
        var s = Scenario(); s.prefs.quietHoursEnd = t("22:00")
        #expect(s.decide().decision == .send)
        s.prefs.quietHoursEnd = nil
        #expect(s.decide().decision == .send)
        #expect(s.decide().trail["quiet_window"] == .null)
    }
    @Test func newYorkSpringForwardBothSides() {
        // 22:00–07:00; on 2026-03-08 07:00 EDT is 11:00Z, the day before 07:00 EST was 12:00Z.
        var s = Scenario(); s.prefs.timezone = "America/New_York"; s.prefs.quietAction = .defer
        s.now = utc(2026, 3, 8, 10, 59)                               // 06:59 EDT
        #expect(s.decide().decision == .deferUntil(utc(2026, 3, 8, 11), .quietHours))
        s.now = utc(2026, 3, 8, 11)                                   // 07:00 EDT
        #expect(s.decide().decision == .send)
        s.now = utc(2026, 3, 7, 11, 30)                               // 06:30 EST, the day before
        #expect(s.decide().decision == .deferUntil(utc(2026, 3, 7, 12), .quietHours))
        s.now = utc(2026, 3, 8, 6, 59)                                // 01:59 EST, just before the jump
        #expect(s.decide().trail["recipient_local_time"] == "2026-03-08T01:59:00")
        #expect(s.decide().decision == .deferUntil(utc(2026, 3, 8, 11), .quietHours))
    }
    @Test func newYorkFallBackBothSides() {
        // 22:00–07:00; on 2026-11-01 07:00 EST is 12:00Z; the day before 07:00 EDT was 11:00Z.
        var s = Scenario(); s.prefs.timezone = "America/New_York"; s.prefs.quietAction = .defer
        s.now = utc(2026, 11, 1, 5, 30)                               // 01:30 EDT
        #expect(s.decide().decision == .deferUntil(utc(2026, 11, 1, 12), .quietHours))
        s.now = utc(2026, 11, 1, 11, 30)                              // 06:30 EST
        #expect(s.decide().decision == .deferUntil(utc(2026, 11, 1, 12), .quietHours))
        s.now = utc(2026, 11, 1, 12)                                  // 07:00 EST
        #expect(s.decide().decision == .send)
        s.now = utc(2026, 10, 31, 10, 59)                             // 06:59 EDT the day before
        #expect(s.decide().decision == .deferUntil(utc(2026, 10, 31, 11), .quietHours))
        s.prefs.quietAction = .skip
        s.now = utc(2026, 11, 2, 2, 30)                               // 21:30 EST on the 1st: not quiet
        #expect(s.decide().decision == .send)
        s.now = utc(2026, 11, 2, 3)                                   // 22:00 EST: quiet
        #expect(s.decide().decision == .skip(.quietHours))
    }

    @Test func chicagoWindowEnteredInTheRepeatedHourIsLeftAtTheSecondOneOClock() {
        // A window of 01:30–01:00 in Chicago on 2026-11-01 (02:00 CDT → 01:00 CST at 07:00Z). A row held at
        // 01:45 CDT waits until 01:00 CST, the first instant the wall clock is outside, not a day longer.
        var s = Scenario(); s.prefs.timezone = "America/Chicago"; s.prefs.quietAction = .defer
        s.prefs.quietHoursStart = t("01:30"); s.prefs.quietHoursEnd = t("01:00")
        s.now = utc(2026, 11, 1, 6, 45)                               // 01:45 CDT
        #expect(s.decide().decision == .deferUntil(utc(2026, 11, 1, 7), .quietHours))
        #expect(s.decide().trail["until"] == "2026-11-01T07:00:00Z")
        s.prefs.quietAction = .skip
        #expect(s.decide().decision == .skip(.quietHours))
        s.now = utc(2026, 11, 1, 7)                                   // 01:00 CST: outside, both actions send
        #expect(s.decide().decision == .send)
        s.prefs.quietAction = .defer
        #expect(s.decide().decision == .send)
        s.now = utc(2026, 11, 1, 7, 30)                               // 01:30 CST: inside again
        #expect(s.decide().decision == .deferUntil(utc(2026, 11, 2, 7), .quietHours))
    }
}
