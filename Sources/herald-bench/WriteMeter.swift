import Foundation
import HeraldPostgres

/// What a piece of work wrote to one database: rows (pg_stat_database's tuples inserted, updated and
/// deleted) and WAL bytes (pg_current_wal_lsn before and after). Statistics reach pg_stat_database a
/// moment after a backend goes idle or exits, so a reading waits until the counters stop moving.
struct WriteMeter {
    let url: String
    let rows: Int
    let lsn: String

    /// Reads the counters now. `flushing`: a connection that wrote before (a fill) and stays open, whose
    /// statistics would otherwise land inside the measurement.
    init(_ url: String, flushing earlier: PGConnection? = nil) throws {
        self.url = url
        if let earlier {
            _ = try earlier.query("select pg_stat_force_next_flush()")
            usleep(200_000)
        }
        (rows, lsn) = try WriteMeter.read(url, settled: false)
    }

    /// Rows and WAL bytes written since this reading, per `units` (delivered notifications).
    /// `flushing`: a connection that did the work and stays open, whose statistics must be flushed
    /// (an idle backend may otherwise hold them for up to 10 s).
    func per(_ units: Int, flushing work: PGConnection? = nil) throws -> (rows: Double, wal: Double) {
        if let work { _ = try work.query("select pg_stat_force_next_flush()") }
        let (now, lsnNow) = try WriteMeter.read(url, settled: true)
        let db = try PGConnection(url)
        defer { db.close() }
        let wal = try db.query("select pg_wal_lsn_diff(\(lsnNow)::pg_lsn, \(lsn)::pg_lsn)::int8 as n").first?["n"].int ?? 0
        let n = Double(max(units, 1))
        return (Double(now - rows) / n, Double(wal) / n)
    }

    static func read(_ url: String, settled: Bool) throws -> (Int, String) {
        let db = try PGConnection(url)
        defer { db.close() }
        func sample() throws -> (Int, String) {
            _ = try db.query("select pg_stat_clear_snapshot()")
            let row = try db.query("""
                select (tup_inserted + tup_updated + tup_deleted)::int8 as n, pg_current_wal_lsn()::text as lsn
                  from pg_stat_database where datname = current_database()
                """).first
            return (row?["n"].int ?? 0, row?["lsn"].string ?? "0/0")
        }
        var last = try sample()
        guard settled else { return last }
        // An idle backend flushes its statistics within a second: wait that long, then until they
        // stop moving (at most ~3 s more). The WAL position is the one read first.
        usleep(1_100_000)
        let lsn = last.1
        last = try sample()
        for _ in 0..<12 {
            usleep(250_000)
            let next = try sample()
            if next.0 == last.0 { return (next.0, lsn) }
            last = next
        }
        return (last.0, lsn)
    }

    /// "12.0 rows, 2,302 B WAL"
    static func describe(_ x: (rows: Double, wal: Double)) -> String {
        String(format: "%.1f rows, %.0f B WAL", x.rows, x.wal)
    }
}
