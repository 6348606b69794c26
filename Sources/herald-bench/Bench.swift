import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging

/// `make bench`: herald's figures, each beside a floor measured in the same run on the same machine.
///
///   1. claim → decide → record, log adapter, batch 1,000 over 20,000 rows — beside the same claim and
///      record SQL run bare (no context, no decisions, no rendering), a bare claim + record on a plain
///      table (the physical floor) and PgQueuer draining as many no-op jobs, the four taking turns
///      (the best of 3 each); the rows and WAL each writes per notification; the pass with 1,000,000 terminal rows beside 10,000; 1, 2 and 4
///      passes at once;
///   2. 2,000 webhook sends to a loopback receiver that waits 20 ms each — beside the sequential time;
///   3. a pass with nothing to do, process start to exit — beside `herald --help` (starting the binary);
///   4. peak memory of a pass at batch 10,000 — beside a pass with nothing to do;
///   5. 10,000 APNs pushes to an HTTP/2 fake answering after 20 ms — beside one connection, one
///      request at a time (and the sequential rate it implies);
///   6. pattern evaluation of 10,000 users × 60 days × 4 metrics — beside reading the same rows bare,
///      the two taking turns (the best of 3 each), and streamed; the same pass as a process of its own, for its peak memory;
///   7. 3,000 APNs pushes to a fake that ends its connections every 500 requests (dropped, reset, or a
///      GOAWAY) — beside the same to a steady fake.
@main
struct Bench {
    static func main() throws {
        guard let server = ProcessInfo.processInfo.environment["HERALD_BENCH_DATABASE_URL"] else {
            FileHandle.standardError.write(Data("herald-bench: set HERALD_BENCH_DATABASE_URL (make bench does)\n".utf8))
            exit(1)
        }
        LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: .warning) }
        let bench = try Bench(serverURL: server)
        print("herald bench — \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ISO8601.string(Date()))")
        print("")
        // HERALD_BENCH_ONLY=1,5 runs only those sections.
        let only = Set((ProcessInfo.processInfo.environment["HERALD_BENCH_ONLY"] ?? "").split(separator: ",").compactMap { Int($0) })
        let sections: [(Int, () throws -> Void)] = [
            (1, bench.claimDecideRecord), (2, bench.webhookFanOut), (3, bench.idlePass),
            (4, bench.peakMemory), (5, bench.apnsPushes), (6, bench.patterns), (7, bench.apnsConnectionEnds),
        ]
        for (n, run) in sections where only.isEmpty || only.contains(n) { try run() }
    }

    let serverURL: String
    let root: URL
    let herald: URL

    init(serverURL: String) throws {
        self.serverURL = serverURL
        root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        herald = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald")
    }

    // MARK: - Set-up

    /// A fresh, migrated database; returns its URL.
    func freshDatabase(_ name: String) throws -> String {
        let admin = try PGConnection(serverURL)
        try admin.execute("drop database if exists \(unescaped: name) with (force)")
        try admin.execute("create database \(unescaped: name)")
        admin.close()
        let url = TestDatabase.url(serverURL, database: name)
        let db = try PGConnection(url)
        try Migrator(directory: root.appendingPathComponent("sql")).migrate(db)
        db.close()
        return url
    }

    /// `n` recipients with one due row each on `channel` (one per recipient keeps rate limits out of it).
    func fill(_ db: PGConnection, rows n: Int, channel: String, at: Date) throws {
        try db.execute("truncate notification_queue, user_profiles cascade")
        try db.execute("""
            insert into user_profiles (user_id, timezone)
            select md5('bench' || g)::uuid, (array['UTC','Europe/London','Asia/Tokyo','America/New_York'])[1 + g % 4]
              from generate_series(1, \(n)) g
            """)
        try db.execute("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at, run_after)
            select md5('bench' || g)::uuid, md5('bench' || g)::uuid, \(channel), 'system',
                   jsonb_build_object('title', 'Hello', 'body', 'Bench row ' || g), \(at), \(at)
              from generate_series(1, \(n)) g
            """)
        try db.execute("vacuum analyze notification_queue")
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func line(_ label: String, _ value: String, _ floorLabel: String, _ floor: String, _ verdict: String) {
        print("  \(label.padding(toLength: 34, withPad: " ", startingAt: 0)) \(value.padding(toLength: 16, withPad: " ", startingAt: 0)) \(floorLabel): \(floor)   \(verdict)")
    }

    /// Runs one pass in-process; its summary and wall time. A pass that fails stops the bench.
    func pass(_ settings: Settings, _ options: PassOptions) throws -> (Summary, Double) {
        var summary: Summary?
        let seconds = try Bench.seconds {
            let (s, code) = Runner(settings: settings, options: options, logger: logger()).run()
            guard code == .ok else { throw BenchError("pass failed: \(s.error ?? "?")") }
            summary = s
        }
        return (summary!, seconds)
    }

    func logger() -> Logger {
        var l = Logger(label: "bench")
        l.logLevel = .warning
        return l
    }

    // MARK: - 1. claim → decide → record

    func claimDecideRecord() throws {
        let rows = 20_000, batch = 1_000
        let url = try freshDatabase("herald_bench_pass")
        let db = try PGConnection(url)
        let now = ISO8601.parse("2026-01-25T12:00:00Z")!
        print("1. claim → decide → record, log adapter, batch \(batch), \(rows) rows (one recipient each)")

        // The four drains take turns, three rounds, and the best of each is compared: the machine's
        // speed moves by ±20 % from one second to the next, and measured once each, whichever drain a
        // neighbour slowed lost (PgQueuer measured 9,233 and 15,466 jobs/s in two runs of the same code).
        var sameSQL: Drain?, herald: Drain?, plain: Drain?, queuer: Drain?
        var summary: Summary?
        var queuerVersion = "?", skipped: String?
        func best(_ a: Drain?, _ b: Drain) -> Drain { a.map { $0.rate >= b.rate ? $0 : b } ?? b }
        for _ in 0..<3 {
            // The same claim and record statements, bare: tells the Swift side from the SQL side.
            try fill(db, rows: rows, channel: "in_app", at: now)
            let store = QueueStore(db: db, passId: "bench-bare")
            var bareCount = 0
            var meter = try WriteMeter(url, flushing: db)
            let bare = try Bench.seconds {
                while true {
                    let claimed = try store.claimRows(limit: batch, now: now, channels: [.inApp], leaseSeconds: 600)
                    if claimed.isEmpty { break }
                    var records = RecordBatch()
                    for c in claimed {
                        var r = RowRecord(id: c.item.id, status: .sent, event: .sent)
                        r.sentAt = now
                        records.rows.append(r)
                    }
                    bareCount += try store.record(records).count
                }
            }
            sameSQL = best(sameSQL, Drain(rows: bareCount, seconds: bare, writes: try meter.per(bareCount, flushing: db)))

            try fill(db, rows: rows, channel: "in_app", at: now)
            meter = try WriteMeter(url, flushing: db)
            let (s, full) = try pass(Settings(["DATABASE_URL": url, "HERALD_CHANNEL_IN_APP": "log"]),
                                     drainOptions(batch: batch, now: now))
            summary = s
            herald = best(herald, Drain(rows: s.sent, seconds: full, writes: try meter.per(s.sent)))

            plain = best(plain, try bareClaimRecord(url, rows: rows, batch: batch, now: now))
            if skipped == nil {
                let (q, version, why) = pgQueuer(rows: rows, batch: 500)
                queuerVersion = version
                skipped = why
                if let q { queuer = best(queuer, q) }
            }
        }
        db.close()
        guard let sameSQL, let herald, let plain, let summary else { throw BenchError("section 1 measured nothing") }

        func rate(_ d: Drain) -> String { "\(Int(d.rate)) rows/s" }
        func pct(_ a: Drain, _ b: Drain) -> String {
            let p = a.rate / b.rate * 100
            return p.isFinite ? "\(Int(p))%" : "—"
        }
        Bench.line("herald pass", rate(herald), "same SQL bare", rate(sameSQL),
                   "(each the best of 3, the four drains taking turns; herald: \(pct(herald, sameSQL)) of it — above 100% the pipelined drain overlaps the Swift side with the SQL, which the bare loop runs one after the other; \(summary.sent) sent)")
        Bench.line("bare claim + record", rate(plain), "plain table", "1 UPDATE … SKIP LOCKED to claim, 1 UPDATE to record",
                   "(herald: \(pct(herald, plain)) of it; aim ≥ 50%)")
        if let queuer {
            Bench.line("PgQueuer \(queuerVersion), batch 500", rate(queuer), "no-op jobs", "\(queuer.rows) drained",
                       String(format: "(herald: %.2f× it; aim ≥ 2×)", herald.rate / queuer.rate))
        } else {
            print("  PgQueuer: skipped — \(skipped ?? "unknown reason")")
        }
        print("  per delivered notification: herald \(WriteMeter.describe(herald.writes)); "
              + "same SQL bare \(WriteMeter.describe(sameSQL.writes)); bare claim + record \(WriteMeter.describe(plain.writes))"
              + (queuer.map { "; PgQueuer \(WriteMeter.describe($0.writes))" } ?? ""))
        print(String(format: "    herald's WAL is %.1f× the bare claim + record's (aim ≤ 2×)", herald.writes.wal / max(plain.writes.wal, 1)))

        // Growth: the same pass with a million terminal rows in the queue, beside ten thousand.
        let growthRows = 10_000
        let (small, large) = try growthRates(rows: growthRows, batch: batch, now: now)
        Bench.line("with 1,000,000 terminal rows", "\(Int(large)) rows/s", "with 10,000", "\(Int(small)) rows/s",
                   String(format: "(%.2f× slower; aim ≤ 1.2×; %d due rows; each the best of 3 passes, the sizes taking turns)", small / large, growthRows))

        // Concurrent passes (processes) on one queue.
        var single = 0.0
        for n in [1, 2, 4] {
            let (total, each) = try concurrentPasses(url, passes: n, rows: rows, batch: batch, now: now)
            if n == 1 { single = total }
            Bench.line("\(n) concurrent pass\(n == 1 ? "" : "es")", "\(Int(total)) rows/s", "each",
                       each.map { "\(Int($0))" }.joined(separator: ", "),
                       String(format: "(%.2f× one pass)", total / max(single, 1)))
        }
        print("")
    }

    // MARK: - 2. webhook fan-out

    func webhookFanOut() throws {
        let rows = 2_000, delay = 0.020
        let url = try freshDatabase("herald_bench_webhook")
        let db = try PGConnection(url)
        let now = ISO8601.parse("2026-01-25T12:00:00Z")!
        print("2. \(rows) webhook sends, receiver waits \(Int(delay * 1000)) ms per request")
        let certificates = try TestCertificates.make()
        let secret = "whsec_" + Data("bench-secret-0123456789abcdef".utf8).base64EncodedString()
        var sequential = 0.0
        // The same receiver over plain HTTP/1.1 (a connection per request in flight: 64 at most by
        // default, 128 with HERALD_CONNECTIONS_PER_HOST=128) and over HTTPS, where HTTP/2 multiplexes
        // the requests on a few connections.
        for (tls, perHost) in [(false, 64), (false, 128), (true, 64)] {
            let server = try FakeHTTPServer(tls: tls ? certificates : nil, threads: 2) { _ in FakeResponse(status: 200, delay: delay) }
            defer { server.shutdown() }
            if sequential == 0 {
                // The floor: requests one after another, measured on 50 and scaled.
                let transport = try HTTPTransport()
                let probe = HTTPRequest(method: "POST", url: server.baseURL + "/probe", body: Array("{}".utf8), timeout: 5, version: .http1_1)
                sequential = Bench.seconds { for _ in 0..<50 { _ = transport.perform(probe) } } / 50 * Double(rows)
            }
            try fill(db, rows: rows, channel: "webhook", at: now)
            var options = PassOptions()
            options.now = now
            options.batchSize = rows
            var settings = ["DATABASE_URL": url, "WEBHOOK_URL": server.baseURL + "/hooks", "WEBHOOK_SECRET": secret,
                            "HERALD_CONNECTIONS_PER_HOST": "\(perHost)"]
            if tls { settings["HERALD_CA_FILE"] = certificates.caFile }
            let (summary, wall) = try pass(Settings(settings), options)
            Bench.line(tls ? "herald pass, HTTPS (HTTP/2)" : "herald pass, HTTP/1.1, \(perHost) conns", String(format: "%.2f s", wall),
                       "sequential", String(format: "%.1f s", sequential),
                       "(\(summary.sent) sent, \(server.connectionCount) connections; aim < 1 s)")
        }
        db.close()
        print("")
    }

    // MARK: - 3. a pass with nothing to do

    func idlePass() throws {
        let url = try freshDatabase("herald_bench_idle")
        print("3. a pass with nothing to do, process start to exit (median of 15)")
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = url
        env["HERALD_CHANNEL_PUSH"] = "log"
        var pass: [Double] = [], start: [Double] = []
        for _ in 0..<15 {
            pass.append(try Bench.seconds { try spawn(herald, ["run", "--quiet"], env: env) })
            start.append(try Bench.seconds { try spawn(herald, ["--help"], env: env) })
        }
        Bench.line("herald run (empty queue)", String(format: "%.1f ms", median(pass) * 1000), "herald --help",
                   String(format: "%.1f ms", median(start) * 1000), "(aim < 50 ms)")
        print("")
    }

    // MARK: - 4. peak memory

    func peakMemory() throws {
        let rows = 10_000
        let url = try freshDatabase("herald_bench_memory")
        let db = try PGConnection(url)
        try fill(db, rows: rows, channel: "in_app", at: ISO8601.parse("2026-01-25T12:00:00Z")!)
        db.close()
        print("4. peak memory of a pass at batch \(rows) (log adapter; the pass's own VmHWM)")
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = url
        env["HERALD_CHANNEL_IN_APP"] = "log"
        let args = ["run", "--quiet", "--batch-size", "\(rows)", "--now", "2026-01-25T12:00:00Z"]
        let pass = try runProcess(herald, args, env: env)
        let idle = try runProcess(herald, args, env: env)  // the same pass again: nothing left to do
        func mb(_ summary: JSONValue) -> String {
            summary["peak_memory_mb"]?.doubleValue.map { String(format: "%.1f MB", $0) } ?? "n/a"
        }
        Bench.line("herald run --batch-size \(rows)", mb(pass), "nothing to do", mb(idle),
                   "(\(pass["processed"]?.intValue ?? 0) rows; aim < 64 MB)")
        print("")
    }

    // MARK: - 5. APNs over HTTP/2

    func apnsPushes() throws {
        let rows = 10_000, latency = 0.020
        let url = try freshDatabase("herald_bench_apns")
        let db = try PGConnection(url)
        let now = ISO8601.parse("2026-01-25T12:00:00Z")!
        print("5. \(rows) APNs pushes to an HTTP/2 fake (TLS) answering after \(Int(latency * 1000)) ms")
        let certificates = try TestCertificates.make()
        let apns = try FakeAPNs(certificates: certificates, latency: latency, threads: 2)
        defer { apns.shutdown() }
        let keyFile = certificates.directory + "/apns-bench.p8"
        try apns.keyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try fill(db, rows: rows, channel: "push", at: now)
        try db.execute("""
            update user_profiles set notify_push = true;
            """)
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider)
            select user_id, encode(sha256(user_id::text::bytea), 'hex'), 'ios', 'apns' from user_profiles
            """)
        let settings = Settings(["DATABASE_URL": url, "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": apns.keyId,
                                 "APNS_TEAM_ID": apns.teamId, "APNS_TOPIC": apns.topic, "APNS_URL": apns.baseURL,
                                 "HERALD_CA_FILE": certificates.caFile])

        // The floor: one connection, one request at a time, through the same adapter and transport.
        let adapter = try ChannelRoutes.load(settings)[.push]!.adapter(for: .apns)!
        let transport = try HTTPTransport(options: TransportOptions(caFile: certificates.caFile, maxConnectionsPerHost: 1,
                                                                    maxTransfersInFlight: 1))
        let item = QueueItem(id: UUID(), recipientUserId: UUID(), channelRaw: "push", kindRaw: "system", scheduledAt: now)
        let rendered = RenderedNotification(title: "Hello", body: "Bench", badge: 1, locale: "en")
        let probes = (0..<100).map { i in
            try! adapter.request(for: [Envelope(item: item, rendered: rendered,
                destination: Destination(provider: .apns, address: String(format: "%064x", i)), now: Date())])
        }
        var ok = 0
        let serial = Bench.seconds { transport.perform(probes) { _, r in if case .success(let x) = r, x.status == 200 { ok += 1 } } }
        let singleRate = Double(probes.count) / serial

        var options = PassOptions()
        options.now = now
        options.batchSize = 2_000
        options.drain = true
        options.maxBatches = nil
        let before = apns.connectionCount
        let (summary, wall) = try pass(settings, options)
        let rate = Double(summary.sent) / wall
        if summary.sent != rows {
            for row in try db.query("select last_error, count(*)::int as n from notification_queue group by 1 order by 2 desc limit 3") {
                print("  (not sent: \(row["n"].int ?? 0) × \(row["last_error"].string ?? "-"))")
            }
        }
        Bench.line("herald pass (HTTP/2 multiplexed)", "\(Int(rate)) pushes/s", "one connection, one at a time",
                   "\(Int(singleRate)) pushes/s (\(ok) ok)",
                   "(sequential at \(Int(latency * 1000)) ms: \(Int(1 / latency))/s; \(summary.sent) sent over \(apns.connectionCount - before) connections; aim ≥ 2,000/s)")
        db.close()
        print("")
    }

    // MARK: - 6. pattern evaluation

    func patterns() throws {
        let users = 10_000, days = 60
        let url = try freshDatabase("herald_bench_patterns")
        let db = try PGConnection(url)
        print("6. pattern evaluation: \(users) users × \(days) days × 4 metrics")
        // Steady values with a deterministic wobble; every third user's last 8 days drop by a third.
        // Each day's rows were written on their day, as apps sync them.
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, updated_at, sleep_minutes, steps, hrv_ms, resting_hr)
            select md5('u' || u)::uuid, '2026-01-25'::date - d, now() - make_interval(days => d + 1),
                   (450 + (u * 7 + d * 13) % 40) * case when u % 3 = 0 and d < 8 then 0.65 else 1 end,
                   (9000 + (u * 11 + d * 17) % 2000) * case when u % 3 = 0 and d < 8 then 0.65 else 1 end,
                   (60 + (u + d * 3) % 12) * case when u % 3 = 0 and d < 8 then 0.65 else 1 end,
                   (58 + (u + d) % 6) * case when u % 3 = 0 and d < 8 then 1.35 else 1 end
              from generate_series(1, \(users)) u, generate_series(0, \(days - 1)) d
            """)
        try db.execute("vacuum analyze wearable_daily_metrics")

        // The floor: the same rows read bare into Swift values, one query, the fastest accessors.
        var cells = 0
        func readBare() throws -> TimeInterval {
            cells = 0
            return try Bench.seconds {
                for row in try db.query("""
                    select user_id, (metric_date - date '1970-01-01') as d, sleep_minutes::float8 as a,
                           steps::float8 as b, hrv_ms::float8 as c, resting_hr::float8 as e
                      from wearable_daily_metrics
                    """) {
                    if row.uuid(at: 0) != nil, row.int(at: 1) != nil { cells += 1 }
                    for k in 2...5 where row.double(at: k) != nil { cells += 1 }
                }
            }
        }
        var bare = try readBare()
        // The same rows streamed (`PGConnection.stream`, libpq's single-row mode), as the pass reads
        // them: one row in memory at a time instead of one result holding them all.
        var streamedCells = 0
        let streamed = try Bench.seconds {
            try db.stream("""
                select user_id, (metric_date - date '1970-01-01') as d, sleep_minutes::float8 as a,
                       steps::float8 as b, hrv_ms::float8 as c, resting_hr::float8 as e
                  from wearable_daily_metrics
                """) { row in
                if row.uuid(at: 0) != nil, row.int(at: 1) != nil { streamedCells += 1 }
                for k in 2...5 where row.double(at: k) != nil { streamedCells += 1 }
            }
        }
        guard streamedCells == cells else { throw BenchError("the streamed read saw \(streamedCells) cells, the bare one \(cells)") }
        var options = PassOptions()
        options.now = ISO8601.parse("2026-01-26T06:00:00Z")!
        options.phases = [.patterns]
        // HERALD_BENCH_PATTERN_CHUNK=2500 tries another chunk size (users per transaction).
        if let chunk = ProcessInfo.processInfo.environment["HERALD_BENCH_PATTERN_CHUNK"].flatMap({ Int($0) }), chunk > 0 {
            options.patternChunk = chunk
        }
        // HERALD_BENCH_PATTERN_READERS=1 reads with one connection, as before session 9.
        if let readers = ProcessInfo.processInfo.environment["HERALD_BENCH_PATTERN_READERS"].flatMap({ Int($0) }), readers > 0 {
            options.patternReaders = readers
        }
        // The pass and the bare read take turns, three times each, and the best of each is compared:
        // the machine's speed moves by ±20 % from one second to the next, and measured once, whichever
        // of the two a neighbour slowed lost.
        var full = Double.infinity
        var summary: Summary?
        for round in 0..<3 {
            if round > 0 {
                try db.execute("truncate pattern_alert_state, pattern_evaluations cascade")
                try db.execute("update pattern_scan_state set scanned_through = '-infinity'")
                bare = min(bare, try readBare())
            }
            let (s, seconds) = try pass(Settings(["DATABASE_URL": url]), options)
            summary = s
            full = min(full, seconds)
        }
        let episodes = try db.query("select count(*)::int as n from pattern_alert_state").first?["n"].int ?? 0
        Bench.line("herald --only patterns", String(format: "%.2f s", full), "read the rows bare", String(format: "%.2f s", bare),
                   String(format: "(%.2f×; each the best of 3, taking turns; \(summary?.generated[.patternsUsers] ?? 0) users, \(episodes) episodes; aim: no more than the read)", full / bare))
        Bench.line("the same rows streamed", String(format: "%.2f s", streamed), "read bare", String(format: "%.2f s", bare),
                   "(PGConnection.stream, one row at a time)")

        // The next pass, as cron runs it: a hundred users have synced a new day since.
        try db.execute("""
            insert into wearable_daily_metrics (user_id, metric_date, sleep_minutes, steps, hrv_ms, resting_hr)
            select md5('u' || u)::uuid, '2026-01-26', 450, 9000, 60, 58 from generate_series(1, \(users), \(users / 100)) u
            """)
        let synced = try db.query("select md5('u' || u)::uuid from generate_series(1, \(users), \(users / 100)) u")
            .compactMap { $0.uuid(at: 0) }
        var changedCells = 0
        let changedBare = try Bench.seconds {
            for row in try db.query("""
                select user_id, (metric_date - date '1970-01-01') as d, sleep_minutes::float8 as a,
                       steps::float8 as b, hrv_ms::float8 as c, resting_hr::float8 as e
                  from wearable_daily_metrics where user_id = any(\(synced)::uuid[])
                """) {
                if row.uuid(at: 0) != nil, row.int(at: 1) != nil { changedCells += 1 }
                for k in 2...5 where row.double(at: k) != nil { changedCells += 1 }
            }
        }
        options.now = ISO8601.parse("2026-01-27T06:00:00Z")!
        let (next, nextWall) = try pass(Settings(["DATABASE_URL": url]), options)
        Bench.line("the next pass, 100 users synced", String(format: "%.0f ms", nextWall * 1000), "their rows bare",
                   String(format: "%.0f ms", changedBare * 1000),
                   "(\(next.generated[.patternsUsers] ?? 0) users evaluated of \(users): the scan reads what changed)")

        // The first pass again, as a process of its own, for its peak memory (VmHWM): every user
        // evaluated afresh.
        try db.execute("truncate pattern_alert_state, pattern_evaluations cascade")
        try db.execute("update pattern_scan_state set scanned_through = '-infinity'")
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = url
        var process: JSONValue = .null
        let processWall = try Bench.seconds {
            process = try runProcess(herald, ["run", "--quiet", "--only", "patterns", "--now", "2026-01-27T06:00:00Z"], env: env)
        }
        Bench.line("the same pass, a process", String(format: "%.2f s", processWall), "its peak memory",
                   process["peak_memory_mb"]?.doubleValue.map { String(format: "%.1f MB", $0) } ?? "n/a",
                   "(\(process["generated"]?["patterns_users"]?.intValue ?? 0) users; aim < 64 MB)")
        db.close()
        print("")
    }

    // MARK: - Processes

    /// Starts a process with posix_spawn (output to /dev/null) and waits for it: the cheapest way to
    /// start one, so the timing is the program's, not the harness's.
    func spawn(_ exe: URL, _ args: [String], env: [String: String]) throws {
        var pid: pid_t = 0
        let argv = ([exe.path] + args).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        defer { posix_spawn_file_actions_destroy(&actions) }
        guard posix_spawn(&pid, exe.path, &actions, nil, argv, envp) == 0 else { throw BenchError("cannot start \(exe.path)") }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        guard status == 0 else { throw BenchError("\(exe.lastPathComponent) \(args) failed (status \(status))") }
    }

    /// Runs a process to completion; returns what it printed on stdout as JSON (or null).
    @discardableResult
    func runProcess(_ exe: URL, _ args: [String], env: [String: String]) throws -> JSONValue {
        let p = Process()
        p.executableURL = exe
        p.arguments = args
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw BenchError("\(exe.lastPathComponent) \(args) exited \(p.terminationStatus)") }
        return (try? JSONValue.parse(data)) ?? .null
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
