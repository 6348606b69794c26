import Foundation
import HeraldChannels
import HeraldCore
import Logging

/// The planning step: each claimed row planned (`DeliveryPlanner`, pure, a row at a time: a large batch
/// never holds every row's plan at once), rendered, its log and inbox destinations delivered at once,
/// its provider sends made jobs. It owns what planning reads across batches: the notification types
/// (read when the phase starts and at each round of a follower) and the renderer.
final class BatchPlanner {
    let store: QueueStore
    let routes: ChannelRoutes
    let options: PassOptions
    let clock: PassClock
    let logger: Logger
    let outbox: Outbox
    private(set) var renderer: Renderer
    /// The notification types (`notification_types`) the decisions and the rendering use.
    var types = NotificationTypes.builtIn {
        didSet { renderer.options.types = types }
    }

    init(store: QueueStore, routes: ChannelRoutes, options: PassOptions, clock: PassClock, logger: Logger,
         outbox: Outbox) {
        self.store = store
        self.routes = routes
        self.options = options
        self.clock = clock
        self.logger = logger
        self.outbox = outbox
        renderer = Renderer(options: options.render)
    }

    /// Plans every row of the batch and returns the provider sends. Rows whose fate is known before any
    /// network I/O are handed to `flush` first, a chunk at a time; a row whose destinations all answered
    /// at once (log, inbox) is settled (`settle`) with them.
    func plan(_ batch: [Claimed], settle: (InFlight) -> RecordBatch,
              flush: (inout RecordBatch) throws -> Void) throws -> BatchWork {
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
                if let escalation {
                    immediate.escalations.append(NewNotification(escalating: row.item, escalation, at: clock.now()))
                }
                if case .fail(let message) = row.result.decision {
                    logger.warning("row failed permanently", metadata: [
                        "queue_id": .string(row.item.id.lowercased), "error": .string(message)])
                }
            case .send(let todo, let previouslyDelivered):
                if let flight = route(row, todo: todo, previouslyDelivered: previouslyDelivered, jobs: &work.jobs,
                                      index: work.flights.nextIndex) {
                    if flight.done { immediate.append(settle(flight)) } else { work.flights.add(flight) }
                } else {
                    immediate.rows.append(Self.unroutable(row.item))
                }
            }
            if immediate.rows.count >= options.recordChunk * 5 { try flush(&immediate) }
        }
        try flush(&immediate)
        return work
    }

    /// `--dry-run`: what each due row would become; nothing is sent.
    func dryRun(_ batch: [Claimed]) throws -> [(item: QueueItem, result: DecisionResult, destinations: Int)] {
        var planner = try planner(for: batch)
        return batch.map { claimed in
            let row = planner.plan(PlanInput(item: claimed.item, maxAttempts: claimed.maxAttempts))
            return (row.item, row.result, row.destinations.count)
        }
    }

    /// The batch's planner: its context loaded in one set of queries, the routes, the time.
    func planner(for batch: [Claimed]) throws -> DeliveryPlanner {
        let now = clock.now()
        return planner(context: try store.loadContext(for: batch.map(\.item), now: now, anyQuietOnceRead: types.anyQuietOnceRead), now: now)
    }

    /// The batch's planner, and the recipients whose context could not be loaded (`loadContexts`):
    /// their rows are failed, their batch-mates' planned.
    func plannerAndUnloadable(for batch: [Claimed]) throws -> (DeliveryPlanner, [UUID: String]) {
        let now = clock.now()
        let loaded = try store.loadContexts(for: batch.map(\.item), now: now, anyQuietOnceRead: types.anyQuietOnceRead)
        for recipient in loaded.unloadable.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
            logger.warning("a recipient's preferences and devices could not be read; their rows of the batch fail, the others go on",
                           metadata: ["recipient_user_id": .string(recipient.lowercased),
                                      "rows": "\(batch.filter { $0.item.recipientUserId == recipient }.count)"])
        }
        return (planner(context: loaded.context, now: now), loaded.unloadable)
    }

    private func planner(context: DeliveryContext, now: Date) -> DeliveryPlanner {
        DeliveryPlanner(
            context: context, routes: routes.facts,
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
        var r = RowRecord(item: item, status: .failed, event: .failed)
        r.permanent = true
        r.lastError = "no route for channel '\(item.channelRaw)'"
        return r
    }
}

extension NewNotification {
    /// The row an escalation enqueues: the same notification on the next channel, linked to the
    /// original. Its preferences, quiet hours and limits apply to it as to any row; its dedupe key makes
    /// it once per channel.
    init(escalating item: QueueItem, _ step: EscalationStep, at now: Date) {
        self.init(
            recipient: item.recipientUserId, member: item.memberUserId, alertStateId: item.alertStateId,
            channel: step.channel.rawValue, kind: item.kindRaw, severity: item.severity, priority: item.priority,
            payload: .object(item.payload ?? [:]), scheduledAt: now, dedupeKey: step.dedupeKey, reason: step.reason)
        escalatedFrom = item.id
        group = item.notificationGroup  // still one notification for the rate limits
    }
}

extension ChannelRoutes {
    /// What the plan needs to know of each channel's route: log, inbox, or its providers in failover
    /// order and the providers' own address (the webhook's URL).
    var facts: [Channel: RouteFacts] {
        routes.mapValues { route in
            switch route {
            case .log: return RouteFacts(mode: .log)
            case .inbox: return RouteFacts(mode: .inbox)
            case .providers(let adapters, let order):
                let ordered = order.filter { adapters[$0] != nil } + adapters.keys.sorted().filter { !order.contains($0) }
                return RouteFacts(mode: .providers, providers: ordered,
                                  providerAddress: ordered.lazy.compactMap { adapters[$0]?.providerAddress }.first)
            }
        }
    }
}
