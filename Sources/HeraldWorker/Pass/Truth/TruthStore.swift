import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// Applies providers' final words to the deliveries they are about (docs/delivery-truth.md); shared
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
                ), o as (
                  -- The one rule that switches a channel off (for a pass's records too): only while the
                  -- delivery's destination is still the recipient's phone or address.
                  select herald_switch_off_channels(jsonb_agg(jsonb_build_object(
                           'user_id', q.recipient_user_id, 'channel', u.channel, 'destination', u.destination,
                           'reason', u.reason))) as n
                    from u join notification_queue q on q.id = u.queue_id
                   where u.opt_out
                )
                select (select coalesce(jsonb_agg(distinct i), '[]'::jsonb) from m)::text as matched,
                       (select count(*) from u)::int as updated,
                       coalesce((select n from o), 0)::int as opted_out
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
