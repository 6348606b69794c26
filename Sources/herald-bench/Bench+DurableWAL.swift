import Foundation
import HeraldCore
import HeraldPostgres
import HeraldWorker

/// Section 1's WAL as users run PostgreSQL: herald's drain, the bare claim + record and PgQueuer again,
/// on a second server with PostgreSQL's durability defaults (`fsync`, `synchronous_commit` and
/// `full_page_writes` on) and `wal_level = logical`, Supabase's setting. Each drain starts right after
/// a checkpoint, so each page it touches logs one full-page image: what a drain pays in the checkpoint
/// interval it falls in. WAL is counted, not timed: one drain each.
extension Bench {
    func durableWAL(rows: Int, batch: Int, now: Date) throws {
        guard let server = durableServerURL else {
            print("  WAL with durability defaults: skipped — HERALD_BENCH_DURABLE_URL is not set (make bench starts that server)")
            return
        }
        let url = try freshDatabase("herald_bench_durable", on: server)
        let db = try PGConnection(url)
        defer { db.close() }
        let settings = try db.query("""
            select current_setting('wal_level') as level, current_setting('full_page_writes') as fpw,
                   current_setting('fsync') as fsync, current_setting('synchronous_commit') as sync
            """).first
        try fill(db, rows: rows, channel: "in_app", at: now)
        try db.execute("checkpoint")
        let meter = try WriteMeter(url, flushing: db)
        let (summary, _) = try pass(Settings(["DATABASE_URL": url, "HERALD_CHANNEL_IN_APP": "log"]),
                                    drainOptions(batch: batch, now: now))
        let herald = try meter.per(summary.sent)
        let plain = try bareClaimRecord(url, rows: rows, batch: batch, now: now, checkpoint: true).writes
        let (queuer, _, skipped) = pgQueuer(rows: rows, batch: 500, on: server, checkpoint: true)

        print("  WAL per notification with wal_level=\(settings?["level"].string ?? "?"), full_page_writes=\(settings?["fpw"].string ?? "?"), "
              + "fsync=\(settings?["fsync"].string ?? "?"), synchronous_commit=\(settings?["sync"].string ?? "?") (each drain after a checkpoint):")
        print("    herald \(WriteMeter.describe(herald)); bare claim + record \(WriteMeter.describe(plain)); "
              + (queuer.map { "PgQueuer \(WriteMeter.describe($0.writes))" } ?? "PgQueuer skipped — \(skipped ?? "?")"))
        print(String(format: "    herald's WAL is %.2f× the bare claim + record's", herald.wal / max(plain.wal, 1))
              + (queuer.map { String(format: ", %.2f× PgQueuer's", herald.wal / max($0.writes.wal, 1)) } ?? ""))
    }
}
