import Foundation

/// One destination's answer as the fold reads it: the provider that handled it and what it said.
public struct DestinationAnswer: Sendable {
    public var destination: Destination
    public var provider: Provider
    public var response: ClassifiedResponse
    /// Times the request went again, before this answer, after its connection ended with the answer
    /// lost: this answer is the row's try `attempts + resends`.
    public var resends: Int

    public init(destination: Destination, provider: Provider, response: ClassifiedResponse, resends: Int = 0) {
        self.destination = destination
        self.provider = provider
        self.response = response
        self.resends = resends
    }
}

/// A destination whose request never left the process (stop signal, a failed record flush, a provider
/// throttled or broken for the pass): no attempt is charged for it.
public struct UnsentDestination: Sendable {
    public var destination: Destination
    /// When it may be tried again; nil: at once.
    public var until: Date?
    public var reason: ReleaseReason

    public init(destination: Destination, until: Date?, reason: ReleaseReason) {
        self.destination = destination
        self.until = until
        self.reason = reason
    }
}

/// One row after its sends: everything `DeliveryFold` needs to record it.
public struct SentRow: Sendable {
    public var item: QueueItem
    public var maxAttempts: Int
    /// The decision's trail, kept on a sent row.
    public var trail: JSONValue
    /// The channel's first provider: named when no answer says which provider delivered.
    public var provider: Provider?
    /// An earlier attempt already reached some destination.
    public var previouslyDelivered: Bool
    /// The recipient's preferences, for escalation.
    public var prefs: Preferences?
    /// Per destination: the provider that handled it last and what it said.
    public var answers: [DestinationAnswer] = []
    public var unsent: [UnsentDestination] = []
    /// Transient failures after which the destination moved to another provider: recorded as delivery
    /// attempts, not as the destination's outcome.
    public var failedOver: [DestinationAnswer] = []
    /// Answers lost with their connection, after which the request went again at once: each recorded as
    /// a delivery attempt and charged as a try of the row.
    public var lostAnswers: [DestinationAnswer] = []

    /// Tries beyond the claim's: the most times one destination went again after a lost answer.
    public var resends: Int { lostAnswers.map { $0.resends + 1 }.max() ?? 0 }

    public init(item: QueueItem, maxAttempts: Int, trail: JSONValue, provider: Provider?,
                previouslyDelivered: Bool, prefs: Preferences?) {
        self.item = item
        self.maxAttempts = maxAttempts
        self.trail = trail
        self.provider = provider
        self.previouslyDelivered = previouslyDelivered
        self.prefs = prefs
    }
}

/// What the fold writes for one row.
public struct FoldedRow: Sendable {
    public var row: RowRecord
    public var deliveries: [DeliveryRecord] = []
    public var tickets: [ReceiptTicket] = []
    public var deactivations: [TokenDeactivation] = []
    public var optOuts: [ChannelOptOut] = []
    public var forecastSent: ForecastSent?
    /// A critical row that reached no one: its next channel.
    public var escalation: EscalationStep?

    public init(row: RowRecord) { self.row = row }
}

/// Folds a row's per-destination answers into its records: sent when any destination got it (now or on
/// an earlier attempt), retried with backoff while a transient failure remains and attempts are left,
/// returned to the queue when requests were never sent, failed for good otherwise. The answers'
/// follow-ups become tickets, deactivations and opt-outs; a critical row failed for good without
/// reaching anyone escalates.
///
///     let folded = DeliveryFold.fold(row, escalation: policy, now: now, random: 0.5)
///     folded.row.status       // .sent / .failed / .pending
public enum DeliveryFold {
    /// How long a row waits after its provider refused herald's credentials or configuration: until a
    /// later pass (cron's interval), by when an operator may have fixed the setting.
    public static let refusedPause: TimeInterval = 300
    /// The longest a row never sent waits. A provider-wide wait longer than that (a `Retry-After` of a
    /// day on a 503) holds the provider back for the rest of the pass, but the rows it kept from being
    /// sent come back within the hour and a later pass asks again: one header does not hold a whole
    /// queue past its `--max-age`.
    public static let maxHold: TimeInterval = 3600
    /// The reason of a row released because its provider refused herald's credentials.
    public static let refusedReason = ReleaseReason.providerRefused.rawValue

    /// `random` (0..<1) is the backoff's jitter, injected so the result is reproducible.
    public static func fold(_ sent: SentRow, escalation policy: EscalationPolicy, now: Date, random: Double) -> FoldedRow {
        let item = sent.item
        var out = FoldedRow(row: RowRecord(item: item, status: .failed, event: .failed))
        for answer in sent.lostAnswers + sent.failedOver + sent.answers {
            out.deliveries.append(delivery(item, answer))
            followUps(of: answer, item: item, now: now, into: &out)
        }
        let t = Tally(sent, now: now)
        var r: RowRecord
        if t.released {
            r = released(sent, t, now: now)
        } else if let firstRetry = t.retries.first, t.attemptsLeft {
            r = retrying(sent, t, code: firstRetry.code, now: now, random: random)
        } else if t.reached {
            r = delivered(sent, t, now: now)
            if item.kind == .dailyForecast, let date = item.payload?["date"]?.stringValue.flatMap(LocalDate.init) {
                out.forecastSent = ForecastSent(queueId: item.id, userId: item.recipientUserId, date: date)
            }
        } else {
            r = failed(sent, t)
        }
        if sent.resends > 0 { resent(sent.resends, &r) }
        // Failed for good without reaching anyone: a critical notification tries the next channel.
        if r.status == .failed && r.permanent && !t.reached, let prefs = sent.prefs {
            out.escalation = policy.escalation(of: item, prefs: prefs, because: r.reason ?? "failed")
        }
        out.row = r
        return out
    }

    /// A row's answers, sorted by what they mean for it.
    struct Tally {
        var delivered: [String?] = []
        var retries: [DeliveryOutcome] = []
        /// Permanent and destination-invalid answers.
        var failures: [DeliveryOutcome] = []
        /// Refusals of herald's own credentials or configuration: not the message's fault.
        var refused: [DeliveryOutcome] = []
        var messages: [String]
        /// Some destination got it, now or on an earlier attempt.
        var reached: Bool
        /// The row's tries: its claim's attempt, and each request sent again after its connection ended.
        var tries: Int
        var attemptsLeft: Bool
        /// When the destinations not sent, or a refusing provider, may be tried again.
        var unsentUntil: Date?
        var unsent: Int

        init(_ sent: SentRow, now: Date) {
            for outcome in sent.answers.map(\.response.outcome) {
                switch outcome {
                case .delivered(let id): delivered.append(id)
                case .retry: retries.append(outcome)
                case .permanent, .destinationInvalid: failures.append(outcome)
                case .refused: refused.append(outcome)
                }
            }
            messages = (retries + failures + refused).compactMap(\.message)
            reached = !delivered.isEmpty || sent.previouslyDelivered
            tries = sent.item.attempts + sent.resends
            attemptsLeft = tries < sent.maxAttempts
            unsent = sent.unsent.count
            unsentUntil = (sent.unsent.compactMap(\.until) + (refused.isEmpty ? [] : [now.addingTimeInterval(refusedPause)])).max()
        }

        /// Some destinations were never sent to, or their provider refused herald's credentials, and
        /// nothing failed transiently: the row goes back to the queue.
        var released: Bool { (unsent > 0 || !refused.isEmpty) && retries.isEmpty }
    }

    /// Back to the queue; the destinations already delivered are not sent again. The attempt is given
    /// back only when nothing was delivered: the next claim looks up delivered destinations only for
    /// rows past their first attempt (`QueueStore.loadContext`), so a row that reached someone must come back as
    /// attempt 2 or later.
    static func released(_ sent: SentRow, _ t: Tally, now: Date) -> RowRecord {
        var r = RowRecord(item: sent.item, status: .pending, event: .released)
        r.attemptsDelta = t.delivered.isEmpty ? -1 : 0
        r.runAfter = min(t.unsentUntil ?? now, now.addingTimeInterval(maxHold))
        r.reason = sent.unsent.first?.reason.rawValue ?? refusedReason
        r.lastError = t.refused.first?.message
        r.details = ["not_sent": .number(Double(t.unsent + t.refused.count)),
                     "delivered": .number(Double(t.delivered.count))]
        return r
    }

    /// Transient failures remain and tries are left: again later, after the backoff (or the provider's
    /// wait), to the destinations not yet delivered.
    static func retrying(_ sent: SentRow, _ t: Tally, code: String?, now: Date, random: Double) -> RowRecord {
        var r = RowRecord(item: sent.item, status: .failed, event: .failed)
        let retryAfter = t.retries.compactMap { o -> Double? in
            if case .retry(let after, _, _) = o { return after } else { return nil }
        }.max()
        let delay = Backoff.delay(attempt: t.tries, retryAfter: retryAfter, random: random)
        r.runAfter = max(now.addingTimeInterval(delay), t.unsentUntil ?? now)
        r.reason = code ?? "retry"
        r.lastError = t.messages.first
        r.details = ["retry_in_s": .number(delay.rounded()), "attempt": .number(Double(t.tries))]
        return r
    }

    /// Some destination got it, now or on an earlier attempt: sent, with what failed noted, and the
    /// provider that actually delivered (push: the token's; email: after any failover).
    static func delivered(_ sent: SentRow, _ t: Tally, now: Date) -> RowRecord {
        var r = RowRecord(item: sent.item, status: .sent, event: .sent)
        r.sentAt = now
        r.providerMessageId = t.delivered.compactMap { $0 }.first
        r.lastError = t.messages.isEmpty ? nil : "some destinations failed: " + RowRecord.messages(t.messages)
        r.details = sent.trail
        r.reason = (sent.answers.first(where: { if case .delivered = $0.response.outcome { true } else { false } })?.provider
            ?? sent.provider)?.rawValue
        return r
    }

    /// Failed for good: tries exhausted on transient failures, or permanent answers only.
    static func failed(_ sent: SentRow, _ t: Tally) -> RowRecord {
        var r = RowRecord(item: sent.item, status: .failed, event: .failed)
        r.permanent = true
        if !t.retries.isEmpty {
            r.reason = "attempts_exhausted"
            r.lastError = "gave up after \(t.tries) attempts: \(t.messages.first ?? "transient failure")"
        } else {
            let allInvalid = !t.failures.isEmpty && t.failures.count == sent.answers.count && t.failures.allSatisfy {
                if case .destinationInvalid = $0 { return true } else { return false }
            }
            r.reason = allInvalid ? "destinations_invalid" : (t.failures.first?.code ?? "permanent")
            r.lastError = t.messages.isEmpty ? "nothing was delivered" : RowRecord.messages(t.messages)
        }
        return r
    }

    /// Charges the tries sent again after a lost answer, and says so in the trail.
    static func resent(_ resends: Int, _ r: inout RowRecord) {
        r.attemptsDelta += resends
        let note: JSONValue = .number(Double(resends))
        if case .object(var details) = r.details {
            details[resentKey] = note
            r.details = .object(details)
        } else {
            r.details = [resentKey: note]
        }
    }

    /// The trail's key for the tries sent again because their connection ended before the answer.
    public static let resentKey = "resent_after_connection_ended"

    /// One attempt's row of `notification_deliveries`.
    static func delivery(_ item: QueueItem, _ answer: DestinationAnswer) -> DeliveryRecord {
        let (destination, response) = (answer.destination, answer.response)
        var d = DeliveryRecord(
            queueId: item.id, attempt: item.attempts + answer.resends, channel: item.channelRaw, provider: answer.provider,
            destination: destination.storableAddress, deviceTokenId: destination.deviceTokenId,
            outcome: response.outcome.label, httpStatus: response.httpStatus, errorCode: response.outcome.code,
            messageId: nil, error: response.outcome.message, latencyMs: response.latencyMs)
        if case .delivered(let id) = response.outcome { d.messageId = id }
        return d
    }

    /// What the adapter declared beyond the outcome: a receipt to check later, a dead device token,
    /// a channel the recipient's address refuses.
    static func followUps(of answer: DestinationAnswer, item: QueueItem, now: Date, into out: inout FoldedRow) {
        let (destination, response, provider) = (answer.destination, answer.response, answer.provider)
        let reason = "\(provider.rawValue) \(response.outcome.code ?? ""): \(response.outcome.message ?? "")"
        for followUp in response.followUps {
            switch followUp {
            case .checkReceipt(let ticket):
                guard case .delivered = response.outcome else { continue }
                out.tickets.append(ReceiptTicket(queueId: item.id, provider: provider, ticketId: ticket,
                                                 deviceTokenId: destination.deviceTokenId, createdAt: now))
            case .deactivateDestination:
                guard case .destinationInvalid = response.outcome, let token = destination.deviceTokenId else { continue }
                out.deactivations.append(TokenDeactivation(deviceTokenId: token, reason: reason,
                                                           registeredBefore: response.invalidSince ?? now))
            case .optOut:
                guard case .destinationInvalid = response.outcome, destination.deviceTokenId == nil,
                      let channel = item.channel, channel.optOutSwitch != nil else { continue }
                out.optOuts.append(ChannelOptOut(userId: item.recipientUserId, channel: channel,
                                                 destination: destination.address, reason: reason))
            }
        }
    }
}
