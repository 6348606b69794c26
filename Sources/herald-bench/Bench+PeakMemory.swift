import Foundation
import HeraldCore
import HeraldPostgres

/// Section 4: the peak memory of a pass at batch 10,000, beside a pass with nothing to do.
extension Bench {
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
}
