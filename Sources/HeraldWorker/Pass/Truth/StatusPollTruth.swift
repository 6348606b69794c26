import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `statuses` phase: the word of providers that answer "what became of message X"
/// (`StatusPolling`: Twilio) on messages they accepted. A delivery of one of `pollers`' providers
/// recorded `delivered` (with a message id) at least `minimumAge` ago and without a final status is
/// polled (Twilio: `GET …/Messages/{sid}.json`), concurrently on the shared transport, at most `limit`
/// a pass, each again after a doubling interval (4 min, 8 min, … up to about 8 h) while it stays
/// `queued`/`sent` — until the provider gives a final status (`delivered`, `undelivered`, `failed`,
/// `canceled`), or `giveUpAfter` passes (then `final_status = 'expired'`). The claim stamps
/// `truth_checked_at` under SKIP LOCKED, so concurrent passes poll different messages.
///
///     let pollers = routes.statusPollers
///     try StatusPollTruth(db: db, now: now, logger: logger, transport: transport, pollers: pollers).run()
struct StatusPollTruth {
    let db: PGConnection
    let now: Date
    let logger: Logger
    let transport: HTTPTransport
    /// The configured providers to poll, one per provider.
    let pollers: [any StatusPolling]
    var minimumAge: TimeInterval = 120
    var giveUpAfter: TimeInterval = 48 * 3600
    var limit = 500

    /// A delivery row by its primary key's leading columns: its queue row and its own id.
    struct DeliveryKey {
        let queueId: UUID
        let id: Int
    }

    struct Result {
        var checked = 0
        var final = 0
        var optedOut = 0
        var expired = 0
        var failedRequests = 0
    }

    /// Deliveries still waiting for a final status from one of `providers` (a bound array: the plan
    /// gets the value, so the partial index `notification_deliveries_truth_pending` still applies).
    static func pending(_ providers: [Provider]) -> SQL {
        """
        provider = any(\(providers.map(\.rawValue))::text[]) and outcome = 'delivered' and final_status is null
          and provider_message_id is not null
        """
    }

    func run() throws -> Result {
        var result = Result()
        var byProvider: [Provider: any StatusPolling] = [:]
        for poller in pollers { byProvider[poller.provider] = poller }
        guard !byProvider.isEmpty else { return result }
        let pending = Self.pending(byProvider.keys.sorted())
        result.expired = try expire(pending)
        let claimed = try claim(pending)
        guard !claimed.isEmpty else { return result }

        // An id the provider cannot be asked about (not a Twilio Message SID) is closed as unknown.
        var unknown: [Provider: [DeliveryKey]] = [:]
        var polled: [Polled] = []
        for d in claimed {
            guard let poller = byProvider[d.provider] else { continue }
            if poller.isPollable(messageId: d.messageId) { polled.append(Polled(id: d.id, poller: poller, messageId: d.messageId)) }
            else { unknown[d.provider, default: []].append(d.id) }
        }
        let items = poll(polled, unknown: &unknown, result: &result)
        let applied = try TruthStore(db: db).apply(items, source: "poll", now: now)
        result.final = applied.updated
        result.optedOut = applied.optedOut
        for (provider, keys) in unknown.sorted(by: { $0.key < $1.key }) {
            guard let poller = byProvider[provider] else { continue }
            result.final += try closeUnknown(keys, provider: provider, code: poller.notFoundCode)
        }
        if applied.optedOut > 0 {
            logger.notice("turned a channel off for recipients its provider reported as unreachable or unsubscribed",
                          metadata: ["recipients": "\(applied.optedOut)"])
        }
        return result
    }

    /// One delivery to ask about.
    struct Polled {
        var id: DeliveryKey
        var poller: any StatusPolling
        var messageId: String
    }

    /// Deliveries past the poll window are closed as `expired`, a bounded number per pass.
    func expire(_ pending: SQL) throws -> Int {
        try db.execute("""
            update notification_deliveries
               set final_status = 'expired', final_error_code = 'poll_window', final_at = \(now), final_source = 'poll',
                   final_error = \("the provider gave no final status within \(Int(giveUpAfter / 3600)) h")
             where (queue_id, id) in (select queue_id, id from notification_deliveries
                           where \(pending) and at < \(now.addingTimeInterval(-giveUpAfter))
                           limit 5000)
            """)
    }

    /// The deliveries this pass asks about, stamped under SKIP LOCKED so concurrent passes poll different
    /// ones; each again after a doubling interval. A delivery is named by its queue row and its id: the
    /// primary key (queue_id, id, at).
    func claim(_ pending: SQL) throws -> [(id: DeliveryKey, provider: Provider, messageId: String)] {
        try db.transaction { db in
            try db.query("""
                with c as materialized (
                  select queue_id, id from notification_deliveries
                   where \(pending)
                     and at <= \(now.addingTimeInterval(-minimumAge)) and at >= \(now.addingTimeInterval(-giveUpAfter))
                     and (truth_checked_at is null
                          or truth_checked_at <= \(now)::timestamptz - make_interval(secs => 120 * power(2, least(truth_checks, 8))))
                   order by at
                   limit \(limit)
                   for update skip locked
                )
                update notification_deliveries d set truth_checked_at = \(now), truth_checks = d.truth_checks + 1
                  from c where d.queue_id = c.queue_id and d.id = c.id
                returning d.queue_id, d.id, d.provider, d.provider_message_id
                """).compactMap { row in
                guard let queueId = row["queue_id"].uuid, let id = row["id"].int,
                      let provider = row["provider"].string.flatMap(Provider.init(rawValue:)),
                      let messageId = row["provider_message_id"].string else { return nil }
                return (DeliveryKey(queueId: queueId, id: id), provider, messageId)
            }
        }
    }

    /// Asks each provider, concurrently on the shared transport, and reads each answer: a final word is
    /// a report to apply; a message the provider does not know is closed as unknown; a refusal of
    /// herald's credentials is logged once per provider; anything else waits for a later pass.
    func poll(_ polled: [Polled], unknown: inout [Provider: [DeliveryKey]], result: inout Result) -> [TruthStore.Item] {
        var items: [TruthStore.Item] = []
        var forbidden: [Provider: String] = [:]
        transport.perform(polled.map { $0.poller.statusRequest(messageId: $0.messageId) },
                          shouldStart: { _ in !StopSignal.requested }) { index, response in
            let d = polled[index]
            result.checked += 1
            switch d.poller.readStatus(response, messageId: d.messageId) {
            case .report(let r):
                items.append(TruthStore.Item(index: index, eventId: nil, report: r))
            case .notFound:
                unknown[d.poller.provider, default: []].append(d.id)
            case .forbidden(let message):
                forbidden[d.poller.provider] = message
                result.failedRequests += 1
            case .later:
                result.failedRequests += 1
            }
        }
        for (provider, message) in forbidden.sorted(by: { $0.key < $1.key }) {
            logger.error("cannot read message statuses", metadata: ["provider": .string(provider.rawValue), "error": .string(message)])
        }
        if forbidden.isEmpty && result.failedRequests > 0 {
            logger.warning("some status requests failed; they are asked again later",
                           metadata: ["requests": "\(result.failedRequests)"])
        }
        return items
    }

    /// Deliveries of messages the provider does not know are closed as `unknown`.
    func closeUnknown(_ keys: [DeliveryKey], provider: Provider, code: String) throws -> Int {
        try db.execute("""
            update notification_deliveries
               set final_status = 'unknown', final_error_code = \(code), final_at = \(now),
                   final_source = 'poll', final_error = \("\(provider.rawValue) does not know this message")
             where (queue_id, id) in (select * from unnest(\(keys.map(\.queueId))::uuid[], \(keys.map(\.id))::bigint[]))
               and final_status is null
            """)
    }
}


/// `statuses` in a pass: the status pollers of the configured providers, when there are any.
struct StatusesStep: AfterDeliveryStep {
    var phase: Phase { .statuses }

    func runs(in pass: PassContext, summary: Summary) -> Bool {
        !pass.options.dryRun && !summary.interrupted && !pass.config.routes.statusPollers.isEmpty
    }

    func run(_ pass: PassContext, summary: inout Summary) throws {
        let r = try StatusPollTruth(db: pass.db, now: pass.clock.now(), logger: pass.logger, transport: pass.transport,
                                    pollers: pass.config.routes.statusPollers).run()
        if r.checked > 0 { summary.generated[.statusesChecked] = r.checked }
        if r.final > 0 { summary.generated[.statusesFinal] = r.final }
        if r.expired > 0 { summary.generated[.statusesExpired] = r.expired }
        if r.optedOut > 0 { summary.generated[.truthChannelsOff] = (summary.generated[.truthChannelsOff] ?? 0) + r.optedOut }
    }
}
