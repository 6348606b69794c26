import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A send's decision lives in its delivery row: a record writes a trail event only where no delivery
/// row of the flush tells the story, and `herald explain` reads both as one trail.
@Suite struct DecisionTrailTests {
    static func delivery(_ id: UUID, _ destination: String, outcome: String) -> DeliveryRecord {
        DeliveryRecord(queueId: id, attempt: 1, channel: "webhook", provider: .webhook, destination: destination,
                       deviceTokenId: nil, outcome: outcome, httpStatus: outcome == "delivered" ? 204 : 503,
                       errorCode: nil, messageId: nil, error: nil, latencyMs: 12)
    }

    /// Sent and failed-after-sends rows put their event, reason and details (the attempt first) in the
    /// first of their delivery rows and write no event; a skip, a release with deliveries and a failure
    /// before any send keep their events.
    @Test func onlyRowsNoDeliveryRowTellsWriteTrailEvents() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let recipients = try (0..<5).map { _ in try f.profile() }
            try f.enqueueMany(5, to: recipients, channel: "webhook", at: seedInstant)
            let store = QueueStore(db: try tdb.connect(), passId: "pass-a")
            let ids = try store.claimRows(limit: 5, now: seedInstant, channels: [.webhook], leaseSeconds: 60).map(\.item.id)
            #expect(ids.count == 5)
            let (sent, retrying, skipped, released, invalid) = (ids[0], ids[1], ids[2], ids[3], ids[4])

            var batch = RecordBatch()
            var s = RowRecord(id: sent, status: .sent, event: .sent)
            s.sentAt = seedInstant
            s.reason = "webhook"
            s.details = ["timezone": "UTC", "in_quiet_hours": false]
            var r = RowRecord(id: retrying, status: .failed, event: .failed)
            r.reason = "retry"
            r.details = ["retry_in_s": 60]
            var k = RowRecord(id: skipped, status: .skipped, event: .skipped)
            k.skipReason = .quietHours
            var l = RowRecord(id: released, status: .pending, event: .released)
            l.reason = "lease_ending"
            var v = RowRecord(id: invalid, status: .failed, event: .failed)
            v.permanent = true
            v.reason = "invalid_row"
            batch.rows = [s, r, k, l, v]
            batch.deliveries = [Self.delivery(sent, "https://a", outcome: "delivered"),
                                Self.delivery(sent, "https://b", outcome: "delivered"),
                                Self.delivery(retrying, "https://a", outcome: "retry"),
                                Self.delivery(released, "https://a", outcome: "delivered")]
            #expect(try store.record(batch).count == 5)

            var events: [UUID: String] = [:]
            for row in try db.query("select queue_id, event from notification_events") {
                events[row["queue_id"].uuid ?? UUID()] = row["event"].string
            }
            #expect(events == [skipped: "skipped", released: "released", invalid: "failed"])
            let decisions = try db.query("""
                select queue_id, decision, decision_reason, decision_details->>'attempt' as attempt,
                       decision_details->>'timezone' as tz
                  from notification_deliveries where decision is not null order by decision desc
                """)
            #expect(decisions.map { $0["queue_id"].uuid } == [sent, retrying])
            #expect(decisions.map { $0["decision"].string ?? "" } == ["sent", "failed"])
            #expect(decisions.map { $0["decision_reason"].string ?? "" } == ["webhook", "retry"])
            #expect(decisions.map { $0["attempt"].string ?? "" } == ["1", "1"])
            #expect(decisions.first?["tz"].string == "UTC")
            #expect(try f.count("select count(*)::int from notification_deliveries where queue_id = \(sent)") == 2)

            // explain reads the decision as the event it was.
            let report = try Explain.report(db, id: sent)
            let trail = try #require(report["events"]?.arrayValue)
            #expect(trail.count == 1)
            #expect(trail.first?["event"]?.stringValue == "sent")
            #expect(trail.first?["reason"]?.stringValue == "webhook")
            #expect(trail.first?["pass_id"]?.stringValue == "pass-a")
            #expect(trail.first?["details"]?["attempt"]?.intValue == 1)
            #expect(trail.first?["details"]?["timezone"]?.stringValue == "UTC")
            #expect(Explain.text(report).contains("sent (webhook)  pass pass-a"))
        }
    }

    /// An event written in the record's transaction after the decision (an escalation's) comes after
    /// it in the trail, as it did when both were events.
    @Test func aDecisionComesBeforeTheEventsOfItsOwnRecord() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let id = try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant)
            try db.transaction { db in
                try db.execute("""
                    insert into notification_events (queue_id, event, reason) values (\(id), 'escalated', 'sms')
                    """)
                try db.execute("""
                    insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination,
                                                         outcome, decision, decision_reason)
                    values (\(id), 'p', 1, 'webhook', 'webhook', 'https://a', 'permanent', 'failed', 'http_410')
                    """)
            }
            let events = try #require(try Explain.report(db, id: id)["events"]?.arrayValue)
            #expect(events.map { $0["event"]?.stringValue ?? "" } == ["failed", "escalated"])
        }
    }
}
