import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// The claim, lease and record protocol, statement by statement.
@Suite struct QueueStoreTests {
    @Test func aPassThatOverranItsLeaseCannotOverwriteTheNewOwner() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let a = QueueStore(db: try tdb.connect(), passId: "pass-a")
            let later = ClockShift()
            let b = QueueStore(db: try tdb.connect(), passId: "pass-b", clock: PassClock(now: seedInstant, shift: later))

            let claimedA = try a.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 1)
            #expect(claimedA.map(\.item.id) == [id])
            // While A holds the lease, B can neither claim nor recover the row.
            #expect(try b.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60).isEmpty)
            #expect(try b.recoverExpiredLeases() == 0)
            later.advance(by: 2)
            #expect(try b.recoverExpiredLeases() == 1)
            let claimedB = try b.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60)
            #expect(claimedB.first?.item.attempts == 2)

            // A wakes up and tries to record: fenced out.
            var late = RecordBatch()
            late.rows.append(RowRecord(id: id, status: .skipped, event: .skipped))
            #expect(try a.record(late).isEmpty)
            var mine = RecordBatch()
            var sent = RowRecord(id: id, status: .sent, event: .sent)
            sent.sentAt = seedInstant
            mine.rows.append(sent)
            #expect(try b.record(mine) == [id])
            let row = try f.row(id)
            #expect(row["status"].string == "sent")
            #expect(row["locked_by"].isNull)
        }
    }

    /// A record's escalations go in only for the rows its fenced update recorded: the pass that
    /// overran its lease enqueues none for a row taken over, the pass that holds it does.
    @Test func onlyARecordedRowEnqueuesItsEscalation() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let recipient = try f.profile()
            let id = try f.enqueue(to: recipient, at: seedInstant)
            let a = QueueStore(db: try tdb.connect(), passId: "pass-a")
            let later = ClockShift()
            let b = QueueStore(db: try tdb.connect(), passId: "pass-b", clock: PassClock(now: seedInstant, shift: later))
            _ = try a.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 1)
            later.advance(by: 2)
            #expect(try b.recoverExpiredLeases() == 1)
            _ = try b.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60)

            func failedWithEscalation(_ key: String) -> RecordBatch {
                var batch = RecordBatch()
                batch.rows.append(RowRecord(id: id, status: .failed, event: .failed))
                batch.escalations.append(NewNotification(
                    recipient: recipient, channel: "sms", kind: "system", severity: .critical,
                    payload: .object([:]), scheduledAt: seedInstant, dedupeKey: key, reason: "escalated_test",
                    escalatedFrom: id))
                return batch
            }
            let escalated: SQL = "select count(*)::int from notification_queue where escalated_from = \(id)"
            #expect(try a.record(failedWithEscalation("late")).isEmpty)
            #expect(try f.count(escalated) == 0, "fenced out: no escalation")
            #expect(try b.record(failedWithEscalation("owner")) == [id])
            #expect(try f.count(escalated) == 1)
        }
    }

    /// A pause an operator sets while a claim holds its candidates locked is honoured by that claim:
    /// the claim's update checks the pauses again, with a snapshot taken after its candidates were
    /// found. The paused kind's rows stay pending and untouched; the rest are claimed.
    @Test func aPauseSetDuringAClaimIsHonouredByIt() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            var recipients: [UUID] = []
            for _ in 0..<6 { recipients.append(try f.profile()) }
            try f.enqueueMany(6, to: recipients, channel: "in_app", at: seedInstant)
            try f.enqueueMany(6, to: recipients, channel: "in_app", kind: "prompt", at: seedInstant)
            var store = QueueStore(db: try tdb.connect(), passId: "pass-a")
            var paused = false
            store.afterCandidates = {
                // Another session, committed before the claim's update runs.
                paused = try Operator(db: db, actor: "t", reason: "bad copy").pause(channel: nil, kind: "prompt")
            }
            let (rows, _) = try store.claim(limit: 50, now: seedInstant, channels: [.inApp], leaseSeconds: 60)
            #expect(paused)
            #expect(rows.count == 6 && rows.allSatisfy { $0.item.kind == .system })
            #expect(try f.count("""
                select count(*)::int from notification_queue
                 where kind = 'prompt' and status = 'pending' and attempts = 0 and locked_by is null
                """) == 6)
            #expect(try f.count("select count(*)::int from notification_queue where kind = 'system' and status = 'pending' and locked_by = 'pass-a'") == 6)
        }
    }

    /// A flush rolled back because a table it writes was held past `lock_timeout` (by a migration, say)
    /// is written again once the lock is gone: its rows were sent, and unrecorded they would go out
    /// again when their lease expires. Without the new tries, the same lock fails the flush.
    @Test func aFlushThatMeetsALockIsWrittenAgain() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            var ids: [UUID] = []
            for _ in 0..<3 { ids.append(try f.enqueue(to: try f.profile(), at: seedInstant)) }
            let conn = try tdb.connect()
            try conn.setTimeouts(statement: nil, lock: 100, idleInTransaction: nil)
            let store = QueueStore(db: conn, passId: "p")
            #expect(try store.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60).count == 3)
            var batch = RecordBatch()
            for id in ids {
                var r = RowRecord(id: id, status: .sent, event: .sent)
                r.sentAt = seedInstant
                batch.rows.append(r)
            }
            // Another session holds the trail's table for 0.6 s, as a migration rebuilding one of its
            // indexes would, while a writer (on a thread of its own) records the batch.
            func whileHeld(_ writer: RecordWriter) throws -> Result<[(RecordBatch, Set<UUID>)], any Error> {
                let holder = try tdb.connect()
                defer { holder.close() }
                try holder.execute("begin")
                try holder.execute("lock table notification_events in access exclusive mode")
                writer.submit(batch)
                Thread.sleep(forTimeInterval: 0.6)
                try holder.execute("commit")
                return Result { try writer.finish() }
            }
            let once = try whileHeld(RecordWriter(store: store, retryDelays: []))
            #expect(throws: PGError.self) { _ = try once.get() }
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 3)
            let again = try whileHeld(RecordWriter(store: store, retryDelays: [0.2, 0.2, 0.2, 0.2, 0.2, 0.2]))
            #expect(Set(try again.get().flatMap { $0.1 }) == Set(ids))
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 3)
            #expect(try f.count("select count(*)::int from notification_trail where event = 'sent'") == 3)
        }
    }

    /// The record's trail event: the attempt first, then the decision's details as they were, hostile
    /// text included; details that are empty or not an object leave the attempt alone; a details key
    /// named `attempt` wins, as jsonb's `||` would have it.
    @Test func theRecordedEventCarriesTheAttemptAndTheDetails() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let recipient = try f.profile()
            let ids = try (0..<5).map { _ in try f.enqueue(to: recipient, at: seedInstant) }
            let store = QueueStore(db: db, passId: "p")
            #expect(try store.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 60).count == 5)
            let hostile = "nul\u{0} \"quote\" back\\slash {brace} 日本 🎉"
            let details: [JSONValue] = [
                ["rule": "send", "text": .string(hostile), "nested": ["n": 1.5, "list": [true, .null]]],
                .null, [:], "a string", ["attempt": 9, "rule": "retry"],
            ]
            var batch = RecordBatch()
            for (id, d) in zip(ids, details) {
                var r = RowRecord(id: id, status: .skipped, event: .skipped)
                r.details = d
                batch.rows.append(r)
            }
            #expect(try store.record(batch).count == 5)
            func event(_ id: UUID) throws -> JSONValue {
                let text = try #require(try db.query("select details::text as d from notification_trail where queue_id = \(id)")
                    .first?["d"].string)
                return try JSONValue.parse(text)
            }
            #expect(try event(ids[0]) == ["attempt": 1, "rule": "send", "text": .string(hostile.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")),
                                          "nested": ["n": 1.5, "list": [true, .null]]])
            #expect(try event(ids[1]) == ["attempt": 1])
            #expect(try event(ids[2]) == ["attempt": 1])
            #expect(try event(ids[3]) == ["attempt": 1])
            #expect(try event(ids[4]) == ["attempt": 9, "rule": "retry"])
        }
    }

    @Test func claimTakesNoMoreThanTheLimitInPriorityOrder() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let p = try f.profile()
            let low = try f.enqueue(to: p, at: seedInstant.addingTimeInterval(-300), priority: "low")
            let normal = try f.enqueue(to: p, at: seedInstant.addingTimeInterval(-200))
            let high = try f.enqueue(to: p, at: seedInstant.addingTimeInterval(-100), priority: "high")
            let future = try f.enqueue(to: p, at: seedInstant.addingTimeInterval(600), priority: "high")
            let store = QueueStore(db: try tdb.connect(), passId: "p")
            let first = try store.claimRows(limit: 2, now: seedInstant, channels: [.inApp], leaseSeconds: 60)
            #expect(first.map(\.item.id) == [high, normal])
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 2)
            let second = try store.claimRows(limit: 2, now: seedInstant, channels: [.inApp], leaseSeconds: 60)
            #expect(second.map(\.item.id) == [low])
            #expect(try f.row(future)["status"].string == "pending")
        }
    }

    /// The prune's delete of old entries reads the inbox through its indexes whatever the statistics
    /// say. On an inbox of 200,000 entries that no analyze has seen yet, the planner takes the old ones
    /// for many, and a limit without an order scanned every entry for them at each pass.
    @Test func thePruneReadsOldEntriesThroughTheirIndexes() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            try db.execute("alter table inbox set (autovacuum_enabled = false)")
            try db.execute("""
                insert into inbox (user_id, notification_key, type, title, body)
                select md5(g::text)::uuid, g::text, 'system', 't', 'b' from generate_series(1, 200000) g
                """)
            let prune = QueueStore(db: db, passId: "p").agedEntries(now: seedInstant, limit: 5000)
            let plan = try db.query("explain " + prune).map { $0[0].string ?? "" }.joined(separator: "\n")
            #expect(!plan.contains("Seq Scan on inbox"), "plan:\n\(plan)")
        }
    }

    @Test func theClaimUsesThePartialIndex() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            // A queue of mostly finished rows with a backlog 20 times the claim's limit: the partial index
            // returns the first 50 in claim order, where any other plan must read and sort the backlog.
            // Which rows stay pending is fixed (not random), and VACUUM leaves the index only live rows,
            // so the planner sees the same table in every run.
            try f.enqueueMany(10_000, to: [try f.profile()], channel: "in_app", at: seedInstant)
            try db.execute("""
                update notification_queue q set status = 'sent'
                  from (select id, row_number() over (order by id) as n from notification_queue) r
                 where r.id = q.id and r.n % 10 <> 0
                """)
            try db.execute("vacuum analyze notification_queue")
            let plan = try db.query("""
                explain select id from notification_queue
                 where (status = 'pending' or (status = 'failed' and not permanent))
                   and run_after <= now() and attempts < max_attempts
                 order by priority_rank, run_after, id limit 50
                """).map { $0[0].string ?? "" }.joined(separator: "\n")
            #expect(plan.contains("notification_queue_due"), "plan:\n\(plan)")
        }
    }

    /// Statistics taken before a burst say no row is sent; the burst then sends thousands. The rate
    /// limits' read of recent sends must still probe its index per recipient, not walk every sent row
    /// (seed 000's `(status, created_at)` index offered that walk at each batch).
    @Test func recentSendsProbeTheirIndexWhateverTheStatisticsSay() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            try f.enqueueMany(5_000, to: [try f.profile()], channel: "in_app", at: seedInstant)
            try db.execute("alter table notification_queue set (autovacuum_enabled = false)")
            try db.execute("vacuum analyze notification_queue")  // every row pending
            try db.execute("update notification_queue set status = 'sent', sent_at = \(seedInstant)")
            let recipients = (0..<200).map { _ in UUID() }
            let query = QueueStore.recentSends(in: "notification_queue", of: recipients, now: seedInstant)
            let plan = try db.query("explain " + query).map { $0[0].string ?? "" }.joined(separator: "\n")
            #expect(plan.contains("notification_queue_recipient_sent"), "plan:\n\(plan)")
            #expect(!plan.contains("status_created") && !plan.contains("Seq Scan"), "plan:\n\(plan)")
        }
    }

    @Test func pruningRemovesOldTerminalRowsOnly() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            let oldSent = try f.enqueue(to: p, at: seedInstant)
            let oldPending = try f.enqueue(to: p, at: seedInstant)
            let oldRetrying = try f.enqueue(to: p, at: seedInstant)
            let recentSent = try f.enqueue(to: p, at: seedInstant)
            let oldButSentToday = try f.enqueue(to: p, at: seedInstant)  // waited 40 days, sent just now
            try db.execute("update notification_queue set status = 'sent' where id = any(\([oldSent, recentSent, oldButSentToday])::uuid[])")
            try db.execute("update notification_queue set created_at = now() - interval '40 days' where id = \(oldButSentToday)")
            try db.execute("update notification_queue set status = 'failed', permanent = false where id = \(oldRetrying)")
            try db.execute("""
                update notification_queue set updated_at = now() - interval '40 days'
                 where id = any(\([oldSent, oldPending, oldRetrying])::uuid[])
                """)
            let pruned = try QueueStore(db: db, passId: "p").pruneTerminal(retentionDays: 30, now: Date())
            #expect(pruned == 1)
            let left = Set(try db.query("select id from notification_queue").compactMap { $0["id"].uuid })
            #expect(left == [oldPending, oldRetrying, recentSent, oldButSentToday])
        }
    }
}
