import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// Applies providers' final words to the deliveries they are about (issue 12, "Delivery truth"); shared
/// by the `statuses` and `events` phases. One statement per batch: match, pick the strongest word per
/// delivery, record it where it outranks what is recorded (``TruthReport/rank``), and turn the
/// recipient's channel off where the new word says so — only when the delivery's destination is still
/// the recipient's phone or address, so a late word about an old number cannot switch off a new one.
struct TruthStore {
    let db: PGConnection

    struct Applied {
        /// Indices (of the reports given) that matched a delivery of theirs.
        var matched: Set<Int> = []
        var updated = 0
        var optedOut = 0
    }

    struct Item {
        var index: Int
        var eventId: Int?
        var report: TruthReport
    }

    func apply(_ items: [Item], source: String, now: Date) throws -> Applied {
        let finals = items.filter { $0.report.status != nil }
        guard !finals.isEmpty else { return Applied() }
        let json = JSONValue.array(finals.map { item -> JSONValue in
            let r = item.report
            var o: [String: JSONValue] = [
                "i": .number(Double(item.index)), "provider": .string(r.provider.rawValue),
                "status": .string(r.status?.rawValue ?? ""), "opt_out": .bool(r.optOut),
                "rank": .number(Double(r.rank)), "reason": .string(r.reason),
            ]
            if let v = item.eventId { o["event_id"] = .number(Double(v)) }
            if let v = r.messageId { o["message_id"] = .string(v) }
            if let v = r.queueId { o["queue_id"] = .string(v.uuidString.lowercased()) }
            if let v = r.destination { o["destination"] = .string(v) }
            if let v = r.errorCode { o["code"] = .string(v) }
            if let v = r.error { o["error"] = .string(v) }
            return .object(o)
        }).jsonText
        let row = try db.transaction { db in
            try db.query("""
                with x as (
                  select * from jsonb_to_recordset(\(json)::jsonb) as x(
                    i int, event_id bigint, provider text, message_id text, queue_id uuid, destination text,
                    status text, code text, error text, opt_out boolean, rank int, reason text)
                ), m as (
                  -- By message id (index notification_deliveries_provider_message)…
                  select d.queue_id as delivery_queue_id, d.id as delivery_id, x.* from x
                    join notification_deliveries d
                      on d.provider = x.provider and d.provider_message_id = x.message_id and d.outcome = 'delivered'
                  union all
                  -- …or, for a delivery stored without one, by queue row (the primary key) and address.
                  select d.queue_id as delivery_queue_id, d.id as delivery_id, x.* from x
                    join notification_deliveries d
                      on d.queue_id = x.queue_id and d.provider = x.provider and d.provider_message_id is null
                     and lower(d.destination) = lower(x.destination) and d.outcome = 'delivered'
                ), pick as (
                  select distinct on (delivery_id) * from m order by delivery_id, rank desc, i desc
                ), u as (
                  update notification_deliveries d
                     set final_status = p.status, final_error_code = p.code, final_error = p.error,
                         final_at = \(now), final_source = \(source), final_event_id = p.event_id,
                         final_opt_out = p.opt_out
                    from pick p
                   where d.queue_id = p.delivery_queue_id and d.id = p.delivery_id
                     and p.rank > case when d.final_status is null or d.final_status in ('expired', 'unknown') then 0
                                       when d.final_status = 'delivered' then 1
                                       when d.final_opt_out then 3 else 2 end
                  returning d.queue_id, d.channel, d.destination, p.opt_out, p.reason
                ), off as (
                  select q.recipient_user_id as user_id,
                         bool_or(u.channel = 'sms') as sms, max(u.reason) filter (where u.channel = 'sms') as sms_reason,
                         bool_or(u.channel = 'whatsapp') as whatsapp,
                         max(u.reason) filter (where u.channel = 'whatsapp') as whatsapp_reason,
                         bool_or(u.channel = 'email') as email, max(u.reason) filter (where u.channel = 'email') as email_reason
                    from u
                    join notification_queue q on q.id = u.queue_id
                    join user_profiles pp on pp.user_id = q.recipient_user_id
                   where u.opt_out
                     and ((u.channel in ('sms', 'whatsapp') and pp.phone_e164 = u.destination)
                       or (u.channel = 'email' and lower(pp.email) = lower(u.destination)))
                   group by q.recipient_user_id
                ), o as (
                  update user_profiles p
                     set notify_sms = p.notify_sms and not off.sms,
                         notify_sms_disabled_reason = case when off.sms and p.notify_sms then off.sms_reason
                                                           else p.notify_sms_disabled_reason end,
                         notify_whatsapp = p.notify_whatsapp and not off.whatsapp,
                         notify_whatsapp_disabled_reason = case when off.whatsapp and p.notify_whatsapp then off.whatsapp_reason
                                                                else p.notify_whatsapp_disabled_reason end,
                         notify_email = p.notify_email and not off.email,
                         champion_notify_email = p.champion_notify_email and not off.email,
                         notify_email_disabled_reason = case when off.email and (p.notify_email or p.champion_notify_email)
                                                             then off.email_reason else p.notify_email_disabled_reason end,
                         updated_at = now()
                    from off
                   where p.user_id = off.user_id
                     and ((off.sms and p.notify_sms) or (off.whatsapp and p.notify_whatsapp)
                       or (off.email and (p.notify_email or p.champion_notify_email)))
                  returning p.user_id
                )
                select (select coalesce(jsonb_agg(distinct i), '[]'::jsonb) from m)::text as matched,
                       (select count(*) from u)::int as updated,
                       (select count(*) from o)::int as opted_out
                """).first
        }
        var applied = Applied()
        if let text = row?["matched"].string, case .array(let xs)? = try? JSONValue.parse(text) {
            applied.matched = Set(xs.compactMap { TruthText.int($0) })
        }
        applied.updated = row?["updated"].int ?? 0
        applied.optedOut = row?["opted_out"].int ?? 0
        return applied
    }
}

// MARK: - statuses

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
///     try StatusPollPhase(db: db, now: now, logger: logger, transport: transport, pollers: pollers).run()
struct StatusPollPhase {
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
        result.expired = try db.execute("""
            update notification_deliveries
               set final_status = 'expired', final_error_code = 'poll_window', final_at = \(now), final_source = 'poll',
                   final_error = \("the provider gave no final status within \(Int(giveUpAfter / 3600)) h")
             where (queue_id, id) in (select queue_id, id from notification_deliveries
                           where \(pending) and at < \(now.addingTimeInterval(-giveUpAfter))
                           limit 5000)
            """)
        // A delivery is named by its queue row and its id: the primary key (queue_id, id, at).
        let claimed: [(id: DeliveryKey, provider: Provider, messageId: String)] = try db.transaction { db in
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
        guard !claimed.isEmpty else { return result }

        // An id the provider cannot be asked about (not a Twilio Message SID) is closed as unknown.
        var unknown: [Provider: [DeliveryKey]] = [:]
        var polled: [(id: DeliveryKey, poller: any StatusPolling, messageId: String)] = []
        for d in claimed {
            guard let poller = byProvider[d.provider] else { continue }
            if poller.isPollable(messageId: d.messageId) { polled.append((d.id, poller, d.messageId)) }
            else { unknown[d.provider, default: []].append(d.id) }
        }
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
        let applied = try TruthStore(db: db).apply(items, source: "poll", now: now)
        result.final = applied.updated
        result.optedOut = applied.optedOut
        for (provider, keys) in unknown.sorted(by: { $0.key < $1.key }) {
            guard let poller = byProvider[provider] else { continue }
            result.final += try db.execute("""
                update notification_deliveries
                   set final_status = 'unknown', final_error_code = \(poller.notFoundCode), final_at = \(now),
                       final_source = 'poll', final_error = \("\(provider.rawValue) does not know this message")
                 where (queue_id, id) in (select * from unnest(\(keys.map(\.queueId))::uuid[], \(keys.map(\.id))::bigint[]))
                   and final_status is null
                """)
        }
        if applied.optedOut > 0 {
            logger.notice("turned a channel off for recipients its provider reported as unreachable or unsubscribed",
                          metadata: ["recipients": "\(applied.optedOut)"])
        }
        return result
    }
}

// MARK: - events

/// The `events` phase: what providers posted to the app's webhook endpoint, stored raw in
/// `provider_events` (deploy/supabase/functions/provider-events). Unprocessed rows are taken in id
/// order under SKIP LOCKED, a batch per transaction (no network inside); each is verified and read by
/// ``ProviderEvents/evaluate(_:keys:)``, its reports applied (``TruthStore``), and the row marked
/// processed with its outcome: `applied` (it matched a herald delivery), `unmatched` (verified, but no
/// delivery of herald's has that message id), `ignored` (verified, but no final status in it: opens,
/// clicks, `sent`), `rejected` (signature missing or wrong), `unverified` (the provider's key is not
/// configured), `invalid` (not what the provider sends). Processed rows are deleted after the retention.
struct ProviderEventsPhase {
    let db: PGConnection
    let now: Date
    let logger: Logger
    let keys: ProviderEventKeys
    var batchSize = 200
    var maxBatches = 25
    var retentionDays = 30

    struct Result {
        var processed = 0
        var outcomes: [String: Int] = [:]
        var updated = 0
        var optedOut = 0
        var pruned = 0
    }

    /// The keys from the settings: TWILIO_AUTH_TOKEN, SENDGRID_WEBHOOK_PUBLIC_KEY, WHATSAPP_APP_SECRET
    /// (each also as `*_FILE`). A malformed SendGrid key is a configuration error.
    static func keys(_ settings: Settings) throws -> ProviderEventKeys {
        var keys = ProviderEventKeys()
        keys.twilioAuthToken = try settings.secret("TWILIO_AUTH_TOKEN")?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let text = try settings.secret("SENDGRID_WEBHOOK_PUBLIC_KEY") {
            do { keys.sendgrid = try SendGridEventKey(text) } catch {
                throw ConfigError("\(error)")
            }
        }
        keys.whatsappAppSecret = try settings.secret("WHATSAPP_APP_SECRET")?.trimmingCharacters(in: .whitespacesAndNewlines)
        return keys
    }

    func run() throws -> Result {
        var result = Result()
        for _ in 0..<maxBatches {
            if StopSignal.requested { break }
            var attempted: [Int] = []
            do {
                let n = try batch(&result, limit: batchSize, attempted: &attempted)
                if n < batchSize { break }
            } catch {
                // A row no statement can store must not stop every later pass at the same batch: the
                // batch is taken again one row at a time, and a row that still fails is marked invalid.
                logger.warning("a batch of provider events could not be recorded; retrying them one at a time",
                               metadata: ["events": "\(attempted.count)", "error": .string(TruthText.clip("\(error)"))])
                for _ in 0..<max(1, attempted.count) {
                    var one: [Int] = []
                    do {
                        if try batch(&result, limit: 1, attempted: &one) == 0 { break }
                    } catch {
                        // A passing error (a deadlock with the deliver pass's opt-out write, a timeout)
                        // leaves the event for a later pass: a STOP or a bounce must not be lost to it.
                        guard let id = one.first, !((error as? PGError)?.isPassing ?? false) else { throw error }
                        try db.execute("""
                            update provider_events
                               set processed_at = \(now), outcome = 'invalid',
                                   error = \(TruthText.clip("could not be recorded: \(error)"))
                             where id = \(id) and processed_at is null
                            """)
                        result.outcomes["invalid", default: 0] += 1
                        result.processed += 1
                    }
                }
            }
        }
        result.pruned = try db.execute("""
            delete from provider_events where id in (
              select id from provider_events
               where processed_at < \(now)::timestamptz - make_interval(days => \(retentionDays))
               limit 5000)
            """)
        if let n = result.outcomes["rejected"], n > 0 {
            logger.warning("provider events failed signature verification and were not applied (forged, or a wrong key)",
                           metadata: ["events": "\(n)"])
        }
        if let n = result.outcomes["unverified"], n > 0 {
            logger.warning("""
                provider events could not be verified: their provider's key is not configured \
                (SENDGRID_WEBHOOK_PUBLIC_KEY, TWILIO_AUTH_TOKEN, WHATSAPP_APP_SECRET)
                """, metadata: ["events": "\(n)"])
        }
        if let n = result.outcomes["invalid"], n > 0 {
            logger.warning("provider events were malformed and not applied", metadata: ["events": "\(n)"])
        }
        return result
    }

    /// One batch in one transaction; returns the rows taken. `attempted` receives their ids first, so a
    /// caller knows which rows a failed batch held; `result` changes only when the batch commits.
    func batch(_ total: inout Result, limit: Int, attempted: inout [Int]) throws -> Int {
        var result = Result()
        let n: Int = try db.transaction { db in
            let rows = try db.query("""
                select id, provider, url, headers::text as headers,
                       case when octet_length(body) <= \(ProviderEvents.maxBodyBytes) then body end as body
                  from provider_events
                 where processed_at is null
                 order by id
                 limit \(limit)
                 for update skip locked
                """)
            guard rows.count > 0 else { return 0 }
            attempted = rows.compactMap { $0["id"].int }
            var ids: [Int] = []
            var verdicts: [ProviderEventVerdict] = []
            var items: [TruthStore.Item] = []
            for row in rows {
                guard let id = row["id"].int else { continue }
                let headers = row["headers"].string.map { text -> JSONValue in
                    (try? JSONValue.parse(text)) ?? .string("unreadable")
                }
                let input = ProviderEventInput(provider: row["provider"].string ?? "", url: row["url"].string,
                                               headers: headers, body: row["body"].string)
                let verdict = ProviderEvents.evaluate(input, keys: keys)
                if case .reports(let reports) = verdict {
                    for r in reports where r.status != nil {
                        items.append(TruthStore.Item(index: ids.count, eventId: id, report: r))
                    }
                }
                ids.append(id)
                verdicts.append(verdict)
            }
            let applied = try TruthStore(db: db).apply(items, source: "event", now: now)
            result.updated += applied.updated
            result.optedOut += applied.optedOut

            var marks: [JSONValue] = []
            // Each event's final statuses, counted once (a SendGrid body may hold thousands of events).
            var finalsAt: [Int: Int] = [:]
            for item in items { finalsAt[item.index, default: 0] += 1 }
            for (index, verdict) in verdicts.enumerated() {
                let (outcome, error) = Self.outcome(verdict, index: index, finals: finalsAt[index] ?? 0, matched: applied.matched)
                result.outcomes[outcome, default: 0] += 1
                result.processed += 1
                var o: [String: JSONValue] = ["id": .number(Double(ids[index])), "outcome": .string(outcome)]
                if let error { o["error"] = .string(TruthText.clip(error)) }
                marks.append(.object(o))
            }
            try db.execute("""
                update provider_events e set processed_at = \(now), outcome = x.outcome, error = x.error
                  from jsonb_to_recordset(\(JSONValue.array(marks).jsonText)::jsonb) as x(id bigint, outcome text, error text)
                 where e.id = x.id
                """)
            return rows.count
        }
        total.processed += result.processed
        total.updated += result.updated
        total.optedOut += result.optedOut
        for (k, v) in result.outcomes { total.outcomes[k, default: 0] += v }
        return n
    }

    /// The stored outcome and error of one event.
    static func outcome(_ verdict: ProviderEventVerdict, index: Int, finals: Int,
                        matched: Set<Int>) -> (String, String?) {
        switch verdict {
        case .rejected(let e): return ("rejected", e)
        case .unverified(let e): return ("unverified", e)
        case .invalid(let e): return ("invalid", e)
        case .reports(let reports):
            if finals == 0 {
                let words = Set(reports.map(\.providerStatus)).sorted().joined(separator: ", ")
                return ("ignored", reports.isEmpty ? "no message status in the payload" : "no final status (\(words))")
            }
            if matched.contains(index) { return ("applied", nil) }
            return ("unmatched", "no delivery of herald's has the message id of \(finals == 1 ? "this status" : "these \(finals) statuses")")
        }
    }
}
