import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// The operator's verbs and pauses, against rows that real passes hold.
@Suite struct OperatorTests {
    /// One row in each state an operator meets: failed for good, retrying, pending, leased live,
    /// leased with an expired lease.
    struct Rows {
        var dead, retrying, pending, live, expired: UUID
    }

    func rows(_ f: Fixtures) throws -> Rows {
        let p = try f.profile()
        let r = Rows(dead: try f.enqueue(to: p, channel: "sms", at: seedInstant),
                     retrying: try f.enqueue(to: p, channel: "sms", at: seedInstant),
                     pending: try f.enqueue(to: p, channel: "sms", at: seedInstant),
                     live: try f.enqueue(to: p, channel: "sms", at: seedInstant),
                     expired: try f.enqueue(to: p, channel: "sms", at: seedInstant))
        try f.db.execute("update notification_queue set status = 'failed', permanent = true, attempts = 5 where id = \(r.dead)")
        try f.db.execute("update notification_queue set status = 'failed', permanent = false, attempts = 2 where id = \(r.retrying)")
        try f.db.execute("""
            update notification_queue set status = 'processing', attempts = 1, locked_by = 'other-pass',
                   locked_until = now() + interval '5 minutes' where id = \(r.live)
            """)
        try f.db.execute("""
            update notification_queue set status = 'processing', attempts = 1, locked_by = 'dead-pass',
                   locked_until = now() - interval '1 minute' where id = \(r.expired)
            """)
        return r
    }

    func ops(_ db: PGConnection) -> Operator { Operator(db: db, actor: "alice@ops", reason: "key rotated") }

    @Test func retryPutsFailedRowsBackToDueWithAttemptsReset() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let r = try rows(f)
            var filter = RowFilter()
            filter.channel = "sms"
            #expect(Set(try ops(db).apply(.retry, to: filter, dryRun: true)) == [r.dead, r.retrying])
            #expect(try f.row(r.dead)["status"].string == "failed", "a dry run changes nothing")
            #expect(Set(try ops(db).apply(.retry, to: filter, dryRun: false)) == [r.dead, r.retrying])
            for id in [r.dead, r.retrying] {
                let row = try f.row(id)
                #expect(row["status"].string == "pending")
                #expect(row["attempts"].int == 0)
                #expect(row["permanent"].bool == false)
            }
            let event = try #require(try db.query("""
                select reason, details->>'by' as by from notification_events where queue_id = \(r.dead) and event = 'retried'
                """).first)
            #expect(event["reason"].string == "key rotated")
            #expect(event["by"].string == "alice@ops")
            #expect(try f.row(r.live)["status"].string == "processing")
        }
    }

    /// A retrying row that already reached one of its destinations keeps one attempt, so the next
    /// claim (attempt 2) looks up where it was delivered and does not send there again.
    @Test func retryKeepsAnAttemptOnARowThatReachedSomeone() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let r = try rows(f)
            try db.execute("""
                insert into notification_deliveries (queue_id, pass_id, attempt, channel, provider, destination, outcome)
                values (\(r.retrying), 'p', 2, 'sms', 'twilio', '+15550100', 'delivered'),
                       (\(r.dead), 'p', 5, 'sms', 'twilio', '+15550100', 'retry')
                """)
            var filter = RowFilter()
            filter.channel = "sms"
            #expect(Set(try ops(db).apply(.retry, to: filter, dryRun: false)) == [r.dead, r.retrying])
            #expect(try f.row(r.retrying)["attempts"].int == 1)
            #expect(try f.row(r.dead)["attempts"].int == 0, "only a delivered destination keeps an attempt")
        }
    }

    @Test func cancelAndRescheduleTouchOnlyWaitingRowsAndNeverALiveLease() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let r = try rows(f)
            var byId = RowFilter()
            byId.ids = [r.pending, r.live, r.dead]
            let later = seedInstant.addingTimeInterval(7200)
            #expect(try ops(db).apply(.reschedule(later), to: byId, dryRun: false) == [r.pending])
            #expect(try f.row(r.pending)["run_after"].date == later)
            var sms = RowFilter()
            sms.channel = "sms"
            #expect(Set(try ops(db).apply(.cancel, to: sms, dryRun: false)) == [r.pending, r.retrying])
            #expect(try f.row(r.pending)["skip_reason"].string == "cancelled")
            #expect(try f.row(r.live)["status"].string == "processing")
            #expect(try f.row(r.live)["locked_by"].string == "other-pass")
            #expect(try f.row(r.dead)["status"].string == "failed")
        }
    }

    @Test func unlockFreesExpiredLeasesOnly() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let r = try rows(f)
            var filter = RowFilter()
            filter.status = "processing"
            #expect(try ops(db).apply(.unlock, to: filter, dryRun: false) == [r.expired])
            #expect(try f.row(r.expired)["status"].string == "pending")
            #expect(try f.row(r.expired)["locked_by"].string == nil)
            #expect(try f.row(r.live)["status"].string == "processing")
            #expect(try f.count("select count(*)::int from notification_events where event = 'unlocked'") == 1)
        }
    }

    /// A claim leaves its rows `pending` under a lease: `--status processing` names them, the live
    /// one is left alone, and unlock frees the expired one as it frees the previous release's.
    @Test func unlockFreesAnExpiredLeaseOnAPendingRow() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            let live = try f.enqueue(to: p, channel: "sms", at: seedInstant)
            let expired = try f.enqueue(to: p, channel: "sms", at: seedInstant)
            try db.execute("""
                update notification_queue set attempts = 1, locked_by = 'other-pass', locked_until = now() + interval '5 minutes'
                 where id = \(live)
                """)
            try db.execute("""
                update notification_queue set attempts = 1, locked_by = 'dead-pass', locked_until = now() - interval '1 minute'
                 where id = \(expired)
                """)
            var filter = RowFilter()
            filter.status = "processing"
            #expect(Set(try ops(db).apply(.unlock, to: filter, dryRun: true)) == [expired])
            var pending = RowFilter()
            pending.status = "pending"
            #expect(try ops(db).apply(.cancel, to: pending, dryRun: true).isEmpty, "a claimed row is not shown as pending")
            #expect(try ops(db).apply(.unlock, to: filter, dryRun: false) == [expired])
            #expect(try f.row(expired)["locked_by"].string == nil)
            #expect(try f.row(live)["locked_by"].string == "other-pass")
            #expect(try f.count("select count(*)::int from notification_events where event = 'unlocked'") == 1)
        }
    }

    /// A real pass holds rows under its lease while their sends wait for answers: every verb leaves
    /// them alone, and the pass records them as it would have. The receiver holds its answers until
    /// the verbs are done, so the rows are in flight while they run, however slow the machine.
    @Test func aRealPassesLiveLeaseIsNeverTouched() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let gate = FakeGate()
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 204, gate: gate) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<4 { recipients.append(try f.profile()) }
            try f.enqueueMany(4, to: recipients, channel: "webhook", at: seedInstant)
            let p = try HeraldBinary.start(["run", "--now", ISO8601.string(seedInstant), "--quiet", "--only", "deliver"],
                                           env: ["DATABASE_URL": tdb.url, "WEBHOOK_URL": server.baseURL + "/hooks",
                                                 "WEBHOOK_SECRET": WebhookDeliveryTests.secret])
            // The four requests are out and wait for their answers: their rows are leased to the pass.
            #expect(gate.waitUntilHeld(4))
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 4)
            var webhook = RowFilter()
            webhook.channel = "webhook"
            for action in [OperatorAction.cancel, .retry, .unlock, .reschedule(seedInstant.addingTimeInterval(3600))] {
                #expect(try ops(db).apply(action, to: webhook, dryRun: false).isEmpty, "\(action) touched a live lease")
            }
            gate.open()
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 4)
            #expect(try f.count("select count(*)::int from notification_events where event in ('cancelled','retried','unlocked','rescheduled')") == 0)
        }
    }

    @Test func theVerbsRunFromTheCommandLine() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let r = try rows(f)
            let out = Pipe()
            let p = try HeraldBinary.start(["retry", r.dead.uuidString, "--reason", "fixed", "--quiet"],
                                           env: ["DATABASE_URL": tdb.url], stdout: out)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
            let answer = try JSONValue.parse(out.fileHandleForReading.readDataToEndOfFile())
            #expect(answer["rows"]?.intValue == 1)
            #expect(try f.row(r.dead)["status"].string == "pending")
            // Without ids or a filter, a verb refuses to act on the whole queue (exit 1).
            let refused = try HeraldBinary.start(["cancel", "--quiet"], env: ["DATABASE_URL": tdb.url], stderr: Pipe())
            refused.waitUntilExit()
            #expect(refused.terminationStatus == 1)
        }
    }

    /// A pause is honoured at the claim by every pass: two passes at once leave the paused channel's
    /// rows pending (counted as paused) and send the rest; after resume, the next pass sends them.
    @Test func aPauseIsHonouredByConcurrentPassesUntilResumed() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            var recipients: [UUID] = []
            for _ in 0..<20 { recipients.append(try f.profile()) }
            try f.enqueueMany(20, to: recipients, channel: "in_app", at: seedInstant)
            try f.enqueueMany(20, to: recipients, channel: "in_app", kind: "prompt", at: seedInstant)
            let p = try HeraldBinary.start(["pause", "--kind", "prompt", "--reason", "bad copy", "--quiet"],
                                           env: ["DATABASE_URL": tdb.url])
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)

            let worker = Worker(url: tdb.url)
            let results = Summaries()
            inParallel(2) { _ in
                let (s, _) = worker.run(now: seedInstant, batchSize: 5, drain: true)
                results.append(s)
            }
            #expect(try f.count("select count(*)::int from notification_queue where kind = 'prompt' and status = 'pending'") == 20)
            #expect(try f.count("select count(*)::int from notification_queue where kind = 'system' and status = 'sent'") == 20)
            #expect(results.all.count == 2 && results.all.allSatisfy { $0.paused["in_app"] == 20 })
            let status = try Status.report(db, now: seedInstant)
            #expect(status["paused"]?.intValue == 20)
            #expect(status["pauses"]?.stringValue == nil && (status["pauses"].map { "\($0)" } ?? "").contains("bad copy"))

            try Operator(db: db, actor: "t", reason: nil).resume(channel: nil, kind: "prompt")
            let (after, _) = worker.run(now: seedInstant, batchSize: 50)
            #expect(after.sent == 20)
            #expect(after.paused.isEmpty)
        }
    }
}

/// Summaries collected from passes on several threads.
final class Summaries: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Summary] = []
    func append(_ s: Summary) { lock.withLock { items.append(s) } }
    var all: [Summary] { lock.withLock { items } }
}
