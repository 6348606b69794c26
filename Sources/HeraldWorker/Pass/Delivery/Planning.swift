import Foundation
import HeraldChannels
import HeraldCore

/// One send to one destination through one provider's adapter.
struct Job {
    /// The row's place in its batch's flights.
    var flight: Int
    var envelope: Envelope
    var adapter: any ProviderAdapter
    var maxAttempts: Int
    /// Times this destination went again after its connection ended before the answer.
    var resends = 0

    /// The row has a try left for this destination: its claim's attempt and each resend are tries.
    var mayResend: Bool { envelope.item.attempts + resends < maxAttempts }
}

/// What became of one job.
enum JobResult {
    case answered(provider: Provider, ClassifiedResponse)
    /// Never sent; may be tried again from `until` (nil: at once).
    case notSent(until: Date?, reason: ReleaseReason)
    /// A transient failure after which the destination moved to the channel's next provider: recorded
    /// as a delivery attempt, not as the destination's outcome.
    case failedOver(provider: Provider, ClassifiedResponse)
    /// The answer was lost with its connection and the request goes again at once on a new one:
    /// recorded as a delivery attempt, and the row charged a try.
    case answerLost(provider: Provider, ClassifiedResponse)
}

/// A row being sent: what the fold will need, gathered as its destinations answer.
struct InFlight {
    var sent: SentRow
    var expected: Int
    var inbox: InboxRecord?
    var done: Bool { sent.answers.count + sent.unsent.count >= expected }

    /// Takes a job's result. True when it is the destination's last word (an answer, or not sent);
    /// false while the destination is still on its way (failed over, or sent again).
    mutating func take(_ job: Job, _ result: JobResult) -> Bool {
        let destination = job.envelope.destination
        switch result {
        case .answered(let provider, let answer):
            sent.answers.append(DestinationAnswer(destination: destination, provider: provider, response: answer,
                                                  resends: job.resends))
            return true
        case .notSent(let until, let reason):
            sent.unsent.append(UnsentDestination(destination: destination, until: until, reason: reason))
            return true
        case .failedOver(let provider, let answer):
            sent.failedOver.append(DestinationAnswer(destination: destination, provider: provider, response: answer,
                                                     resends: job.resends))
            return false
        case .answerLost(let provider, let answer):
            sent.lostAnswers.append(DestinationAnswer(destination: destination, provider: provider, response: answer,
                                                      resends: job.resends))
            return false
        }
    }
}

/// A batch after planning: the records known before any request, the rows with sends, the sends.
struct BatchWork {
    var flights: [InFlight] = []
    var jobs: [Job] = []
}

extension DeliveryPass {
    /// Plans every row of the batch (`DeliveryPlanner`, a row at a time: a large batch never holds every
    /// row's plan at once), renders what is sent, delivers log and inbox routes at once, and returns the
    /// provider sends. Rows whose fate is known before any network I/O are recorded first, a chunk at a
    /// time.
    func plan(_ batch: [Claimed]) throws -> BatchWork {
        let (firstPlanner, unloadable) = try plannerAndUnloadable(for: batch)
        var planner = firstPlanner
        var immediate = RecordBatch()
        var work = BatchWork()
        for claimed in batch {
            if let why = unloadable[claimed.item.recipientUserId] {
                immediate.rows.append(QueueStore.unloadable(claimed, why: why, now: clock.now()))
                continue
            }
            let row = planner.plan(PlanInput(item: claimed.item, maxAttempts: claimed.maxAttempts))
            switch row.action {
            case .record(let record, let escalation):
                immediate.rows.append(record)
                if let escalation { immediate.escalations.append(newNotification(escalating: row.item, escalation)) }
                if case .fail(let message) = row.result.decision {
                    logger.warning("row failed permanently", metadata: [
                        "queue_id": .string(row.item.id.lowercased), "error": .string(message)])
                }
            case .send(let todo, let previouslyDelivered):
                if let flight = route(row, todo: todo, previouslyDelivered: previouslyDelivered, jobs: &work.jobs,
                                      index: work.flights.count) {
                    if flight.done { immediate.append(finish(flight)) } else { work.flights.append(flight) }
                } else {
                    immediate.rows.append(Self.unroutable(row.item))
                }
            }
            if immediate.rows.count >= options.recordChunk * 5 { try flush(&immediate, channelOf: channelOf) }
        }
        try flush(&immediate, channelOf: channelOf)
        return work
    }

    /// The batch's planner: its context loaded in one set of queries, the routes, the time.
    func planner(for batch: [Claimed]) throws -> DeliveryPlanner {
        let now = clock.now()
        return planner(context: try store.loadContext(for: batch.map(\.item), now: now), now: now)
    }

    /// The batch's planner, and the recipients whose context could not be loaded (`loadContexts`):
    /// their rows are failed, their batch-mates' planned.
    func plannerAndUnloadable(for batch: [Claimed]) throws -> (DeliveryPlanner, [UUID: String]) {
        let now = clock.now()
        let loaded = try store.loadContexts(for: batch.map(\.item), now: now)
        for recipient in loaded.unloadable.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
            logger.warning("a recipient's preferences and devices could not be read; their rows of the batch fail, the others go on",
                           metadata: ["recipient_user_id": .string(recipient.lowercased),
                                      "rows": "\(batch.filter { $0.item.recipientUserId == recipient }.count)"])
        }
        return (planner(context: loaded.context, now: now), loaded.unloadable)
    }

    private func planner(context: BatchContext, now: Date) -> DeliveryPlanner {
        DeliveryPlanner(
            context: DeliveryContext(context), routes: routes.facts,
            options: DecisionOptions(maxAge: options.maxAge, types: types, now: now),
            escalation: options.escalation)
    }

    /// A row to send: rendered (again for a push token whose own locale differs from the profile's),
    /// then each destination delivered at once (log, inbox) or made a job for its provider's adapter.
    /// Nil when the row has no profile or no route (the plan records those; never leave one leased).
    func route(_ row: PlannedRow, todo: [Destination], previouslyDelivered: Bool, jobs: inout [Job],
               index: Int) -> InFlight? {
        let item = row.item
        guard let prefs = row.prefs, let route = item.channel.flatMap({ routes[$0] }) else { return nil }
        let rendered = renderer.render(item, preferences: prefs, unreadInApp: row.unreadInApp)
        var flight = InFlight(
            sent: SentRow(item: item, maxAttempts: row.maxAttempts, trail: row.result.trail, provider: route.provider,
                          previouslyDelivered: previouslyDelivered, prefs: prefs),
            expected: todo.count,
            inbox: InboxRecord.payloadHasText(item) ? nil
                : InboxRecord(item: item, rendered: rendered, renderer: renderer, preferences: prefs,
                              unreadInApp: row.unreadInApp))
        for destination in todo {
            // Wire timestamps (JWT iat, webhook-timestamp) follow the real clock, not --now.
            let own = Renderer.locale(profile: prefs.locale, destination: destination)
            let text = own == prefs.locale ? rendered
                : renderer.render(item, preferences: prefs, unreadInApp: row.unreadInApp, destination: destination)
            let envelope = Envelope(item: item, rendered: text, destination: destination, now: clock.wire())
            switch route {
            case .log:
                outbox.deliver(envelope)
                flight.sent.answers.append(DestinationAnswer(
                    destination: destination, provider: .log, response: ClassifiedResponse(.delivered(messageId: nil))))
            case .inbox:
                flight.sent.answers.append(DestinationAnswer(
                    destination: destination, provider: .inbox, response: ClassifiedResponse(.delivered(messageId: nil))))
            case .providers:
                guard let adapter = route.adapter(for: destination.provider) else {
                    flight.sent.answers.append(DestinationAnswer(
                        destination: destination, provider: destination.provider, response: ClassifiedResponse(
                            .permanent(code: "no_adapter", message: "no adapter for provider '\(destination.provider.rawValue)'"))))
                    continue
                }
                jobs.append(Job(flight: index, envelope: envelope, adapter: adapter, maxAttempts: row.maxAttempts))
            }
        }
        return flight
    }

    /// The record of a row planned to send that has no profile or no route.
    static func unroutable(_ item: QueueItem) -> RowRecord {
        var r = RowRecord(id: item.id, status: .failed, event: .failed)
        r.permanent = true
        r.lastError = "no route for channel '\(item.channelRaw)'"
        return r
    }
}
