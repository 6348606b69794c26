import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldWorker

/// A provider's answer may hold NULs and invalid UTF-8. PostgreSQL's `text` cannot hold NUL, `jsonb`
/// refuses `\u0000`, and libpq cuts a parameter at its first NUL: the record must still be written, with
/// the text readable.
@Suite struct HostileTextRecordTests {
    /// NUL, invalid UTF-8 (repaired to U+FFFD on decoding), an escape sequence and a bell.
    static let hostileBytes: [UInt8] = Array("bad\u{0}gateway ".utf8) + [0xFF, 0xC0, 0x80] + Array(" \u{1B}[31m\u{7}end".utf8)

    @Test func aDeliveryErrorWithNulAndInvalidUTF8IsRecordedReadable() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let user = try f.profile()
            let token = try f.token(user)
            let id = try f.enqueue(to: user, channel: "push", at: seedInstant)
            let store = QueueStore(db: try tdb.connect(), passId: "p")
            let claimed = try store.claimRows(limit: 1, now: seedInstant, channels: [.push], leaseSeconds: 60)
            #expect(claimed.map(\.item.id) == [id])

            // As a provider would produce it (through a classifier), and raw, as the worst case.
            let sendgrid = try SendGridAdapter(apiKey: "SG.key", from: "herald@example.com", baseURL: "https://127.0.0.1:9")
            let classified = sendgrid.classify(.success(HTTPResponse(status: 500, body: Self.hostileBytes)), now: seedInstant)
            let viaClassifier = try #require(classified.outcome.message)
            #expect(!viaClassifier.unicodeScalars.contains("\u{0}"))
            let raw = String(decoding: Self.hostileBytes, as: UTF8.self)
            #expect(raw.unicodeScalars.contains("\u{0}"))

            var batch = RecordBatch()
            var row = RowRecord(id: id, status: .failed, event: .failed)
            row.permanent = true
            row.lastError = raw
            row.details = ["error": .string(raw), "via_classifier": .string(viaClassifier)]
            batch.rows.append(row)
            batch.deliveries.append(DeliveryRecord(
                queueId: id, attempt: 1, channel: "push", provider: .apns, destination: "tok", deviceTokenId: token,
                outcome: "destination_invalid", httpStatus: Int.max, errorCode: "code\u{0}", messageId: "id\u{0}",
                error: raw, latencyMs: Int.max))
            batch.deactivations.append(TokenDeactivation(deviceTokenId: token, reason: raw, registeredBefore: Date()))
            batch.tickets.append(ReceiptTicket(queueId: id, provider: .expo, ticketId: "ticket\u{0}1", deviceTokenId: token))
            #expect(try store.record(batch) == [id])

            let stored = try #require(try f.row(id)["last_error"].string)
            #expect(stored == raw.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}"))
            #expect(stored.hasPrefix("bad\u{FFFD}gateway \u{FFFD}"))
            #expect(stored.hasSuffix("end"), "the text after the NUL is kept, not cut by libpq")
            let delivery = try #require(try db.query("""
                select error, provider_error_code, provider_message_id, http_status, latency_ms
                  from notification_deliveries where queue_id = \(id)
                """).first)
            #expect(delivery["error"].string == stored)
            #expect(delivery["provider_error_code"].string == "code\u{FFFD}")
            #expect(delivery["http_status"].isNull && delivery["latency_ms"].isNull, "values outside int4 are left out")
            let event = try #require(try db.query("select details->>'error' as e, details->>'via_classifier' as c from notification_trail where queue_id = \(id) and event = 'failed'").first)
            #expect(event["e"].string == stored)
            #expect(event["c"].string == viaClassifier)
            #expect(try db.query("select deactivated_reason from device_tokens where id = \(token)").first?["deactivated_reason"].string == stored)
            #expect(try f.count("select count(*)::int from push_receipts where ticket_id = \("ticket\u{FFFD}1")") == 1)
        }
    }

    @Test func aStringParameterWithANulIsBoundWhole() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let text = "before\u{0}after"
            #expect(try db.query("select \(text)::text as t").first?["t"].string == "before\u{FFFD}after")
            #expect(try db.query("select (\(JSONValue.array([.string(text)]).pgJSONText)::jsonb)->>0 as t").first?["t"].string
                == "before\u{FFFD}after")
        }
    }

    /// An alert row whose level is no small whole number used to trap the whole pass (`Int(1e300)`);
    /// it now fails alone, readable, and the pass goes on.
    @Test func anAlertWithAnAbsurdLevelFailsAlone() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let user = try f.profile()
            let episode = try f.alert(member: user, level: 7, severity: "attention")
            var bad: [UUID] = []
            for level in ["1e300", "-1e300", "7.5", "\"seven\"", "123456789012345678901234567890"] {
                bad.append(try f.enqueue(to: user, kind: "pattern_alert", alert: episode, payload: "{\"level\":\(level)}", at: seedInstant))
            }
            let fine = try f.enqueue(to: user, kind: "reminder", at: seedInstant)
            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant)
            #expect(code == .ok)
            #expect(try f.row(fine)["status"].string == "sent")
            for id in bad {
                let row = try f.row(id)
                #expect(row["status"].string == "failed")
                #expect(row["permanent"].bool == true)
                #expect((row["last_error"].string ?? "").contains("level"), "\(row["last_error"].string ?? "nil")")
            }
            #expect(summary.failed == bad.count)
        }
    }
}
