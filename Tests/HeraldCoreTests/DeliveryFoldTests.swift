import Foundation
import Testing
@testable import HeraldCore

/// The fold, table-driven: each outcome × retry state × escalation, and the follow-ups adapters declare.
@Suite struct DeliveryFoldTests {
    static let now = utc(2026, 1, 25, 12)
    static let token = Destination(provider: .apns, address: "token-1", deviceTokenId: UUID())
    static let phone = Destination(provider: .twilio, address: "+15551234567")

    enum Answer: String {
        case delivered, retry, permanent, invalid, notSent
    }

    struct Case: CustomTestStringConvertible {
        var answer: Answer
        /// The row's attempt is its last.
        var lastAttempt: Bool
        var critical: Bool
        var status: QueueStatus
        var permanent: Bool
        var reason: String
        var escalates: Bool

        var testDescription: String { "\(answer.rawValue) last=\(lastAttempt) critical=\(critical)" }
    }

    /// Every combination: what the row becomes, and whether a critical one goes to the next channel.
    static let table: [Case] = [Answer.delivered, .retry, .permanent, .invalid, .notSent].flatMap { answer in
        [false, true].flatMap { last in
            [false, true].map { critical -> Case in
                switch answer {
                case .delivered:
                    return Case(answer: answer, lastAttempt: last, critical: critical, status: .sent, permanent: false,
                                reason: "apns", escalates: false)
                case .retry where !last:
                    return Case(answer: answer, lastAttempt: last, critical: critical, status: .failed, permanent: false,
                                reason: "timeout", escalates: false)
                case .retry:
                    return Case(answer: answer, lastAttempt: last, critical: critical, status: .failed, permanent: true,
                                reason: "attempts_exhausted", escalates: critical)
                case .permanent:
                    return Case(answer: answer, lastAttempt: last, critical: critical, status: .failed, permanent: true,
                                reason: "BadPayload", escalates: critical)
                case .invalid:
                    return Case(answer: answer, lastAttempt: last, critical: critical, status: .failed, permanent: true,
                                reason: "destinations_invalid", escalates: critical)
                case .notSent:
                    return Case(answer: answer, lastAttempt: last, critical: critical, status: .pending, permanent: false,
                                reason: "throttled", escalates: false)
                }
            }
        }
    }

    static func sentRow(_ c: Case) -> SentRow {
        var row = item("push", kind: "system", severity: c.critical ? .critical : .watch, scheduledAt: now)
        row.attempts = c.lastAttempt ? 5 : 2
        let prefs = Preferences(userId: alice, phoneE164: "+15551234567", notifyPush: true, notifySMS: true)
        var sent = SentRow(item: row, maxAttempts: 5, trail: ["rule": "send"], provider: .apns,
                           previouslyDelivered: false, prefs: prefs)
        func answered(_ outcome: DeliveryOutcome, followUps: [FollowUp] = []) {
            sent.answers.append(DestinationAnswer(destination: token, provider: .apns,
                                                  response: ClassifiedResponse(outcome, httpStatus: 200, followUps: followUps)))
        }
        switch c.answer {
        case .delivered: answered(.delivered(messageId: "m-1"))
        case .retry: answered(.retry(after: 10, code: "timeout", message: "request timed out"))
        case .permanent: answered(.permanent(code: "BadPayload", message: "bad payload"))
        case .invalid: answered(.destinationInvalid(code: "Unregistered", message: "gone"), followUps: [.deactivateDestination])
        case .notSent: sent.unsent.append(UnsentDestination(destination: token, until: now.addingTimeInterval(30), reason: .throttled))
        }
        return sent
    }

    @Test(arguments: table)
    func foldsEachOutcome(_ c: Case) {
        let folded = DeliveryFold.fold(Self.sentRow(c), escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(folded.row.status == c.status)
        #expect(folded.row.permanent == c.permanent)
        #expect(folded.row.reason == c.reason)
        #expect((folded.escalation != nil) == c.escalates)
        if c.escalates {
            #expect(folded.escalation?.channel == .sms)
            #expect(folded.escalation?.reason == "escalated_" + c.reason)
        }
        // One delivery row per answer; none for a request never sent.
        #expect(folded.deliveries.count == (c.answer == .notSent ? 0 : 1))
        switch c.answer {
        case .retry where !c.lastAttempt:
            #expect(folded.row.runAfter == Self.now.addingTimeInterval(10))  // the provider's Retry-After
        case .notSent:
            #expect(folded.row.attemptsDelta == -1)
            #expect(folded.row.runAfter == Self.now.addingTimeInterval(30))
        case .delivered:
            #expect(folded.row.sentAt == Self.now)
            #expect(folded.row.providerMessageId == "m-1")
        case .invalid:
            #expect(folded.deactivations.map(\.deviceTokenId) == [Self.token.deviceTokenId])
        default:
            break
        }
    }

    @Test func backoffWithoutRetryAfterFollowsTheAttempt() {
        var sent = Self.sentRow(Case(answer: .retry, lastAttempt: false, critical: false, status: .failed,
                                     permanent: false, reason: "", escalates: false))
        sent.answers[0].response.outcome = .retry(after: nil, code: "timeout", message: "t")
        let folded = DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        // Attempt 2 without a Retry-After: 60 s exactly at random 0.5.
        #expect(folded.row.runAfter == Self.now.addingTimeInterval(60))
    }

    /// Returned to the queue after one destination got it: the attempt is kept, so the next claim (attempt
    /// 2 or later) looks up the delivered destination and does not send there again.
    @Test func aRowReleasedAfterADeliveryKeepsItsAttempt() {
        var sent = Self.sentRow(Case(answer: .notSent, lastAttempt: false, critical: false, status: .pending,
                                     permanent: false, reason: "", escalates: false))
        sent.answers.append(DestinationAnswer(destination: Self.phone, provider: .twilio,
                                              response: ClassifiedResponse(.delivered(messageId: "SM1"))))
        let folded = DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(folded.row.status == .pending)
        #expect(folded.row.attemptsDelta == 0)
    }

    /// The provider refused herald's credentials: back to the queue after the refusal's pause, the
    /// attempt given back, the refusal's text as last_error and its delivery recorded.
    @Test func aRefusalReleasesTheRowWithNoAttemptCharged() {
        var sent = Self.sentRow(Case(answer: .delivered, lastAttempt: true, critical: true, status: .sent,
                                     permanent: false, reason: "", escalates: false))
        sent.answers[0].response.outcome = .refused(code: "InvalidProviderToken", message: "check APNS_KEY_ID")
        let folded = DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(folded.row.status == .pending)
        #expect(folded.row.attemptsDelta == -1)
        #expect(folded.row.runAfter == Self.now.addingTimeInterval(DeliveryFold.refusedPause))
        #expect(folded.row.reason == DeliveryFold.refusedReason)
        #expect(folded.row.lastError == "check APNS_KEY_ID")
        #expect(folded.escalation == nil, "not failed: a critical row does not escalate")
        #expect(folded.deliveries.map(\.outcome) == ["retry"])
    }

    /// A provider-wide wait of a day holds the rows it kept from being sent for an hour at most.
    @Test func anUnsentRowWaitsAtMostAnHour() {
        var sent = Self.sentRow(Case(answer: .notSent, lastAttempt: false, critical: false, status: .pending,
                                     permanent: false, reason: "", escalates: false))
        sent.unsent[0].until = Self.now.addingTimeInterval(86_400)
        let folded = DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(folded.row.runAfter == Self.now.addingTimeInterval(DeliveryFold.maxHold))
    }

    @Test func aRowDeliveredEarlierIsSentDespiteAFailureNow() {
        var sent = Self.sentRow(Case(answer: .permanent, lastAttempt: false, critical: true, status: .failed,
                                     permanent: true, reason: "", escalates: false))
        sent.previouslyDelivered = true
        let folded = DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(folded.row.status == .sent)
        #expect(folded.row.lastError == "some destinations failed: bad payload")
        #expect(folded.escalation == nil)
    }

    @Test func escalationStopsWhenTheRecipientHasNoNextChannel() {
        var sent = Self.sentRow(Case(answer: .permanent, lastAttempt: false, critical: true, status: .failed,
                                     permanent: true, reason: "", escalates: false))
        sent.prefs?.notifySMS = false
        sent.prefs?.notifyEmail = false
        #expect(DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5).escalation == nil)
        sent.prefs?.notifyEmail = true
        #expect(DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5).escalation?.channel == .email)
        #expect(DeliveryFold.fold(sent, escalation: EscalationPolicy(chain: []), now: Self.now, random: 0.5).escalation == nil)
    }

    @Test func failedOverAttemptsAreRecordedButDoNotDecide() {
        var sent = Self.sentRow(Case(answer: .delivered, lastAttempt: false, critical: false, status: .sent,
                                     permanent: false, reason: "", escalates: false))
        sent.answers[0].provider = .smtp
        sent.failedOver = [DestinationAnswer(destination: Self.phone, provider: .sendgrid, response: ClassifiedResponse(
            .retry(after: nil, code: "500", message: "down"), httpStatus: 500))]
        let folded = DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: Self.now, random: 0.5)
        #expect(folded.row.status == .sent)
        #expect(folded.row.reason == "smtp")  // the provider that actually delivered
        #expect(folded.deliveries.map(\.provider) == [.sendgrid, .smtp])
        #expect(folded.deliveries.map(\.outcome) == ["retry", "delivered"])
    }

    // MARK: - Follow-ups declared by adapters

    static func followed(_ destination: Destination, channel: String, _ outcome: DeliveryOutcome,
                         _ followUps: [FollowUp]) -> FoldedRow {
        let row = item(channel, kind: "system", scheduledAt: now)
        var sent = SentRow(item: row, maxAttempts: 5, trail: .null, provider: destination.provider,
                           previouslyDelivered: false, prefs: nil)
        sent.answers = [DestinationAnswer(destination: destination, provider: destination.provider,
                                          response: ClassifiedResponse(outcome, followUps: followUps))]
        return DeliveryFold.fold(sent, escalation: EscalationPolicy(), now: now, random: 0.5)
    }

    @Test func aTicketIsCheckedLaterOnlyWhenDeclared() {
        let expo = Destination(provider: .expo, address: "ExponentPushToken[x]", deviceTokenId: UUID())
        let ticketed = Self.followed(expo, channel: "push", .delivered(messageId: "t-1"), [.checkReceipt(ticketId: "t-1")])
        #expect(ticketed.tickets.map(\.ticketId) == ["t-1"])
        #expect(ticketed.tickets.first?.createdAt == Self.now)
        #expect(Self.followed(expo, channel: "push", .delivered(messageId: "t-1"), []).tickets.isEmpty)
    }

    @Test func deadDestinationsFollowTheAdaptersDeclaration() {
        let gone = DeliveryOutcome.destinationInvalid(code: "21610", message: "STOP")
        let sms = Self.followed(Self.phone, channel: "sms", gone, [.optOut])
        #expect(sms.optOuts.map(\.channel) == [.sms])
        #expect(sms.optOuts.first?.reason == "twilio 21610: STOP")
        #expect(sms.deactivations.isEmpty)
        // Webhook has no opt-out switch; a token is deactivated, never opted out.
        #expect(Self.followed(Self.phone, channel: "webhook", gone, [.optOut]).optOuts.isEmpty)
        let push = Self.followed(Self.token, channel: "push", gone, [.deactivateDestination, .optOut])
        #expect(push.deactivations.count == 1)
        #expect(push.optOuts.isEmpty)
        // A follow-up of a dead destination is ignored once the answer is something else (a suspected
        // configuration slip turned it into a retry).
        let retried = Self.followed(Self.token, channel: "push", .retry(after: nil, code: "config_suspect", message: "m"),
                                    [.deactivateDestination])
        #expect(retried.deactivations.isEmpty)
    }
}

/// A row's `last_error` is a sentence, whatever it collects: each different message once, the first
/// five, then how many more; never over `RowRecord.lastErrorLimit` characters.
@Suite struct LastErrorBoundTests {
    @Test func repeatedMessagesAreNamedOnceAndTheRestCounted() {
        let messages = ["410 Unregistered", "410 Unregistered"] + (1...9).map { "400 BadDeviceToken \($0)" }
        #expect(RowRecord.messages(messages)
            == "410 Unregistered; 400 BadDeviceToken 1; 400 BadDeviceToken 2; 400 BadDeviceToken 3; 400 BadDeviceToken 4; and 5 more")
        #expect(RowRecord.messages(["one"]) == "one")
    }

    @Test func aLastErrorIsCutAtItsLimit() {
        var r = RowRecord(id: UUID(), status: .failed, event: .failed)
        r.lastError = String(repeating: "é", count: 25_000)
        #expect(r.lastError?.count == RowRecord.lastErrorLimit)
        #expect(r.lastError?.hasSuffix("…") == true)
        r.lastError = "short"
        #expect(r.lastError == "short")
    }
}
