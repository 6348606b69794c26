import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// An upgrade in place: a database the previous release migrated and filled (sent rows with their trail
/// events, deliveries and entries, rows leased to passes alive and dead, rows due) is migrated while
/// that release's passes run, then drained by this release's passes beside them. Every notification
/// goes out exactly once, and its trail, deliveries and entry tell the same story whichever release
/// sent it.
@Suite struct UpgradeTests {
    /// The first migration of the release that made the claim lease-only: the previous release's
    /// database has every migration before it.
    static let firstOfThisRelease = 42

    /// A database migrated with the previous release's migrations only.
    static func previousReleaseDatabase(_ body: (TestDB) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-previous-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for file in try FileManager.default.contentsOfDirectory(atPath: TestDatabase.migrationsDirectory.path)
        where file.hasSuffix(".sql") && (Int(file.prefix { $0.isNumber }) ?? .max) < firstOfThisRelease {
            try FileManager.default.copyItem(at: TestDatabase.migrationsDirectory.appendingPathComponent(file),
                                             to: dir.appendingPathComponent(file))
        }
        try withTestDatabase(migrationsDirectory: dir, body)
    }

    /// What went out, from every pass of either release: each id once per send.
    final class Sends: @unchecked Sendable {  // `ids` is read and written under `lock`
        private let lock = NSLock()
        private var ids: [UUID] = []
        func add(_ more: [UUID]) { lock.withLock { ids += more } }
        var all: [UUID] { lock.withLock { ids } }
    }

    /// A pass of the previous release, claiming, sending (on the log adapter: the claim is the send)
    /// and recording batch after batch until told to stop.
    final class PreviousPass: @unchecked Sendable {  // `stopped` is read and written under `lock`
        private let lock = NSLock()
        private var stopped = false
        private let done = DispatchSemaphore(value: 0)

        init(url: String, name: String, sends: Sends) {
            Thread { [self] in
                defer { done.signal() }
                guard let db = try? PGConnection(url) else { return }
                defer { db.close() }
                while !lock.withLock({ stopped }) {
                    guard let ids = try? PreviousRelease.claim(db, passId: name, limit: 20, now: seedInstant), !ids.isEmpty else {
                        usleep(20_000)
                        continue
                    }
                    sends.add(ids)
                    // As that release did, a record rolled back (a deadlock, say) is written again.
                    for _ in 0..<5 where (try? PreviousRelease.recordSent(db, passId: name, ids: ids, now: seedInstant)) == nil {
                        usleep(200_000)
                    }
                }
            }.start()
        }

        func stop() {
            lock.withLock { stopped = true }
            done.wait()
        }
    }

    @Test func aDatabaseUpgradesInPlaceWhileThePreviousReleasesPassesRun() throws {
        try Self.previousReleaseDatabase { tdb in
            try tdb.setRateLimits()
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let users = try (0..<60).map { _ in try f.profile() }
            let sends = Sends()

            // The previous release's history: sent rows with their events, deliveries and entries; a pass
            // in flight (sent, not yet recorded) and one that died with its rows leased. Each claims rows
            // of recipients of its own, enqueued just before, so none is left out as another's.
            try f.enqueueMany(40, to: Array(users[0..<40]), channel: "in_app", at: seedInstant)
            let history = try PreviousRelease.claim(db, passId: "old-history", limit: 40, now: seedInstant)
            sends.add(history)
            #expect(try PreviousRelease.recordSent(db, passId: "old-history", ids: history, now: seedInstant).count == 40)
            try f.enqueueMany(10, to: Array(users[40..<50]), channel: "in_app", at: seedInstant)
            let inFlight = try PreviousRelease.claim(db, passId: "old-in-flight", limit: 10, now: seedInstant)
            sends.add(inFlight)
            try f.enqueueMany(10, to: Array(users[50..<60]), channel: "in_app", at: seedInstant)
            let dead = try PreviousRelease.claim(db, passId: "old-dead", limit: 10, now: seedInstant, leaseSeconds: 2)
            #expect(history.count == 40 && inFlight.count == 10 && dead.count == 10)
            try f.enqueueMany(240, to: users, channel: "in_app", at: seedInstant)

            // The previous release's passes run on while this release's migrations are applied.
            let previous = (1...2).map { PreviousPass(url: tdb.url, name: "old-\($0)", sends: sends) }
            let migrator = try tdb.connect()
            let applied = try Migrator(directory: TestDatabase.migrationsDirectory).migrate(migrator)
            migrator.close()
            #expect(applied.first?.version == Self.firstOfThisRelease)
            #expect(try SchemaVersion.check(db) == SchemaVersion.required)
            // The previous release's passes lease without a note: this release's claims read the
            // recipients they hold for a day (sql/072).
            #expect(try f.count("""
                select count(*)::int from herald_lease_holders
                 where pass_id = '(passes of earlier releases)' and until > now() + interval '23 hours'
                """) == 1)
            #expect(try PreviousRelease.recordSent(db, passId: "old-in-flight", ids: inFlight, now: seedInstant).count == 10)

            // This release's passes drain the queue beside them; once the dead pass's lease has run out,
            // one more recovers its rows and sends them.
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("herald-upgrade-\(UUID().uuidString).jsonl").path
            defer { try? FileManager.default.removeItem(atPath: log) }
            let worker = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_IN_APP": "log", "HERALD_LOG_ADAPTER_FILE": log])
            inParallel(2) { _ in _ = worker.run(now: seedInstant, batchSize: 25, drain: true) }
            for pass in previous { pass.stop() }
            // 3 s later, on the clock: the dead pass's lease of 2 s has expired.
            let (last, code) = worker.run(now: seedInstant, batchSize: 100, drain: true) { $0.clockShift = ClockShift(3) }
            #expect(code == .ok, "\(last.error ?? "")")

            // Exactly once: every row went out once, whichever release sent it, and is recorded sent.
            let logged = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
                .compactMap { try? JSONValue.parse(Data($0.utf8))["queue_id"]?.stringValue.flatMap(UUID.init(uuidString:)) }
            var times: [UUID: Int] = [:]
            for id in sends.all + logged { times[id, default: 0] += 1 }
            #expect(times.count == 300)
            #expect(times.values.allSatisfy { $0 == 1 }, "sent twice: \(times.filter { $0.value > 1 }.keys.prefix(3))")
            #expect(Set(dead).isSubset(of: Set(logged)))
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 300)
            #expect(try f.count("select count(distinct queue_id)::int from notification_deliveries where outcome = 'delivered'") == 300)
            #expect(try f.count("select count(*)::int from notification_deliveries") == 300)

            // One story each: a `sent` in the trail (an event from the previous release, a delivery's
            // decision from this one), and one listed entry per notification.
            #expect(try f.count("""
                select count(*)::int from (select queue_id from notification_trail where event = 'sent'
                                            group by queue_id having count(*) = 1) t
                """) == 300)
            #expect(try f.count("select count(*)::int from notification_trail where event = 'recovered'") == 10)
            #expect(try f.count("""
                select coalesce(sum((select count(*) from herald_listed_entries(p.user_id))), 0)::int from user_profiles p
                """) == 300)
            for id in [history[0], dead[0]] {
                let events = try #require(try Explain.report(db, id: id)["events"]?.arrayValue)
                #expect(events.last?["event"]?.stringValue == "sent")
                #expect(events.last?["details"]?["attempt"]?.intValue == (id == dead[0] ? 2 : 1))
            }
        }
    }
}
