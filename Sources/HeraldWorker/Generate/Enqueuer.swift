import Foundation
import HeraldCore
import HeraldPostgres

/// A notification a phase wants in the queue.
public struct NewNotification: Sendable {
    public var recipient: UUID
    public var member: UUID?
    public var alertStateId: UUID?
    public var channel: String
    /// Its notification type: one of herald's kinds (`Kind.…rawValue`) or an app's own.
    public var kind: String
    public var severity: Severity?
    public var priority: Priority = .normal
    public var payload: JSONValue
    /// When it is meant to go out: `run_after`, and where `--max-age` counts from.
    public var scheduledAt: Date
    /// Makes the insert idempotent: a second pass (or a concurrent one) adds nothing.
    public var dedupeKey: String
    /// Why it was enqueued, for the trail ("pattern_level_7", "daily_reminder", …).
    public var reason: String
    /// The row this one escalates (a critical notification that could not reach its recipient there).
    public var escalatedFrom: UUID?
    /// The logical notification it belongs to (its copies on other channels share it; the daily cap
    /// counts it once). Nil: the dedupe key.
    public var group: String? = nil
    /// What it is about (`related_entity_type` / `related_entity_id`: 'test_step', 'washout', …).
    public var relatedEntityType: String? = nil
    public var relatedEntityId: String? = nil
    /// The reminder that made it (cancelling the reminder withdraws the row while it waits).
    public var reminderId: UUID? = nil
    /// Recorded as skipped at once with this reason (adaptive frequency), with `skipDetails` in the trail.
    public var skipReason: SkipReason? = nil
    public var skipDetails: JSONValue? = nil

    var json: JSONValue {
        var o: [String: JSONValue] = [
            "recipient_user_id": .string(recipient.lowercased), "channel": .string(channel),
            "kind": .string(kind), "priority": .string(priority.rawValue), "payload": payload,
            "scheduled_at": .string(ISO8601.string(scheduledAt)), "dedupe_key": .string(dedupeKey),
            "reason": .string(reason),
        ]
        if let member { o["member_user_id"] = .string(member.lowercased) }
        if let alertStateId { o["alert_state_id"] = .string(alertStateId.lowercased) }
        if let severity { o["severity"] = .string(severity.rawValue) }
        if let escalatedFrom { o["escalated_from"] = .string(escalatedFrom.lowercased) }
        o["notification_group"] = .string(group ?? dedupeKey)
        if let relatedEntityType { o["related_entity_type"] = .string(relatedEntityType) }
        if let relatedEntityId { o["related_entity_id"] = .string(relatedEntityId) }
        if let reminderId { o["reminder_id"] = .string(reminderId.lowercased) }
        if let skipReason { o["skip_reason"] = .string(skipReason.rawValue) }
        return .object(o)
    }
}

/// Inserts generated notifications in one statement, skipping any whose dedupe key exists, and
/// appends an `enqueued` event for each one inserted.
enum Enqueuer {
    /// Two statements, neither joining one batch-sized set to another (so the cost stays linear): the
    /// insert, then the events of the rows it actually inserted.
    /// Returns the ids of the rows inserted, by dedupe key (a key that existed already is absent).
    /// `on conflict do nothing` names no index: the dedupe index is `(dedupe_key)` on a plain queue and
    /// `(dedupe_key, recipient_user_id)` on a partitioned one (sql/017).
    @discardableResult
    static func insert(_ rows: [NewNotification], db: PGConnection, passId: String?) throws -> [String: UUID] {
        guard !rows.isEmpty else { return [:] }
        let json = JSONValue.array(rows.map(\.json)).pgJSONText
        let inserted = try db.query("""
            insert into notification_queue (recipient_user_id, member_user_id, alert_state_id, channel, kind,
                                            severity, priority, payload, scheduled_at, run_after, dedupe_key,
                                            notification_group, related_entity_type, related_entity_id,
                                            reminder_id, status, skip_reason, escalated_from)
            select recipient_user_id, member_user_id, alert_state_id, channel, kind, severity, priority, payload,
                   scheduled_at, scheduled_at, dedupe_key, notification_group, related_entity_type,
                   related_entity_id, reminder_id, case when skip_reason is null then 'pending' else 'skipped' end,
                   skip_reason, escalated_from
              from jsonb_to_recordset(\(json)::jsonb) as x(
                recipient_user_id uuid, member_user_id uuid, alert_state_id uuid, channel text, kind text,
                severity text, priority text, payload jsonb, scheduled_at timestamptz, dedupe_key text,
                notification_group text, related_entity_type text, related_entity_id text, reminder_id uuid,
                skip_reason text, escalated_from uuid)
            on conflict do nothing
            returning id, dedupe_key
            """)
        var ids: [String: UUID] = [:]
        for row in inserted {
            if let id = row["id"].uuid, let key = row["dedupe_key"].string { ids[key] = id }
        }
        guard !ids.isEmpty else { return [:] }
        let byKey = Dictionary(rows.map { ($0.dedupeKey, $0) }, uniquingKeysWith: { a, _ in a })
        var events: [JSONValue] = []
        for (key, id) in ids {
            let row = byKey[key]
            events.append(["id": .string(id.lowercased), "event": .string(QueueEvent.enqueued.rawValue),
                           "reason": .string(row?.reason ?? "generated"),
                           "details": row?.escalatedFrom.map { ["escalated_from": .string($0.lowercased)] } ?? .null])
            if let row, let from = row.escalatedFrom {
                // The original's trail says where it went.
                events.append(["id": .string(from.lowercased), "event": .string(QueueEvent.escalated.rawValue),
                               "reason": .string(row.channel),
                               "details": ["escalated_to": .string(id.lowercased), "channel": .string(row.channel)]])
            }
        }
        try db.execute("""
            insert into notification_events (queue_id, pass_id, event, reason, details)
            select id, \(passId), event, reason, details
              from jsonb_to_recordset(\(JSONValue.array(events).pgJSONText)::jsonb) as x(id uuid, event text, reason text, details jsonb)
            """)
        let skipped = rows.compactMap { r -> JSONValue? in
            guard let reason = r.skipReason, let id = ids[r.dedupeKey] else { return nil }
            return ["id": .string(id.lowercased), "reason": .string(reason.rawValue),
                    "details": r.skipDetails ?? .null]
        }
        if !skipped.isEmpty {
            try db.execute("""
                insert into notification_events (queue_id, pass_id, event, reason, details)
                select id, \(passId), 'skipped', reason, details
                  from jsonb_to_recordset(\(JSONValue.array(skipped).pgJSONText)::jsonb) as x(id uuid, reason text, details jsonb)
                """)
        }
        return ids
    }
}
