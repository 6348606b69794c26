import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `events` phase: what providers posted to the app's webhook endpoint, stored raw in
/// `provider_events` (deploy/supabase/functions/provider-events). Unprocessed rows are taken in id
/// order under SKIP LOCKED, a batch per transaction (no network inside); each is verified and read by
/// ``ProviderEvents/evaluate(_:keys:)``, its reports applied (``TruthStore``), and the row marked
/// processed with its outcome: `applied` (it matched a herald delivery), `unmatched` (verified, but no
/// delivery of herald's has that message id), `ignored` (verified, but no final status in it: opens,
/// clicks, `sent`), `rejected` (signature missing or wrong), `unverified` (the provider's key is not
/// configured), `invalid` (not what the provider sends). Processed rows are deleted after the retention.
struct ProviderEventsTruth {
    let db: PGConnection
    let now: Date
    let logger: Logger
    let keys: ProviderEventKeys
    var batchSize = 200
    var maxBatches = 25
    var retentionDays = 30

    struct Result {
        var processed = 0
        var outcomes: [ProviderEventOutcome: Int] = [:]
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
                        result.outcomes[.invalid, default: 0] += 1
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
        if let n = result.outcomes[.rejected], n > 0 {
            logger.warning("provider events failed signature verification and were not applied (forged, or a wrong key)",
                           metadata: ["events": "\(n)"])
        }
        if let n = result.outcomes[.unverified], n > 0 {
            logger.warning("""
                provider events could not be verified: their provider's key is not configured \
                (SENDGRID_WEBHOOK_PUBLIC_KEY, TWILIO_AUTH_TOKEN, WHATSAPP_APP_SECRET)
                """, metadata: ["events": "\(n)"])
        }
        if let n = result.outcomes[.invalid], n > 0 {
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
                var o: [String: JSONValue] = ["id": .number(Double(ids[index])), "outcome": .string(outcome.rawValue)]
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
                        matched: Set<Int>) -> (ProviderEventOutcome, String?) {
        switch verdict {
        case .rejected(let e): return (.rejected, e)
        case .unverified(let e): return (.unverified, e)
        case .invalid(let e): return (.invalid, e)
        case .reports(let reports):
            if finals == 0 {
                let words = Set(reports.map(\.providerStatus)).sorted().joined(separator: ", ")
                return (.ignored, reports.isEmpty ? "no message status in the payload" : "no final status (\(words))")
            }
            if matched.contains(index) { return (.applied, nil) }
            return (.unmatched, "no delivery of herald's has the message id of \(finals == 1 ? "this status" : "these \(finals) statuses")")
        }
    }
}

/// `events` in a pass: what providers posted to the app's endpoint (they need no network).
struct EventsStep: AfterDeliveryStep {
    var phase: Phase { .events }

    func run(_ pass: PassContext, summary: inout Summary) throws {
        var events = ProviderEventsTruth(db: pass.db, now: pass.clock.now(), logger: pass.logger, keys: pass.config.eventKeys)
        events.retentionDays = pass.options.retentionDays
        let r = try events.run()
        if r.processed > 0 {
            summary.generated[.providerEvents] = r.processed
            for (outcome, n) in r.outcomes { summary.generated[.providerEvents(outcome)] = n }
        }
        if r.updated > 0 { summary.generated[.truthFromEvents] = r.updated }
        if r.optedOut > 0 { summary.generated[.truthChannelsOff] = (summary.generated[.truthChannelsOff] ?? 0) + r.optedOut }
    }
}
