import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// The trail outlives the queue: pruning keeps events and deliveries, `herald explain` still answers,
/// and retention drops whole monthly partitions.
@Suite struct AuditTrailTests {
    @Test func theTrailSurvivesAPruneAndExplainStillAnswers() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            let id = try f.enqueue(to: p, payload: #"{"title":"Private","body":"Your sleep dropped 40%"}"#, at: seedInstant)
            _ = Worker(url: tdb.url).run(now: seedInstant)
            #expect(try f.row(id)["status"].string == "sent")
            // A send's decision is its delivery row's: no event row of its own.
            #expect(try f.count("select count(*)::int from notification_events where queue_id = \(id)") == 0)
            #expect(try db.query("select decision from notification_deliveries where queue_id = \(id)").first?[0].string == "sent")
            try db.execute("update notification_queue set updated_at = now() - interval '40 days' where id = \(id)")
            let pruned = try QueueStore(db: db, passId: "test").pruneTerminal(retentionDays: 30, now: Date())
            #expect(pruned == 1)
            #expect(try f.count("select count(*)::int from notification_queue where id = \(id)") == 0)
            #expect(try f.count("select count(*)::int from notification_deliveries where queue_id = \(id)") == 1)
            let events = try db.query("select event from notification_trail where queue_id = \(id) order by at, source, seq").map { $0[0].string ?? "" }
            // The claim writes no event of its own: the decision its delivery row carries holds the attempt.
            #expect(events == ["sent", "pruned"])
            #expect(try db.query("select details->>'attempt' from notification_trail where queue_id = \(id) and event = 'sent'")
                .first?[0].string == "1")

            let report = try Explain.report(db, id: id)
            #expect(report["row"]?["pruned"]?.boolValue == true)
            #expect(report["row"]?["recipient_user_id"]?.stringValue == p.uuidString.lowercased())
            #expect(report["row"]?["status"]?.stringValue == "sent")
            #expect(report["deliveries"].map { "\($0)" }?.contains("inbox") == true)
            // The message itself is not in the trail.
            let trail = try db.query("select coalesce(string_agg(details::text, ' '), '') from notification_trail where queue_id = \(id)")
                .first?[0].string ?? ""
            #expect(!trail.contains("sleep dropped") && !trail.contains("Private"))
            #expect(Explain.text(report).contains("pruned from the queue"))
        }
    }

    @Test func retentionDropsWholeMonthsAndKeepsRecentOnes() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let store = QueueStore(db: db, passId: "test")
            // A month fourteen months ago, with a row in it, as a long-running installation would have.
            let old = try #require(try db.query("select (date_trunc('month', now()) - interval '14 months')::date::text").first?[0].string)
            _ = try db.query("select herald_audit_partitions('notification_events', \(old)::date, \(old)::date, 0)")
            try db.execute("""
                insert into notification_events (queue_id, event, at)
                values (gen_random_uuid(), 'sent', \(old)::date + interval '3 days'), (gen_random_uuid(), 'sent', now())
                """)
            let partitions = { () throws -> [String] in
                try db.query("""
                    select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
                     where i.inhparent = 'notification_events'::regclass order by 1
                    """).compactMap { $0[0].string }
            }
            let oldName = "notification_events_" + old.prefix(7).replacingOccurrences(of: "-", with: "_")
            #expect(try partitions().contains(oldName))
            let dropped = try store.maintainAuditTrail(retentionDays: 400)
            #expect(dropped == 1)
            #expect(try !partitions().contains(oldName))
            #expect(try db.query("select count(*)::int from notification_events").first?[0].int == 1)
            // The months ahead exist, so new rows never land in the default partition.
            let ahead = try db.query("select to_char(now() + interval '3 months', 'YYYY_MM')").first?[0].string ?? ""
            #expect(try partitions().contains("notification_events_" + ahead))
            #expect(try partitions().contains("notification_deliveries_" + ahead) == false)  // listed under its own parent
            #expect(try db.query("""
                select count(*)::int from pg_inherits where inhparent = 'notification_deliveries'::regclass
                   and inhrelid = ('notification_deliveries_' || \(ahead))::regclass
                """).first?[0].int == 1)
        }
    }

    /// The upkeep's functions run only when the catalog says there is something to do: a month ahead
    /// missing, or a month past the retention still there.
    @Test func upkeepRunsOnlyWhenAPartitionIsMissingOrOld() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let store = QueueStore(db: db, passId: "test")
            try store.maintainAuditTrail(retentionDays: 400)
            #expect(try !store.auditTrailNeedsUpkeep(retentionDays: 400))
            // A month ahead gone: due, and the upkeep makes it again.
            let ahead = try #require(try db.query("select to_char(now() + interval '2 months', 'YYYY_MM')").first?[0].string)
            try db.execute("drop table \(identifier: "notification_deliveries_" + ahead)")
            #expect(try store.auditTrailNeedsUpkeep(retentionDays: 400))
            try store.maintainAuditTrail(retentionDays: 400)
            #expect(try !store.auditTrailNeedsUpkeep(retentionDays: 400))
            // A month fourteen months ago: due at a 400-day retention, not at a 500-day one.
            let old = try #require(try db.query("select (date_trunc('month', now()) - interval '14 months')::date::text").first?[0].string)
            _ = try db.query("select herald_audit_partitions('notification_events', \(old)::date, \(old)::date, 0)")
            #expect(try !store.auditTrailNeedsUpkeep(retentionDays: 500))
            #expect(try store.auditTrailNeedsUpkeep(retentionDays: 400))
            #expect(try store.maintainAuditTrail(retentionDays: 400) == 1)
            #expect(try !store.auditTrailNeedsUpkeep(retentionDays: 400))
            // A partition named like a month that is none is not taken for one (and does not fail the read).
            try db.execute("create table notification_events_2020_13 partition of notification_events for values from ('1990-01-01') to ('1990-02-01')")
            #expect(try !store.auditTrailNeedsUpkeep(retentionDays: 400))
        }
    }

    @Test func aPassKeepsThePartitionsAhead() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let (summary, code) = Worker(url: tdb.url, settings: ["HERALD_AUDIT_RETENTION_DAYS": "400"]).run(now: seedInstant)
            #expect(code == .ok, "\(summary.phaseErrors)")
            let (_, bad) = Worker(url: tdb.url, settings: ["HERALD_AUDIT_RETENTION_DAYS": "0"]).run(now: seedInstant)
            #expect(bad == .configuration)
            #expect(try db.query("""
                select count(*)::int from pg_inherits where inhparent = 'notification_events'::regclass
                """).first?[0].int ?? 0 >= 5)
        }
    }
}
