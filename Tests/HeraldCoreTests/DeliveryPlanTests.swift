import Foundation
import Testing
@testable import HeraldCore

/// The plan, table-driven: what each claimed row becomes before any request, its destinations and the
/// provider of each.
@Suite struct DeliveryPlanTests {
    static let noon = utc(2026, 1, 25, 12)
    static let night = utc(2026, 1, 25, 3)  // inside London's 22:00–07:00
    static let apnsToken = Destination(provider: .apns, address: "tok-a", deviceTokenId: UUID())
    static let fcmToken = Destination(provider: .fcm, address: "tok-f", deviceTokenId: UUID())
    static let routes: [Channel: RouteFacts] = [
        .push: RouteFacts(mode: .providers, providers: [.apns]),
        .sms: RouteFacts(mode: .providers, providers: [.twilio]),
        .email: RouteFacts(mode: .providers, providers: [.sendgrid, .smtp]),
        .webhook: RouteFacts(mode: .providers, providers: [.webhook], providerAddress: "https://hooks.example/x"),
        .inApp: RouteFacts(mode: .inbox),
    ]

    struct Case: CustomTestStringConvertible {
        var name: String
        var channel = "push"
        var severity: Severity? = nil
        var tokens: [Destination] = [DeliveryPlanTests.apnsToken, DeliveryPlanTests.fcmToken]
        var profile = true
        var smsOn = true
        var quietDefer = false
        var now = DeliveryPlanTests.noon
        var delivered: Set<String> = []
        /// "send:<providers of the destinations to send>" or "record:<status>/<reason>"
        var expect: String
        var escalatesTo: Channel? = nil

        var testDescription: String { name }
    }

    static let table: [Case] = [
        Case(name: "push sends to the tokens of configured providers only", expect: "send:apns"),
        Case(name: "sms goes to the profile's phone through the first provider", channel: "sms", expect: "send:twilio"),
        Case(name: "email through the first of its providers", channel: "email", expect: "send:sendgrid"),
        Case(name: "webhook goes to the provider's own address", channel: "webhook", expect: "send:webhook"),
        Case(name: "in-app goes to the inbox", channel: "in_app", expect: "send:inbox"),
        Case(name: "no profile fails the row", profile: false, expect: "record:failed/invalid_row"),
        Case(name: "unknown channel fails the row", channel: "pigeon", expect: "record:failed/invalid_row"),
        Case(name: "a channel with no route is not sent", channel: "whatsapp", expect: "record:skipped/channel_disabled"),
        Case(name: "no token, not critical: skipped", tokens: [], expect: "record:skipped/no_destination"),
        Case(name: "no token, critical: skipped and escalated to sms", severity: .critical, tokens: [],
             expect: "record:skipped/no_destination", escalatesTo: .sms),
        Case(name: "no token, critical, sms off: not escalated past email (off too)", severity: .critical, tokens: [],
             smsOn: false, expect: "record:skipped/no_destination"),
        Case(name: "quiet hours defer", quietDefer: true, now: DeliveryPlanTests.night, expect: "record:pending/quiet_hours"),
        Case(name: "a retry leaves out what an earlier attempt delivered", delivered: ["tok-a"], expect: "send:"),
    ]

    @Test(arguments: table)
    func plansEachRow(_ c: Case) throws {
        var ctx = DeliveryContext()
        var prefs = Preferences(userId: alice, timezone: "Europe/London", email: "a@example.com",
                                phoneE164: "+15551234567", notifyPush: true, notifySMS: c.smsOn,
                                quietHoursStart: t("22:00"), quietHoursEnd: t("07:00"),
                                quietLevel: .none, quietAction: c.quietDefer ? .defer : .skip)
        prefs.notifyEmail = true
        if c.channel == "whatsapp" { prefs.notifyWhatsApp = false }
        if c.profile { ctx.profiles[alice] = prefs }
        ctx.deviceTokens[alice] = c.tokens
        var row = item(c.channel, kind: "system", severity: c.severity, scheduledAt: c.now.addingTimeInterval(-60))
        if !c.delivered.isEmpty {
            row.attempts = 2
            ctx.delivered[row.id] = c.delivered
        }
        if c.escalatesTo == nil && c.severity == .critical { prefs.notifyEmail = false; ctx.profiles[alice] = prefs }

        let plan = DeliveryPlanner.plan([PlanInput(item: row, maxAttempts: 5)], context: ctx, routes: Self.routes,
                                        options: DecisionOptions(now: c.now), escalation: EscalationPolicy())
        let planned = try #require(plan.first)
        switch planned.action {
        case .send(let todo, let previouslyDelivered):
            #expect("send:" + todo.map(\.provider.rawValue).joined(separator: ",") == c.expect)
            #expect(previouslyDelivered == !c.delivered.isEmpty)
        case .record(let r, let escalation):
            #expect("record:\(r.status.rawValue)/\(r.reason ?? "")" == c.expect)
            #expect(escalation?.channel == c.escalatesTo)
            if let escalation {
                #expect(escalation.dedupeKey == EscalationPolicy.dedupeKey(from: row.id, to: escalation.channel))
            }
            if r.status == .pending { #expect(r.attemptsDelta == -1) }
        }
    }

    @Test func destinationsNameTheirAddress() {
        let prefs = Preferences(userId: alice, email: "a@example.com", phoneE164: "+15551234567")
        func of(_ channel: String, _ route: RouteFacts?) -> [Destination] {
            DeliveryPlanner.destinationsOf(item(channel, kind: "system", scheduledAt: Self.noon), prefs: prefs, route: route,
                                           tokens: [alice: [Self.apnsToken, Self.fcmToken]])
        }
        #expect(of("sms", Self.routes[.sms]).map(\.address) == ["+15551234567"])
        #expect(of("email", Self.routes[.email]).map(\.address) == ["a@example.com"])
        #expect(of("webhook", Self.routes[.webhook]).map(\.address) == ["https://hooks.example/x"])
        #expect(of("in_app", Self.routes[.inApp]).map(\.address) == [alice.lowercased])
        // The log route takes every token and names itself as the provider of addresses.
        #expect(of("push", RouteFacts(mode: .log)).count == 2)
        #expect(of("sms", RouteFacts(mode: .log)).map(\.provider) == [.log])
        #expect(of("push", nil).isEmpty)
    }

    /// A token whose provider an app wrote wrong is not a destination (never taken for APNs); a row
    /// left with no destination names it in last_error, and a critical one still escalates.
    @Test func unusableTokensAreNamedNotSent() throws {
        var ctx = DeliveryContext()
        ctx.profiles[alice] = Preferences(userId: alice, phoneE164: "+15551234567", notifyPush: true, notifySMS: true)
        ctx.unusableTokens[alice] = ["the device token's provider 'huawei' is unknown (push providers: apns, fcm, expo)"]
        let critical = item("push", kind: "system", severity: .critical, scheduledAt: Self.noon.addingTimeInterval(-60))
        let plan = DeliveryPlanner.plan([PlanInput(item: critical, maxAttempts: 5)], context: ctx, routes: Self.routes,
                                        options: DecisionOptions(now: Self.noon), escalation: EscalationPolicy())
        guard case .record(let r, let escalation)? = plan.first?.action else { Issue.record("not recorded"); return }
        #expect(r.skipReason == .noDestination)
        #expect(r.lastError?.contains("'huawei' is unknown") == true)
        #expect(escalation?.channel == .sms)

        // With a usable token beside it, the row is sent to that one only.
        ctx.deviceTokens[alice] = [Self.apnsToken]
        let row = item("push", kind: "system", scheduledAt: Self.noon.addingTimeInterval(-60))
        let sent = DeliveryPlanner.plan([PlanInput(item: row, maxAttempts: 5)], context: ctx, routes: Self.routes,
                                        options: DecisionOptions(now: Self.noon), escalation: EscalationPolicy())
        guard case .send(let todo, _)? = sent.first?.action else { Issue.record("not sent"); return }
        #expect(todo.map(\.provider) == [.apns])

        // Another channel's row never names the push tokens.
        var sms = ctx
        sms.deviceTokens[alice] = nil
        let text = item("sms", kind: "system", scheduledAt: Self.noon.addingTimeInterval(-60))
        var prefs = try #require(sms.profiles[alice])
        prefs.phoneE164 = nil
        sms.profiles[alice] = prefs
        let none = DeliveryPlanner.plan([PlanInput(item: text, maxAttempts: 5)], context: sms, routes: Self.routes,
                                        options: DecisionOptions(now: Self.noon), escalation: EscalationPolicy())
        guard case .record(let skipped, _)? = none.first?.action else { Issue.record("not recorded"); return }
        #expect(skipped.skipReason == .noDestination)
        #expect(skipped.lastError == nil)
    }

    /// An app may have written thousands of unusable tokens: last_error names a few and counts the rest.
    @Test func manyUnusableTokensAreCountedNotListed() {
        var ctx = DeliveryContext()
        ctx.profiles[alice] = Preferences(userId: alice, notifyPush: true)
        ctx.unusableTokens[alice] = (0..<5_000).map { "the device token's provider 'p\($0)' is unknown" }
        let row = item("push", kind: "system", scheduledAt: Self.noon.addingTimeInterval(-60))
        let plan = DeliveryPlanner.plan([PlanInput(item: row, maxAttempts: 5)], context: ctx, routes: Self.routes,
                                        options: DecisionOptions(now: Self.noon), escalation: EscalationPolicy())
        guard case .record(let r, _)? = plan.first?.action else { Issue.record("not recorded"); return }
        let error = r.lastError ?? ""
        #expect(error.contains("'p0'") && error.contains("'p2'") && !error.contains("'p3'"))
        #expect(error.hasSuffix("and 4997 more unusable tokens"))
        #expect(error.utf8.count < 400)
    }

    @Test func theRateLimitsCountEarlierRowsOfTheBatch() {
        var ctx = DeliveryContext()
        ctx.profiles[alice] = Preferences(userId: alice, notifyPush: true)
        ctx.deviceTokens[alice] = [Self.apnsToken]
        let rows = (0..<12).map { _ in PlanInput(item: item("push", kind: "reminder", scheduledAt: Self.noon), maxAttempts: 5) }
        let plan = DeliveryPlanner.plan(rows, context: ctx, routes: Self.routes, options: DecisionOptions(now: Self.noon),
                                        escalation: EscalationPolicy())
        let sends = plan.filter { if case .send = $0.action { true } else { false } }.count
        #expect(sends == 1, "the same-type spacing defers the eleven rows after the first")
    }
}
