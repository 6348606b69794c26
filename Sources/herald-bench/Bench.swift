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
///      (the best of 3 each); the rows and WAL each writes per notification, and the WAL again with
///      PostgreSQL's durability defaults and wal_level=logical; the pass with 1,000,000 terminal rows beside 10,000; 1, 2 and 4
///      passes at once;
///   2. 2,000 webhook sends to a loopback receiver that waits 20 ms each — beside the sequential time;
///   3. a pass with nothing to do, process start to exit — beside `herald --help` (starting the binary);
///   4. peak memory of a pass at batch 10,000 — beside a pass with nothing to do;
///   5. 10,000 APNs pushes to an HTTP/2 fake answering after 20 ms — beside one connection, one
///      request at a time (and the sequential rate it implies);
///   6. pattern evaluation of 10,000 users × 60 days × 4 metrics — beside reading the same rows bare,
///      the two taking turns (the best of 3 each), and streamed; the same pass as a process of its own, for its peak memory;
///   7. 3,000 APNs pushes to a fake that ends its connections every 500 requests (dropped, reset, or a
///      GOAWAY) — beside the same to a steady fake;
///   8. enqueue → provider latency of 1,000 pushes enqueued one per transaction at 100/s, through a
///      follower that LISTENs, one that polls and batch passes — beside the commits' notifications
///      reaching a bare listener; and reminder → provider latency of 100 reminders scheduled through the
///      app's RPC 2 s ahead while a follower runs. Section 1 also gives what the queue's notify trigger
///      adds to an insert;
///   9. a morning: 100,000 people whose forecasts are due at 08:00 in 500 places, primed by passes in
///      the hour before and delivered at 08:00 by a follower through APNs and FCM fakes — beside h2load
///      against the same fakes (the providers' ceiling) and the bare claim + record (the database's floor);
///  10. follow-ups: what a follow-up policy costs per notification — the enqueue, the send that enqueues
///      its chain, the claim's check of a step, the read that cancels one — beside the same without a
///      policy, and a type without one with the follow-up triggers and with them off (the floor).
///  11. a digest join per notification, one row per transaction and 20,000 in a statement — beside the
///      plain enqueue, and an undigested type's enqueue beside the same without the digest machinery.
///
/// Each section has a file of its own: `Bench+ClaimDecideRecord` (1, with `Bench+Floors`,
/// `Bench+DurableWAL`, `Bench+Growth` and `Bench+EnqueueCost`), `Bench+Webhooks` (2), `Bench+IdlePass` (3),
/// `Bench+PeakMemory` (4), `Bench+APNs` (5), `Bench+Patterns` (6), `Bench+ConnectionEnds` (7) and
/// `Bench+Follow` (8, with `LatencyRun` and `Bench+FollowReminders`), `Bench+Morning` (9, with `H2Load`),
/// `Bench+FollowUps` (10) and `Bench+Digests` (11).
/// This file holds what they share.
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
        // HERALD_BENCH_ONLY=1,5 (or `make bench BENCH=morning`) runs only those sections, by number or name.
        let only = Set((ProcessInfo.processInfo.environment["HERALD_BENCH_ONLY"] ?? "").split(separator: ",").map(String.init))
        let sections: [(Int, String, () throws -> Void)] = [
            (1, "claim", bench.claimDecideRecord), (2, "webhooks", bench.webhookFanOut), (3, "idle", bench.idlePass),
            (4, "memory", bench.peakMemory), (5, "apns", bench.apnsPushes), (6, "patterns", bench.patterns),
            (7, "connection-ends", bench.apnsConnectionEnds), (8, "follow", bench.followLatency), (9, "morning", bench.morning),
            (10, "followups", bench.followUps),
            (11, "digests", bench.digests),
        ]
        for (n, name, run) in sections where only.isEmpty || only.contains("\(n)") || only.contains(name) { try run() }
    }

    let serverURL: String
    /// A second server with PostgreSQL's durability defaults and `wal_level = logical`
    /// (`HERALD_BENCH_DURABLE_URL`, which `make bench` starts); nil: section 1's WAL line for it is skipped.
    let durableServerURL: String?
    let root: URL
    let herald: URL

    init(serverURL: String) throws {
        self.serverURL = serverURL
        durableServerURL = ProcessInfo.processInfo.environment["HERALD_BENCH_DURABLE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        herald = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald")
    }

    // MARK: - Set-up

    /// A fresh, migrated database on `server` (nil: the bench's server); returns its URL.
    func freshDatabase(_ name: String, on server: String? = nil) throws -> String {
        let admin = try PGConnection(server ?? serverURL)
        try admin.execute("drop database if exists \(unescaped: name) with (force)")
        try admin.execute("create database \(unescaped: name)")
        admin.close()
        let url = TestDatabase.url(server ?? serverURL, database: name)
        let db = try PGConnection(url)
        try Migrator(directory: root.appendingPathComponent("sql")).migrate(db)
        db.close()
        return url
    }

    /// `n` recipients with one due row each on `channel` (one per recipient keeps rate limits out of it).
    func fill(_ db: PGConnection, rows n: Int, channel: String, at: Date) throws {
        try db.execute("truncate notification_queue, inbox, push_receipts, user_profiles cascade")
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
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
