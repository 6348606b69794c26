import Foundation
import HeraldCore
import HeraldHTTP
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging

/// `make bench`: herald's figures, each beside a floor measured in the same run on the same machine.
///
///   1. claim → decide → record, log adapter, batch 1,000 over 20,000 rows — beside the same claim and
///      record SQL run bare (no context, no decisions, no rendering);
///   2. 2,000 webhook sends to a loopback receiver that waits 20 ms each — beside the sequential time;
///   3. a pass with nothing to do, process start to exit — beside starting a trivial process;
///   4. peak memory of a pass at batch 10,000 — beside the peak memory of `herald --help`.
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
        try bench.claimDecideRecord()
        try bench.webhookFanOut()
        try bench.idlePass()
        try bench.peakMemory()
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
        print("1. claim → decide → record, log adapter, batch \(batch), \(rows) rows")

        // The floor: the same claim and record statements, bare.
        try fill(db, rows: rows, channel: "in_app", at: now)
        let store = QueueStore(db: db, passId: "bench-bare")
        var bareCount = 0
        let bare = try Bench.seconds {
            while true {
                let claimed = try store.claimRows(limit: batch, now: now, channels: ["in_app"], leaseSeconds: 600)
                if claimed.isEmpty { break }
                var records = RecordBatch()
                for c in claimed {
                    var r = RowRecord(id: c.item.id, status: .sent, event: "sent")
                    r.sentAt = now
                    records.rows.append(r)
                }
                bareCount += try store.record(records).count
            }
        }

        try fill(db, rows: rows, channel: "in_app", at: now)
        var options = PassOptions()
        options.now = now
        options.batchSize = batch
        options.drain = true
        options.maxBatches = nil
        var summary: Summary?
        let full = try Bench.seconds {
            let settings = Settings(["DATABASE_URL": url, "HERALD_CHANNEL_IN_APP": "log"])
            let (s, code) = Runner(settings: settings, options: options, logger: logger()).run()
            guard code == .ok else { throw BenchError("pass failed: \(s.error ?? "?")") }
            summary = s
        }
        let bareRate = Double(bareCount) / bare
        let rate = Double(summary?.processed ?? 0) / full
        Bench.line("herald pass", "\(Int(rate)) rows/s", "bare SQL", "\(Int(bareRate)) rows/s",
                   "(\(Int(rate / bareRate * 100))% of bare; aim ≥ 50%; \(summary?.sent ?? 0) sent)")
        db.close()
        print("")
    }

    // MARK: - 2. webhook fan-out

    func webhookFanOut() throws {
        let rows = 2_000, delay = 0.020
        let url = try freshDatabase("herald_bench_webhook")
        let db = try PGConnection(url)
        let now = ISO8601.parse("2026-01-25T12:00:00Z")!
        print("2. \(rows) webhook sends, receiver waits \(Int(delay * 1000)) ms per request")
        let server = try FakeHTTPServer(threads: 2) { _ in FakeResponse(status: 200, delay: delay) }
        defer { server.shutdown() }

        // The floor: requests one after another, measured on 50 and scaled.
        let transport = try HTTPTransport()
        let probe = HTTPRequest(method: "POST", url: server.baseURL + "/probe", body: Array("{}".utf8), timeout: 5, version: .http1_1)
        let fifty = Bench.seconds { for _ in 0..<50 { _ = transport.perform(probe) } }
        let sequential = fifty / 50 * Double(rows)

        try fill(db, rows: rows, channel: "webhook", at: now)
        var options = PassOptions()
        options.now = now
        options.batchSize = rows
        var summary: Summary?
        let wall = try Bench.seconds {
            let settings = Settings(["DATABASE_URL": url, "WEBHOOK_URL": server.baseURL + "/hooks",
                                     "WEBHOOK_SECRET": "whsec_" + Data("bench-secret-0123456789abcdef".utf8).base64EncodedString()])
            let (s, code) = Runner(settings: settings, options: options, logger: logger()).run()
            guard code == .ok else { throw BenchError("pass failed: \(s.error ?? "?")") }
            summary = s
        }
        Bench.line("herald pass (claim → send → record)", String(format: "%.2f s", wall), "sequential",
                   String(format: "%.1f s", sequential),
                   "(\(summary?.sent ?? 0) sent, \(server.connectionCount) connections; aim < 1 s)")
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
        var pass: [Double] = [], trivial: [Double] = []
        for _ in 0..<15 {
            pass.append(try Bench.seconds { try runProcess(herald, ["run", "--quiet"], env: env) })
            trivial.append(try Bench.seconds { try runProcess(URL(fileURLWithPath: "/bin/true"), [], env: env) })
        }
        Bench.line("herald run (empty queue)", String(format: "%.1f ms", median(pass) * 1000), "start a process",
                   String(format: "%.1f ms", median(trivial) * 1000), "(aim < 50 ms)")
        print("")
    }

    // MARK: - 4. peak memory

    func peakMemory() throws {
        let rows = 10_000
        let url = try freshDatabase("herald_bench_memory")
        let db = try PGConnection(url)
        try fill(db, rows: rows, channel: "in_app", at: ISO8601.parse("2026-01-25T12:00:00Z")!)
        db.close()
        print("4. peak memory of a pass at batch \(rows) (log adapter)")
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = url
        env["HERALD_CHANNEL_IN_APP"] = "log"
        let help = try peakRSS(herald, ["--help"], env: env)
        let pass = try peakRSS(herald, ["run", "--quiet", "--batch-size", "\(rows)", "--now", "2026-01-25T12:00:00Z"], env: env)
        Bench.line("herald run --batch-size \(rows)", String(format: "%.1f MB", pass), "herald --help",
                   String(format: "%.1f MB", help), "(aim < 64 MB)")
    }

    // MARK: - Processes

    func runProcess(_ exe: URL, _ args: [String], env: [String: String]) throws {
        let p = Process()
        p.executableURL = exe
        p.arguments = args
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw BenchError("\(exe.lastPathComponent) \(args) exited \(p.terminationStatus)") }
    }

    /// The child's peak resident set in MB, from wait4's rusage.
    func peakRSS(_ exe: URL, _ args: [String], env: [String: String]) throws -> Double {
        var pid: pid_t = 0
        let argv = ([exe.path] + args).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        defer { posix_spawn_file_actions_destroy(&actions) }
        guard posix_spawn(&pid, exe.path, &actions, nil, argv, envp) == 0 else {
            throw BenchError("cannot start \(exe.path)")
        }
        var status: Int32 = 0
        var usage = rusage()
        wait4(pid, &status, 0, &usage)
        return Double(usage.ru_maxrss) / 1024  // ru_maxrss is in KB on Linux
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
