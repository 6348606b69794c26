import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker

/// Section 1's growth lines: the claim and record with many terminal rows in the queue, and several
/// passes draining one queue at once.
extension Bench {
    /// `n` rows sent ten days before `now` to recipients of their own (no profile: they are only
    /// bulk), as a queue looks after weeks of traffic. Touched a day ago on the database's clock, so
    /// pruning (which runs on that clock) leaves them alone: they stay in the queue for the pass.
    func addTerminalRows(_ db: PGConnection, _ n: Int, now: Date) throws {
        let sent = now.addingTimeInterval(-10 * 86_400)
        try db.execute("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, status, attempts,
                                            scheduled_at, run_after, sent_at, created_at, updated_at)
            select md5('old' || g)::uuid, md5('old' || g)::uuid, 'in_app', 'system',
                   jsonb_build_object('title', 'Hello', 'body', 'Old row ' || g), 'sent', 1,
                   \(sent), \(sent), \(sent), \(sent), now() - interval '1 day'
              from generate_series(1, \(n)) g
            """)
        try db.execute("vacuum analyze notification_queue")
    }

    /// herald's pass over `rows` due rows beside 10,000 terminal rows and beside 1,000,000, each in a
    /// database of its own: the best of `runs` passes per size, each over fresh due rows beside the
    /// same terminal rows. The two sizes take turns, so a neighbour slowing the shared machine for a
    /// while weighs on both instead of on whichever ran then (one pass per size, one size after the
    /// other, measured 1.04× and 1.54× in two runs of the same code).
    func growthRates(rows: Int, batch: Int, now: Date, runs: Int = 3) throws -> (small: Double, large: Double) {
        let sizes = [10_000, 1_000_000]
        var urls: [String] = []
        for terminal in sizes {
            let url = try freshDatabase("herald_bench_growth_\(terminal)")
            let db = try PGConnection(url)
            try fill(db, rows: rows, channel: "in_app", at: now)
            try addTerminalRows(db, terminal, now: now)
            db.close()
            urls.append(url)
        }
        defer {
            if let admin = try? PGConnection(serverURL) {
                for terminal in sizes { _ = try? admin.execute("drop database if exists herald_bench_growth_\(unescaped: "\(terminal)") with (force)") }
                admin.close()
            }
        }
        var best = [0.0, 0.0]
        for run in 0..<runs {
            for (i, url) in urls.enumerated() {
                if run > 0 {
                    let db = try PGConnection(url)
                    try refillDue(db, rows: rows, at: now)
                    db.close()
                }
                let (summary, seconds) = try pass(Settings(["DATABASE_URL": url, "HERALD_CHANNEL_IN_APP": "log"]),
                                                  drainOptions(batch: batch, now: now))
                best[i] = max(best[i], Double(summary.processed) / seconds)
            }
        }
        return (best[0], best[1])
    }

    /// The due rows of `fill` again, leaving every other row (the terminal ones) where it is.
    func refillDue(_ db: PGConnection, rows n: Int, at: Date) throws {
        try db.execute("""
            delete from notification_queue
             where recipient_user_id in (select md5('bench' || g)::uuid from generate_series(1, \(n)) g)
            """)
        try db.execute("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at, run_after)
            select md5('bench' || g)::uuid, md5('bench' || g)::uuid, 'in_app', 'system',
                   jsonb_build_object('title', 'Hello', 'body', 'Bench row ' || g), \(at), \(at)
              from generate_series(1, \(n)) g
            """)
        try db.execute("vacuum analyze notification_queue")
    }

    /// `n` herald processes (`run --drain`) started at once on one queue of `rows` due rows: the
    /// whole drain's rate and each pass's own.
    func concurrentPasses(_ url: String, passes n: Int, rows: Int, batch: Int, now: Date) throws
        -> (total: Double, each: [Double]) {
        let db = try PGConnection(url)
        try fill(db, rows: rows, channel: "in_app", at: now)
        db.close()
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = url
        env["HERALD_CHANNEL_IN_APP"] = "log"
        let args = ["run", "--quiet", "--drain", "--batch-size", "\(batch)", "--now", ISO8601.string(now)]
        var outputs: [(Process, Pipe, ProcessLog)] = []
        let wall = try Bench.seconds {
            for _ in 0..<n {
                let p = Process()
                p.executableURL = herald
                p.arguments = args
                p.environment = env
                let out = Pipe()
                p.standardOutput = out
                let log = try ProcessLog()
                p.standardError = log.handle
                try p.run()
                outputs.append((p, out, log))
            }
            for (p, _, _) in outputs { p.waitUntilExit() }
        }
        var each: [Double] = []
        var processed = 0
        for (p, out, log) in outputs {
            let summary = (try? JSONValue.parse(out.fileHandleForReading.readDataToEndOfFile())) ?? .null
            guard p.terminationStatus == 0 else {
                throw BenchError("herald run --drain exited \(p.terminationStatus): \(log.tail())")
            }
            let done = summary["processed"]?.intValue ?? 0
            let ms = summary["duration_ms"]?.doubleValue ?? wall * 1000
            processed += done
            each.append(Double(done) / max(ms / 1000, 0.001))
        }
        return (Double(processed) / wall, each)
    }

    func drainOptions(batch: Int, now: Date) -> PassOptions {
        var options = PassOptions()
        options.now = now
        options.batchSize = batch
        options.drain = true
        options.maxBatches = nil
        return options
    }
}
