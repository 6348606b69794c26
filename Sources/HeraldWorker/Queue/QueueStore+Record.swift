import Foundation
import HeraldCore
import HeraldPostgres

extension QueueStore {
    /// Writes one flush in one statement, in one transaction: the rows' outcomes, fenced (`u`), then for
    /// the rows actually recorded each table the flush writes, one named part each (`RecordParts`). No
    /// part joins one batch-sized set to another but through the recorded ids, so the cost stays linear
    /// in the batch. Escalations of the recorded rows follow in the same transaction. Returns the ids
    /// recorded.
    @discardableResult
    public func record(_ batch: RecordBatch) throws -> Set<UUID> {
        guard !batch.isEmpty else { return [] }
        let parts = RecordParts(batch: batch, queue: queue, passId: passId)
        return try db.transaction { db in
            let recorded = Set(try db.query(parts.statement).compactMap { $0["id"].uuid })
            guard !recorded.isEmpty else { return [] }
            // Escalations of the rows recorded here: their dedupe keys make a repeat a no-op.
            let escalations = batch.escalations.filter { $0.escalatedFrom.map(recorded.contains) ?? false }
            if !escalations.isEmpty { try Enqueuer.insert(escalations, db: db, passId: passId) }
            return recorded
        }
    }
}

/// The parts of a flush's one statement, one per table it writes, each with its reason.
///
///     with r as materialized (…), u as (…), ev as (…), d as (…), … select id from u
struct RecordParts {
    let batch: RecordBatch
    let queue: SQL
    let passId: String
    /// The rows whose delivery rows carry their decision (`RecordBatch.toldByDeliveries`).
    let told: Set<UUID>

    init(batch: RecordBatch, queue: SQL, passId: String) {
        self.batch = batch
        self.queue = queue
        self.passId = passId
        told = batch.toldByDeliveries
    }

    /// The whole statement: the rows, their fenced update, then the part of each table the flush has
    /// something for. A part with nothing to write is left out, not sent empty: the server plans and
    /// starts every part it is given, and called the opt-outs' function with none (0.35 ms). A flush
    /// of 1,000 sends, by the statement log: bind 1.35 against 1.76 ms, execution 14.2 against 16.0 ms.
    var statement: SQL {
        var sql: SQL = "with r as materialized (" + rows + "), u as (" + queueRows + ")"
        let parts: [(name: String, has: Bool, part: () -> SQL)] = [
            ("ev", batch.rows.contains { !told.contains($0.id) }, { trail }),
            ("d", !batch.deliveries.isEmpty, { deliveries }),
            ("i", !batch.inbox.isEmpty, { entries }),
            ("t", !batch.deactivations.isEmpty, { deadTokens }),
            ("o", !batch.optOuts.isEmpty, { optOuts }),
            ("k", !batch.tickets.isEmpty, { receipts }),
            ("f", !batch.forecastsSent.isEmpty, { forecasts }),
        ]
        for (name, has, part) in parts where has {
            sql += SQL(unescaped: ", \(name) as (") + part() + ")"
        }
        // `o` only selects (through a function that writes): a select part runs only when the statement
        // reads it, so the last line does, once.
        return sql + (batch.optOuts.isEmpty ? " select u.id from u" : " select u.id, (select count(*) from o) as channels_off from u")
    }

    /// JSON of records for `jsonb_to_recordset`: delivery errors quote providers, whose answers may hold
    /// NULs (jsonb refuses \u0000).
    func json<T>(_ xs: [T], _ f: (T) -> JSONValue) -> String { JSONValue.array(xs.map(f)).pgJSONTextAnyOrder }

    /// `r`: the rows' outcomes, as typed arrays (less to read than a jsonb document of the same rows).
    var rows: SQL {
        let r = RowColumns(batch.rows, told: told)
        return """
            select *, \(passId)::text as pass from unnest(\(r.ids)::uuid[], \(r.statuses)::text[], \(r.permanent)::boolean[],
                                 \(r.lastErrors)::text[], \(r.skipReasons)::text[], \(r.runAfter)::timestamptz[],
                                 \(r.sentAt)::timestamptz[], \(r.providerMessageIds)::text[],
                                 \(r.attemptsDeltas)::int[], \(r.events)::text[], \(r.reasons)::text[],
                                 \(r.details)::text[], \(r.told)::boolean[])
              as r(id, status, permanent, last_error, skip_reason, run_after, sent_at, provider_message_id,
                   attempts_delta, event, reason, details, told)
            """
    }

    /// `u`, notification_queue: each row's outcome, only where this pass still holds its lease.
    ///
    /// The rows are found by their ids (`id = any(…)`: the batch's size is known to the planner), and the
    /// fence compares the lease with `r.pass`, a column, not a constant: so the planner cannot read the
    /// lease's statistics (at the last analyze, no row held by this pass) as "one row", choose to scan
    /// the queue and join it to `r` row by row (1,000 × 1,000 comparisons a flush: 185 ms), and hashes
    /// the two batch-sized sides instead, however many rows the queue holds.
    var queueRows: SQL {
        """
        update \(queue) q
           set status = r.status, permanent = r.permanent, last_error = r.last_error,
               skip_reason = r.skip_reason, run_after = coalesce(r.run_after, q.run_after),
               sent_at = coalesce(r.sent_at, q.sent_at),
               provider_message_id = coalesce(r.provider_message_id, q.provider_message_id),
               attempts = greatest(q.attempts + r.attempts_delta, 0),
               locked_until = null, locked_by = null, updated_at = now()
          from r
         where q.id = any(\(batch.rows.map(\.id))::uuid[]) and q.id = r.id and \(Lease.heldBy(column: "r.pass"))
        returning q.id, q.attempts - r.attempts_delta as attempt, r.status, r.event, r.reason, r.details, r.told
        """
    }

    /// A row's decision as the trail keeps it, as JSON text: the attempt (the claim writes none of its
    /// own) first in the details' text, so one parse makes the jsonb (a key of the details' own named
    /// attempt comes later and wins, as with jsonb's ||). Of the recorded rows, `u`.
    static let decisionText: SQL = """
        case when u.details is null then '{"attempt":' || u.attempt || '}'
             else '{"attempt":' || u.attempt || ',' || substr(u.details, 2) end
        """

    /// notification_events, the trail: what became of each row and why, where no delivery row of this
    /// flush tells it (a skip, a deferral, a release, a failure before any send); a send's decision
    /// goes in its first delivery row instead.
    var trail: SQL {
        """
        insert into notification_events (queue_id, pass_id, event, reason, details)
        select u.id, \(passId), u.event, u.reason, (\(RecordParts.decisionText))::jsonb
          from u where not u.told
        """
    }

    /// notification_deliveries: each attempt to each destination, with the provider's answer; the
    /// first of a sent (or failed after sends) row's carries its decision, as its trail event did.
    var deliveries: SQL {
        let d = DeliveryColumns(batch.deliveries, told: told)
        return """
            insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination,
              device_token_id, outcome, http_status, provider_error_code, provider_message_id, error, latency_ms,
              decision, decision_reason, decision_details)
            select x.queue_id, \(passId), x.attempt, x.channel, x.provider, x.destination, x.device_token_id,
                   x.outcome, x.http_status, x.provider_error_code, x.provider_message_id, x.error, x.latency_ms,
                   case when x.carries then u.event end, case when x.carries then u.reason end,
                   case when x.carries then (\(RecordParts.decisionText))::json end
              from unnest(\(d.queueIds)::uuid[], \(d.attempts)::int[], \(d.channels)::text[],
                          \(d.providers)::text[], \(d.destinations)::text[],
                          \(d.deviceTokenIds)::uuid[], \(d.outcomes)::text[],
                          \(d.httpStatuses)::int[], \(d.errorCodes)::text[],
                          \(d.messageIds)::text[], \(d.errors)::text[], \(d.latencies)::int[],
                          \(d.carries)::boolean[])
                as x(queue_id, attempt, channel, provider, destination, device_token_id, outcome, http_status,
                     provider_error_code, provider_message_id, error, latency_ms, carries)
              join u on u.id = x.queue_id
            """
    }

    /// inbox: the user's entry for each notification is written when it is enqueued; a kind rendered
    /// from templates has no text there until the record that sends it fills it, once, in the
    /// recipient's language and in both languages. An entry that has its text is left as it is. Its
    /// texts are cut at 4,000 characters and a link over 2,048 left out, as the entry's CHECKs hold them
    /// (sql/047_bounded_app_text.sql): one entry cannot refuse the record of its batch.
    var entries: SQL {
        """
        update inbox i
           set title = left(x.title, 4000), body = left(x.body, 4000), title_en = left(x.title_en, 4000),
               title_ar = left(x.title_ar, 4000), body_en = left(x.body_en, 4000), body_ar = left(x.body_ar, 4000),
               deep_link = coalesce(i.deep_link, case when char_length(x.deep_link) <= 2048 then x.deep_link end),
               image_url = coalesce(i.image_url, case when char_length(x.image_url) <= 2048 then x.image_url end),
               data = case when i.data = '{}'::jsonb then coalesce(x.data, i.data) else i.data end
          from jsonb_to_recordset(\(json(batch.inbox) { $0.json })::jsonb) as x(
            queue_id uuid, user_id uuid, key text, title text, body text, deep_link text, data jsonb,
            title_en text, title_ar text, body_en text, body_ar text, image_url text)
         where i.user_id = x.user_id and i.notification_key = x.key and i.title is null
           and x.queue_id in (select id from u where u.status = 'sent')
        """
    }

    /// device_tokens: dead destinations are facts about the destination, whoever recorded the row (but
    /// only written by a flush that recorded something); a token registered again since is kept.
    var deadTokens: SQL {
        """
        update device_tokens dt
           set is_active = false, deactivated_at = now(), deactivated_reason = x.reason, updated_at = now()
          from jsonb_to_recordset(\(json(batch.deactivations) { $0.json })::jsonb) as x(id uuid, reason text, before timestamptz)
         where dt.id = x.id and dt.is_active and exists (select 1 from u)
           and (dt.last_used_at is null or dt.last_used_at <= x.before)
        """
    }

    /// user_profiles: channels a recipient's address refuses are switched off by the one rule the truth
    /// phases use too (`herald_switch_off_channels`), only by a flush that recorded something.
    var optOuts: SQL {
        """
        select herald_switch_off_channels(\(json(batch.optOuts) { $0.json })::jsonb) where exists (select 1 from u)
        """
    }

    /// push_receipts: tickets whose receipts a later pass checks.
    var receipts: SQL {
        """
        insert into push_receipts (queue_id, provider, ticket_id, device_token_id, created_at)
        select x.queue_id, x.provider, x.ticket_id, x.device_token_id, coalesce(x.created_at, now())
          from jsonb_to_recordset(\(json(batch.tickets) { $0.json })::jsonb) as x(
            queue_id uuid, provider text, ticket_id text, device_token_id uuid, created_at timestamptz)
         where x.queue_id in (select id from u)
        on conflict (ticket_id) do nothing
        """
    }

    /// daily_forecasts: a forecast whose notification went out is marked sent, once.
    var forecasts: SQL {
        """
        update daily_forecasts df
           set notification_sent = true, notification_sent_at = now(), updated_at = now()
          from jsonb_to_recordset(\(json(batch.forecastsSent) { $0.json })::jsonb) as x(
            queue_id uuid, user_id uuid, date date)
         where df.user_id = x.user_id and df.forecast_date = x.date and not df.notification_sent
           and x.queue_id in (select id from u)
        """
    }
}
