import Foundation
import HeraldPostgres

/// The CPU time a piece of work cost, by process: the client (this process, or a child that reports its
/// own), the PostgreSQL server's client backends, and its background processes (WAL writer,
/// checkpointer, autovacuum …). Read from /proc: a backend that exited is counted through the
/// postmaster, whose reaped children's time (cutime, cstime) grows by it.
///
///     let cpu = try CPUMeter(url)
///     … the drain …
///     let account = try cpu.per(rows)   // µs per notification: client, backends, background
struct CPUMeter {
    /// µs of CPU per notification, by process.
    struct Account {
        var client: Double
        var backends: Double
        var background: Double
        var server: Double { backends + background }
    }

    private let postmaster: Int32
    private let start: Sample

    /// CPU seconds so far: this process, the server's client backends (live, and reaped through the
    /// postmaster), its background processes.
    struct Sample {
        var client: Double
        var backends: Double
        var background: Double
    }

    init(_ url: String) throws {
        let db = try PGConnection(url)
        defer { db.close() }
        let backend = Int32(try db.query("select pg_backend_pid() as pid").first?["pid"].int ?? 0)
        guard let parent = CPUMeter.stat(backend)?.parent, parent > 1 else {
            throw BenchError("cannot read the PostgreSQL server's processes in /proc")
        }
        postmaster = parent
        start = CPUMeter.sample(postmaster)
    }

    /// µs per `units` since the start. `clientSeconds`: the client's own CPU time when it was another
    /// process (it reported it); else this process's.
    func per(_ units: Int, clientSeconds: Double? = nil) -> Account {
        let now = CPUMeter.sample(postmaster)
        let n = Double(max(units, 1)) / 1e6
        return Account(client: (clientSeconds ?? (now.client - start.client)) / n,
                       backends: (now.backends - start.backends) / n,
                       background: (now.background - start.background) / n)
    }

    /// A backend reaped while the sample is read would be lost: its time is not yet the postmaster's
    /// when that is read, and gone from /proc when its own would be (a drain's connections close as it
    /// ends: a sample so taken once read half a drain's backend time). So the postmaster's reaped time
    /// is read before and after the children, and the sample read again until the two agree.
    static func sample(_ postmaster: Int32) -> Sample {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let client = seconds(usage.ru_utime) + seconds(usage.ru_stime)
        var sample = Sample(client: client, backends: 0, background: 0)
        for _ in 0..<20 {
            // The postmaster's own time is idle work; its reaped children are exited backends and
            // autovacuum workers, counted as backends.
            let reaped = stat(postmaster)?.reaped ?? 0
            var backends = reaped, background = 0.0
            for pid in children(of: postmaster) {
                guard let s = stat(pid) else { continue }
                if isClientBackend(pid) { backends += s.own } else { background += s.own }
            }
            sample = Sample(client: client, backends: backends, background: background)
            if stat(postmaster)?.reaped ?? 0 == reaped { break }
        }
        return sample
    }

    /// A process's CPU seconds from /proc/PID/stat: its own, its reaped children's, and its parent.
    static func stat(_ pid: Int32) -> (own: Double, reaped: Double, parent: Int32)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command's closing parenthesis: state (3), ppid (4), … utime (14), stime (15),
        // cutime (16), cstime (17).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let parent = Int32(fields[1]) else { return nil }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        let value = { (i: Int) in (Double(fields[i - 3]) ?? 0) / tick }
        return (value(14) + value(15), value(16) + value(17), parent)
    }

    /// The live children of `parent`.
    static func children(of parent: Int32) -> [Int32] {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        return pids.filter { stat($0)?.parent == parent }
    }

    /// Whether a server process serves a client: its title names the client's address, "postgres: user
    /// db 127.0.0.1(port) …". A process that has exited but is not yet reaped has no title any more; it
    /// is counted as the postmaster counts it once reaped, with the backends (a drain's connections
    /// close as it ends, so its backends are often in that state when the drain's sample is taken).
    static func isClientBackend(_ pid: Int32) -> Bool {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
        return data.isEmpty || String(decoding: data, as: UTF8.self).contains("(")
    }

    static func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
}
