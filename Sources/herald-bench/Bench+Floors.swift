import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport

/// The two yardsticks section 1 prints beside herald: the physical floor (a bare claim + record on a
/// plain table) and what a user would pick instead (PgQueuer, a Python job queue on PostgreSQL).
extension Bench {
    /// What one drain measured: rows done, seconds, and per row the rows and WAL it wrote.
    struct Drain {
        var rows: Int
        var seconds: Double
        var writes: (rows: Double, wal: Double)
        /// CPU per notification by process, where it was measured.
        var cpu: CPUMeter.Account?
        var rate: Double { Double(rows) / seconds }
    }

    /// A plain table the bench creates itself, drained by one `UPDATE … WHERE id IN (SELECT … FOR
    /// UPDATE SKIP LOCKED LIMIT n) RETURNING` per batch to claim and one `UPDATE` to record: no trail,
    /// no deliveries, no context, no decisions. `checkpoint`: one right before the drain.
    func bareClaimRecord(_ url: String, rows: Int, batch: Int, now: Date, checkpoint: Bool = false) throws -> Drain {
        let db = try PGConnection(url)
        defer { db.close() }
        try db.execute("drop table if exists bench_plain_queue")
        try db.execute("""
            create table bench_plain_queue (
              id bigint generated always as identity primary key,
              payload jsonb not null,
              status text not null default 'pending',
              run_after timestamptz not null,
              attempts int not null default 0,
              locked_until timestamptz,
              locked_by text,
              sent_at timestamptz)
            """)
        try db.execute("create index bench_plain_queue_due on bench_plain_queue (run_after, id) where status = 'pending'")
        try db.execute("""
            insert into bench_plain_queue (payload, run_after)
            select jsonb_build_object('title', 'Hello', 'body', 'Bench row ' || g), \(now)
              from generate_series(1, \(rows)) g
            """)
        try db.execute("vacuum analyze bench_plain_queue")
        if checkpoint { try db.execute("checkpoint") }
        let meter = try WriteMeter(url, flushing: db)
        let cpu = try CPUMeter(url)
        var done = 0
        let seconds = try Bench.seconds {
            while true {
                let claimed = try db.query("""
                    update bench_plain_queue q
                       set status = 'processing', attempts = q.attempts + 1,
                           locked_until = now() + interval '10 minutes', locked_by = 'bench-plain'
                     where id in (select id from bench_plain_queue
                                   where status = 'pending' and run_after <= \(now)
                                   order by run_after, id
                                   for update skip locked limit \(batch))
                    returning q.id, q.payload::text as payload
                    """)
                if claimed.isEmpty { break }
                let ids = claimed.compactMap { $0.int(at: 0) }
                done += try db.execute("""
                    update bench_plain_queue set status = 'sent', sent_at = \(now), locked_until = null, locked_by = null
                     where id = any(\(ids)::int8[]) and status = 'processing' and locked_by = 'bench-plain'
                    """)
            }
        }
        let account = cpu.per(done)
        return Drain(rows: done, seconds: seconds, writes: try meter.per(done, flushing: db), cpu: account)
    }

    /// PgQueuer draining `rows` no-op jobs at `batch` per dequeue, from a throw-away virtualenv under
    /// .build (made and filled from PyPI on first use), in a database of `server` (nil: the bench's),
    /// after a checkpoint if asked. Returns the drain, or why it was skipped.
    func pgQueuer(rows: Int, batch: Int, on server: String? = nil, checkpoint: Bool = false)
        -> (drain: Drain?, version: String, skipped: String?) {
        let venv = root.appendingPathComponent(".build/pgqueuer-venv")
        let python = venv.appendingPathComponent("bin/python").path
        var version = "?"
        do {
            if !FileManager.default.fileExists(atPath: python) {
                try shell("python3", ["-m", "venv", venv.path], "python3 -m venv (is python3-venv installed?)")
            }
            if (try? shell(python, ["-c", "import pgqueuer, asyncpg"], "import")) == nil {
                try shell(python, ["-m", "pip", "install", "-q", "--disable-pip-version-check", "pgqueuer", "asyncpg"],
                          "pip install pgqueuer asyncpg")
            }
            version = (try? shell(python, ["-c", "import importlib.metadata as m; print(m.version('pgqueuer'))"], "version"))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            let url = try freshDatabase("herald_bench_pgqueuer", on: server)
            let script = root.appendingPathComponent("scripts/pgqueuer-bench.py").path
            try shell(python, [script, "fill", url, "\(rows)"], "pgqueuer-bench.py fill")
            if checkpoint {
                let db = try PGConnection(url)
                defer { db.close() }
                try db.execute("checkpoint")
            }
            let meter = try WriteMeter(url)
            let cpu = try CPUMeter(url)
            let out = try shell(python, [script, "drain", url, "\(batch)"], "pgqueuer-bench.py drain")
            guard let json = try? JSONValue.parse(Data(out.utf8)), let done = json["rows"]?.intValue,
                  let seconds = json["seconds"]?.doubleValue, done > 0 else {
                return (nil, version, "pgqueuer-bench.py printed \(out.prefix(200))")
            }
            let account = cpu.per(done, clientSeconds: json["cpu_seconds"]?.doubleValue ?? .nan)
            return (Drain(rows: done, seconds: seconds, writes: try meter.per(done), cpu: account), version, nil)
        } catch {
            return (nil, version, "\(error)")
        }
    }

    /// Runs a program to completion; its stdout. Throws, naming `what`, when it fails.
    @discardableResult
    func shell(_ exe: String, _ args: [String], _ what: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [exe] + args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            let last = String(decoding: errData, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
            throw BenchError("\(what) failed (exit \(p.terminationStatus)): \(last)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
