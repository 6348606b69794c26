import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A pass in a hostile world: failing phases, poison rows, slow receivers, signals, leases
/// and concurrent passes, against the real PostgreSQL, loopback receivers and real processes.
@Suite struct HostileWorldTests {
    // MARK: - One failing phase never stops delivery

    @Test func aFailingPhaseIsReportedAndDeliveryStillRuns() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            let id = try f.enqueue(to: p, at: seedInstant)
            // The patterns phase cannot run without its scan state.
            try db.execute("delete from pattern_scan_state")
            let path = NSTemporaryDirectory() + "herald-\(UUID().uuidString).prom"
            defer { unlink(path) }
            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant, metricsFile: path)
            #expect(code == .degraded)
            #expect(summary.phaseErrors[.phase(.patterns)]?.contains("pattern_scan_state") == true, "\(summary.phaseErrors)")
            #expect(summary.json["phase_errors"]?["patterns"] != nil)
            #expect(try f.row(id)["status"].string == "sent")
            let metrics = try String(contentsOfFile: path, encoding: .utf8)
            #expect(metrics.contains(#"herald_pass_phase_errors{phase="patterns"} 1"#))
            #expect(metrics.contains("herald_pass_success 0"))
        }
    }

    /// A HERALD_THRESHOLDS_VERSION no row of pattern_thresholds has (a typo) fails the patterns phase,
    /// naming the versions there are; delivery still runs. A version whose rows are all disabled is
    /// a choice: no error.
    @Test func anUnknownThresholdsVersionFailsThePatternsPhaseAndDeliveryStillRuns() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let (summary, code) = Worker(url: tdb.url, settings: ["HERALD_THRESHOLDS_VERSION": "V1"]).run(now: seedInstant)
            #expect(code == .degraded)
            let error = summary.phaseErrors[.phase(.patterns)] ?? ""
            #expect(error.contains("HERALD_THRESHOLDS_VERSION is 'V1'") && error.contains("'v1'"), "\(summary.phaseErrors)")
            #expect(try f.row(id)["status"].string == "sent")

            try db.execute("update pattern_thresholds set enabled = false")
            let (disabled, disabledCode) = Worker(url: tdb.url, settings: ["HERALD_THRESHOLDS_VERSION": "v1"]).run(now: seedInstant)
            #expect(disabledCode == .ok, "\(disabled.phaseErrors)")
        }
    }

    @Test func aDryRunKeepsRollingBackAfterAFailingPhase() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            let id = try f.enqueue(to: p, at: seedInstant)
            try db.execute("delete from pattern_scan_state")
            let (summary, _) = Worker(url: tdb.url).run(now: seedInstant, dryRun: true)
            #expect(summary.phaseErrors[.phase(.patterns)] != nil)
            // The dry run's transaction survived the failed phase: nothing was written.
            #expect(try f.row(id)["status"].string == "pending")
            #expect(try f.count("select count(*)::int from notification_trail") == 0)
        }
    }

    @Test func poisonMetricsFailTheirUserNotThePhase() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let good = try f.profile(), huge = try f.profile(), nan = try f.profile()
            for user in [good, huge, nan] {
                try db.execute("""
                    insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps)
                    select \(user), date '2026-01-20' - g, case when g < 7 then 150 else 440 end, 8000
                      from generate_series(0, 46) g
                    """)
            }
            try db.execute("update wearable_daily_metrics set steps = 1e400 where user_id = \(huge) and metric_date = '2026-01-10'")
            try db.execute("update wearable_daily_metrics set steps = 'NaN' where user_id = \(nan) and metric_date = '2026-01-19'")
            let worker = Worker(url: tdb.url)
            let (summary, code) = worker.run(now: instant("2026-01-21T12:00:00Z")) { $0.phases = [.patterns] }
            #expect(code == .ok, "\(summary.phaseErrors)")
            #expect(summary.generated[.patternsFailedUsers] == 2)
            #expect(summary.generated[.patternsUsers] == 3)
            // The good user's episode was opened; the poisoned users have none.
            let users = Set(try db.query("select distinct user_id from pattern_alert_state").compactMap { $0[0].uuid })
            #expect(users == [good])
            // The next pass goes on as well (a correction, a newer update, is evaluated normally).
            let (_, code2) = worker.run(now: instant("2026-01-21T12:05:00Z")) { $0.phases = [.patterns] }
            #expect(code2 == .ok)
        }
    }

    // MARK: - Leases

    @Test(arguments: ["0", "-5", "250", "255"])
    func aLeaseThatCannotOutlastTheDeadlineAndASendIsAConfigurationError(_ lease: String) throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let p = try f.profile()
            let id = try f.enqueue(to: p, at: seedInstant)
            let server = try FakeHTTPServer { _ in FakeResponse(status: 204) }
            defer { server.shutdown() }
            var settings = WebhookDeliveryTests.settings(server)
            settings["HERALD_LEASE_SECONDS"] = lease
            // --deadline 240 + the webhook's 15 s timeout: a lease must be longer than 255 s.
            let (summary, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant)
            #expect(code == .configuration)
            #expect(summary.error?.contains("HERALD_LEASE_SECONDS") == true, "\(summary.error ?? "")")
            let row = try f.row(id)
            #expect(row["status"].string == "pending")
            #expect(row["attempts"].int == 0)
        }
    }

    @Test func aLongEnoughLeaseIsAccepted() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let (_, code) = Worker(url: tdb.url, settings: ["HERALD_LEASE_SECONDS": "256"]).run(now: seedInstant)
            #expect(code == .ok)
            #expect(try f.row(id)["status"].string == "sent")
        }
    }

    /// A lease beyond a day (or one `make_interval` cannot hold, which would fail every claim) is
    /// refused before any row is touched.
    @Test(arguments: ["86401", "600000", "10000000000000"])
    func aLeaseLongerThanADayIsAConfigurationError(_ lease: String) throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let (summary, code) = Worker(url: tdb.url, settings: ["HERALD_LEASE_SECONDS": lease]).run(now: seedInstant)
            #expect(code == .configuration)
            #expect(summary.error?.contains("HERALD_LEASE_SECONDS must be between 1 and 86400") == true, "\(summary.error ?? "")")
            #expect(try f.row(id)["status"].string == "pending")
        }
    }

    // MARK: - Timeouts count from the wire

    /// Behind a cap of 2 connections to a receiver that answers in 0.5 s, 16 requests take 4 s; with
    /// a 2 s timeout, a request's wait for a connection must not count against it.
    @Test func aRequestsTimeoutStartsWhenItGoesOnTheWire() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 204, delay: 0.5) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<16 { recipients.append(try f.profile()) }
            try f.enqueueMany(16, to: recipients, channel: "webhook", at: seedInstant)
            var settings = WebhookDeliveryTests.settings(server)
            settings["HERALD_CONNECTIONS_PER_HOST"] = "2"
            settings["WEBHOOK_TIMEOUT_SECONDS"] = "2"
            let (summary, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant, batchSize: 16)
            #expect(code == .ok)
            let timedOut = try f.count("select count(*)::int from notification_queue where last_error like '%timed out%'")
            #expect(summary.sent == 16, "failed: \(summary.failed); \(timedOut) timed out")
            #expect(server.requests.count == 16)
            #expect(server.peakInFlight <= 2)
        }
    }

    /// Once a record flush fails, no new request is started: the pass stops sending and exits 2, and
    /// its rows come back after their lease. The receiver holds its answers: the first goes, and the
    /// others only once the flush that recorded it has failed, so what the pass sent follows from the
    /// rule (the request on the connection when the flush failed, at most one more), not from how
    /// fast the database answered.
    @Test func aFailedRecordFlushStartsNoNewRequest() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let gate = FakeGate()
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 204, gate: gate) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<10 { recipients.append(try f.profile()) }
            try f.enqueueMany(10, to: recipients, channel: "webhook", at: seedInstant)
            // A sequence is not rolled back: it tells the test that a flush reached the trigger.
            try db.executeScript("""
                create sequence refusals;
                create function refuse() returns trigger language plpgsql as $$
                begin perform nextval('refusals'); raise exception 'the disk is full'; end $$;
                create trigger refuse before insert on notification_deliveries for each row execute function refuse();
                """)
            var settings = WebhookDeliveryTests.settings(server)
            settings["HERALD_CONNECTIONS_PER_HOST"] = "1"
            // A flush for every recorded row, so the first answer's record is written (and fails) at once.
            let worker = Worker(url: tdb.url, settings: settings)
            let pass = InBackground {
                worker.run(now: seedInstant, batchSize: 10) { $0.recordChunk = 1 }
            }
            #expect(gate.waitUntilHeld(1))
            gate.release(1)
            // The flush failed: the trigger ran, and no other session of this database is still at work
            // (the pass's transaction was rolled back).
            #expect(try f.waitFor("""
                select count(*)::int from refusals
                 where is_called
                   and not exists (select 1 from pg_stat_activity
                                    where datname = current_database() and backend_type = 'client backend'
                                      and pid <> pg_backend_pid() and state <> 'idle')
                """, atLeast: 1))
            gate.open()
            let (summary, code) = pass.value()
            #expect(code == .database)
            #expect(summary.error?.contains("the disk is full") == true)
            #expect(server.requests.count <= 3, "\(server.requests.count) requests after the flush failed")
        }
    }

    // MARK: - Signals

    /// SIGTERM in the middle of a batch: no request starts after it, those in flight finish and are
    /// recorded, the rest go back to the queue with no attempt charged, and the process exits 3. SIGHUP
    /// (the terminal of an interactive drain closed) does the same instead of killing the pass mid-send.
    @Test(arguments: [SIGTERM, SIGHUP])
    func aStopSignalReleasesUnsentRowsWithoutChargingAnAttempt(_ sig: Int32) throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let gate = FakeGate()
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200, gate: gate) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<40 { recipients.append(try f.profile()) }
            try f.enqueueMany(40, to: recipients, channel: "webhook", at: seedInstant)
            let out = Pipe()
            let started = Date()
            let p = try HeraldBinary.start(
                ["run", "--now", ISO8601.string(seedInstant), "--batch-size", "40", "--quiet"],
                env: ["DATABASE_URL": tdb.url, "WEBHOOK_URL": server.baseURL + "/hooks",
                      "WEBHOOK_SECRET": WebhookDeliveryTests.secret, "HERALD_CONNECTIONS_PER_HOST": "4"],
                stdout: out)
            // The receiver holds its answers: once a request waits on each of the 4 connections, nothing
            // more can start. Those are in flight when the pass is stopped.
            #expect(gate.waitUntilHeld(4))
            let seenAtSignal = server.requests.count
            kill(p.processIdentifier, sig)
            // Their answers go. A request started after the signal would wait at the gate; a pass still
            // running after 10 s has not stopped sending, and is let go to be counted.
            gate.release(4)
            if !waitForExit(p, seconds: 10) { gate.open() }
            p.waitUntilExit()
            let elapsed = Date().timeIntervalSince(started)
            #expect(p.terminationStatus == 3)
            let summary = try JSONValue.parse(out.fileHandleForReading.readDataToEndOfFile())
            #expect(summary["interrupted"]?.boolValue == true)
            // At most the requests already in flight (4 connections) went out after the signal was seen.
            let total = server.requests.count
            #expect(total <= seenAtSignal + 4, "\(total) requests, \(seenAtSignal) at the signal")
            #expect(total < 40)
            // Every request that went out is recorded as sent; the rest are due again, attempts refunded.
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == total)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'failed'") == 0)
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 0)
            #expect(try f.count("""
                select count(*)::int from notification_queue where status = 'pending' and attempts = 0
                """) == 40 - total)
            #expect(summary["released"]?.intValue == 40 - total)
            #expect(elapsed < 60)
        }
    }

    // MARK: - Rate limits across passes

    /// Two passes at once, each claiming small batches of one recipient's 20 rows while their sends
    /// are slow: between them they must not pass the daily cap (10 per channel per local day).
    @Test func theDailyCapHoldsAcrossConcurrentPasses() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 204, delay: 0.3) }
            defer { server.shutdown() }
            let p = try f.profile()
            // 8 already sent today (two hours ago, so the same-kind spacing does not apply).
            let kinds = ["pattern_alert", "reminder", "daily_forecast"]   // capped types: prompts and a backend's are not
            for i in 0..<8 {
                let id = try f.enqueue(to: p, channel: "webhook", kind: kinds[i % 3], at: seedInstant.addingTimeInterval(-7200))
                try db.execute("update notification_queue set status = 'sent', sent_at = \(seedInstant.addingTimeInterval(-7200)) where id = \(id)")
            }
            for i in 0..<20 {
                _ = try f.enqueue(to: p, channel: "webhook", kind: kinds[i % 3], at: seedInstant.addingTimeInterval(Double(i)))
            }
            let env = ["DATABASE_URL": tdb.url, "WEBHOOK_URL": server.baseURL + "/hooks",
                       "WEBHOOK_SECRET": WebhookDeliveryTests.secret]
            let args = ["run", "--now", ISO8601.string(seedInstant.addingTimeInterval(30)), "--batch-size", "5", "--drain",
                        "--quiet", "--only", "deliver"]
            let passes = try (0..<2).map { _ in try HeraldBinary.start(args, env: env) }
            for pass in passes { pass.waitUntilExit() }
            #expect(passes.allSatisfy { $0.terminationStatus == 0 })
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 10)
            #expect(server.requests.count == 2)
        }
    }
}
