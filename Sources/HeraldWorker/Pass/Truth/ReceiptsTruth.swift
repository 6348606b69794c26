import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import Logging

/// The `receipts` phase, once per provider that checks receipts (today Expo): its ticket
/// only says it accepted a message; its receipt, ready some minutes later, says whether Apple or Google
/// took it. A later pass asks for the receipts of pending tickets (up to `receiptBatch` ids a request),
/// records them, and deactivates the tokens reported as not registered. Tickets whose receipt never
/// comes (Expo keeps them about a day) are closed as expired.
///
///     let r = try ReceiptsTruth(db: db, now: now, logger: logger, transport: transport, checker: expo).run()
struct ReceiptsTruth {
    let db: PGConnection
    let now: Date
    let logger: Logger
    let transport: HTTPTransport
    /// The provider whose tickets are checked.
    let checker: any ReceiptChecking
    /// Receipts are asked for once a ticket is this old.
    var minimumAge: TimeInterval = 15 * 60
    /// After this long without a receipt, a ticket is closed.
    var giveUpAfter: TimeInterval = 24 * 3600
    var limit = 10_000

    struct Result {
        var checked = 0
        var ok = 0
        var errors = 0
        var deactivated = 0
    }

    func run() throws -> Result {
        var result = Result()
        var pending: [(id: Int, ticket: String, token: UUID?, created: Date)] = []
        for row in try db.query("""
            select id, ticket_id, device_token_id, created_at from push_receipts
             where status = 'pending' and provider = \(checker.provider.rawValue) and created_at <= \(now.addingTimeInterval(-minimumAge))
             order by created_at limit \(limit)
            """) {
            guard let id = row["id"].int, let ticket = row["ticket_id"].string else { continue }
            pending.append((id, ticket, row["device_token_id"].uuid, row["created_at"].date ?? now))
        }
        guard !pending.isEmpty else { return result }

        let chunks = stride(from: 0, to: pending.count, by: checker.receiptBatch).map {
            Array(pending[$0..<min($0 + checker.receiptBatch, pending.count)])
        }
        var updates: [JSONValue] = []
        var dead: [JSONValue] = []
        transport.perform(chunks.map { checker.receiptsRequest(ids: $0.map(\.ticket)) }) { index, response in
            let chunk = chunks[index]
            switch checker.classifyReceipts(response) {
            case .failed(let outcome):
                logger.warning("could not fetch push receipts; they are asked for again next pass",
                               metadata: ["provider": .string(checker.provider.rawValue), "tickets": "\(chunk.count)", "error": .string(outcome.message ?? outcome.label)])
            case .receipts(let receipts):
                for t in chunk {
                    switch receipts[t.ticket] {
                    case .ok?:
                        updates.append(["id": .number(Double(t.id)), "status": "ok"])
                        result.ok += 1
                    case .error(let code, let message)?:
                        updates.append(["id": .number(Double(t.id)), "status": "error", "code": .string(code),
                                        "message": .string(message)])
                        result.errors += 1
                        if receipts[t.ticket]?.isDeviceNotRegistered == true, let token = t.token {
                            dead.append(["id": .string(token.lowercased), "reason": .string("\(checker.provider.rawValue) \(code): \(message)"),
                                         "sent": .string(ISO8601.string(t.created))])
                        }
                    case nil where now.timeIntervalSince(t.created) > giveUpAfter:
                        updates.append(["id": .number(Double(t.id)), "status": "error", "code": "receipt_expired",
                                        "message": "no receipt within a day"])
                    case nil:
                        break  // not ready yet
                    }
                }
                result.checked += chunk.count
            }
        }
        guard !updates.isEmpty else { return result }
        try db.transaction { db in
            try db.execute("""
                update push_receipts r set status = x.status, error_code = x.code, error_message = x.message, checked_at = now()
                  from jsonb_to_recordset(\(JSONValue.array(updates).pgJSONText)::jsonb) as x(id bigint, status text, code text, message text)
                 where r.id = x.id
                """)
            result.deactivated = try db.execute("""
                update device_tokens t set is_active = false, deactivated_at = now(), deactivated_reason = x.reason, updated_at = now()
                  from jsonb_to_recordset(\(JSONValue.array(dead).pgJSONText)::jsonb) as x(id uuid, reason text, sent timestamptz)
                 where t.id = x.id and t.is_active
                   -- A receipt comes up to a day late: a token registered again since the push stays.
                   and (t.last_used_at is null or t.last_used_at <= x.sent)
                """)
        }
        if result.deactivated > 0 {
            logger.notice("deactivated device tokens the provider reported as not registered", metadata: [
                "provider": .string(checker.provider.rawValue), "tokens": "\(result.deactivated)"])
        }
        return result
    }
}
