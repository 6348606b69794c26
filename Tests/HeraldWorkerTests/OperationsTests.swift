import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// What an operator touches: dry runs, status, explain, metrics, signals, the command line.
@Suite struct OperationsTests {
    @Test func dryRunDecidesButChangesNothing() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(timezone: "Europe/London", quiet: ("22:00", "07:00"))
            let id = try f.enqueue(to: p, at: seedInstant)
            let before = try f.count("select count(*)::int from notification_events")
            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant, dryRun: true)
            #expect(code == .ok)
            #expect(summary.dryRun)
            #expect(summary.skipped == 1)
            let row = try f.row(id)
            #expect(row["status"].string == "pending")
            #expect(row["attempts"].int == 0)
            #expect(try f.count("select count(*)::int from notification_events") == before)
            #expect(try f.count("select count(*)::int from herald_passes") == 0)
        }
    }

    @Test func explainTellsWhyAndStatusCounts() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile(timezone: "Europe/London", quiet: ("22:00", "07:00"), action: "defer")
            let id = try f.enqueue(to: p, at: seedInstant)
            _ = Worker(url: tdb.url).run(now: seedInstant)
            let report = try Explain.report(db, id: id)
            let text = Explain.text(report)
            #expect(text.contains("deferred"))
            #expect(text.contains("quiet_hours"))
            #expect(text.contains("Europe/London"))
            #expect(text.contains("03:00"))
            #expect(throws: Explain.NotFound.self) { try Explain.report(db, id: UUID()) }

            let status = try Status.report(db, now: seedInstant)
            #expect(status["depth"]?["pending"]?["in_app"]?.intValue == 1)
            #expect(status["scheduled"]?.intValue == 1)
            #expect(status["due"]?.intValue == 0)
            #expect(Status.text(status).contains("in_app"))
        }
    }

    @Test func metricsFileIsPrometheusText() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let p = try f.profile()
            try f.enqueue(to: p, at: seedInstant)
            let path = NSTemporaryDirectory() + "herald-\(UUID().uuidString).prom"
            defer { try? FileManager.default.removeItem(atPath: path) }
            _ = Worker(url: tdb.url).run(now: seedInstant, metricsFile: path)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.contains("# TYPE herald_pass_rows gauge"))
            #expect(text.contains(#"herald_pass_rows{outcome="sent"} 1"#))
            #expect(text.contains("herald_last_success_timestamp_seconds"))
            // Every sample line is `name{labels} value`.
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                #expect(line.split(separator: " ").count == 2, "bad sample line: \(line)")
            }
        }
    }

    @Test func sigtermStopsClaimingRecordsInFlightAndExitsThree() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer { _ in FakeResponse(status: 200, delay: 1.0) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<60 { recipients.append(try f.profile()) }
            try f.enqueueMany(60, to: recipients, channel: "webhook", at: seedInstant)
            let out = Pipe()
            let p = try HeraldBinary.start(
                ["run", "--now", ISO8601.string(seedInstant), "--batch-size", "20", "--drain", "--quiet"],
                env: ["DATABASE_URL": tdb.url, "WEBHOOK_URL": server.baseURL + "/hooks",
                      "WEBHOOK_SECRET": WebhookDeliveryTests.secret],
                stdout: out)
            // Once the receiver has a request in flight: that one finishes and is recorded.
            let deadline = Date().addingTimeInterval(30)
            while server.requests.isEmpty && Date() < deadline { usleep(10_000) }
            p.terminate()  // SIGTERM
            p.waitUntilExit()
            #expect(p.terminationStatus == 3)
            let summary = try JSONValue.parse(out.fileHandleForReading.readDataToEndOfFile())
            #expect(summary["interrupted"]?.boolValue == true)
            // The requests in flight were finished and recorded, the rest of the batch released; nothing is
            // left leased; later batches untouched.
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 0)
            let sent = try f.count("select count(*)::int from notification_queue where status = 'sent'")
            #expect(sent >= 1 && sent < 60)
            #expect(summary["sent"]?.intValue == sent)
        }
    }

    @Test func migrateTwiceAtOnceIsSafe() throws {
        let server = try TestDatabase.serverURL()
        let admin = try PGConnection(server)
        let name = "herald_mig_\(UInt32.random(in: 0...UInt32.max))"
        try admin.execute("create database \(unescaped: name)")
        defer { _ = try? admin.execute("drop database if exists \(unescaped: name) with (force)") }
        let url = TestDatabase.url(server, database: name)
        let sqlDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("sql").path
        let procs = try (0..<2).map { _ in
            try HeraldBinary.start(["migrate", "--sql-dir", sqlDir, "--quiet"], env: ["DATABASE_URL": url])
        }
        for p in procs { p.waitUntilExit() }
        #expect(procs.allSatisfy { $0.terminationStatus == 0 })
        let db = try PGConnection(url)
        let files = try FileManager.default.contentsOfDirectory(atPath: sqlDir).filter { $0.hasSuffix(".sql") }
        #expect(try db.query("select count(*)::int as n from schema_migrations").first?["n"].int == files.count)
    }

    @Test func enqueueThenRunThenExplain() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let p = try f.profile()
            var n = ManualNotification(recipient: p, channel: .inApp, kind: "system")
            n.title = "Maintenance tonight"
            n.body = "The app will be unavailable from 02:00 to 02:30."
            n.at = seedInstant
            n.dedupeKey = "maintenance-2026-01-25"
            let id = try #require(try n.insert(db))
            #expect(try n.insert(db) == nil, "the dedupe key makes a second enqueue a no-op")
            _ = Worker(url: tdb.url).run(now: seedInstant)
            #expect(try f.row(id)["status"].string == "sent")
            let title = try db.query("select title from inbox where queue_id = \(id)").first?["title"].string
            #expect(title == "Maintenance tonight")
        }
    }

    @Test func drainShowsProgressOnATerminalOnly() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            var recipients: [UUID] = []
            for _ in 0..<30 { recipients.append(try f.profile()) }
            try f.enqueueMany(30, to: recipients, channel: "in_app", at: seedInstant)

            // stderr on a pseudo-terminal, as an operator's shell gives it.
            let terminal = try PseudoTerminal()
            let onTerminal = try HeraldBinary.start(["run", "--drain", "--batch-size", "10", "--now", ISO8601.string(seedInstant)],
                                                    env: ["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "warning"],
                                                    stderr: terminal.follower)
            onTerminal.waitUntilExit()
            let text = terminal.readAll()
            #expect(onTerminal.terminationStatus == 0)
            #expect(text.contains("rows (") && text.contains("rows/s"), "no progress on a terminal: \(text)")

            // Without a terminal (cron, a pipe): no progress line.
            try f.enqueueMany(30, to: recipients, channel: "in_app", at: seedInstant.addingTimeInterval(3600 * 2))
            let err = Pipe()
            let piped = try HeraldBinary.start(["run", "--drain", "--batch-size", "10", "--now",
                                                ISO8601.string(seedInstant.addingTimeInterval(3600 * 2))],
                                               env: ["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "warning"], stderr: err)
            let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            piped.waitUntilExit()
            #expect(!errText.contains("rows/s"))
        }
    }
}
