import ArgumentParser
import Foundation
import HeraldCore
import HeraldWorker

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one pass: claim due notifications, decide, send, record, print a summary.",
        discussion: """
            Prints one JSON summary on stdout, e.g. {"ok":true,"exit_code":0,"processed":5,"sent":2,…}, \
            and structured logs on stderr; "ok" is true only when the pass exits 0. A dry run prints the \
            same one document, with each due row's "decisions" and what it did "not_run". Many passes \
            may run at once: rows are claimed with SKIP LOCKED. A variable named HERALD_* that herald \
            does not read is warned of.
            Exit codes: 0 done (failed deliveries are retried by later passes), 1 configuration error, \
            2 database error, 3 interrupted by \(StopSignal.names.joined(separator: "/")) (in-flight rows \
            recorded first), 4 degraded (delivery ran but a phase failed; see phase_errors).
            With --follow the pass then keeps delivering until --deadline, within a notification's \
            round trip of a row coming due (HERALD_FOLLOW_LISTEN, HERALD_FOLLOW_POLL_MS).
            """)

    @Option(help: "Rows claimed per batch.")
    var batchSize: Int = 50

    @Option(help: "Batches to claim in this pass (default 1).")
    var maxBatches: Int?

    @Flag(help: "Claim batch after batch until nothing is due or the deadline passes.")
    var drain = false

    @Option(help: "Seconds after which no new batch is claimed; keep it inside the cron interval.")
    var deadline: Double = 240

    @Flag(help: ArgumentHelp("After the phases, keep delivering until --deadline, woken as rows come due (LISTEN, or polling through a transaction pooler); implies --drain.",
                             discussion: "Overlap followers so one always listens: one every five minutes with --deadline 320."))
    var follow = false

    @Option(help: "Decide as if it were this instant (ISO 8601 with a zone, e.g. 2026-01-25T03:00:00Z).")
    var now: String?

    @Option(help: ArgumentHelp("Run only these phases, comma-separated, from: \(Phase.allCases.map(\.rawValue).joined(separator: ", ")).",
                               valueName: "phases"))
    var only: String?

    @Flag(help: "Decide everything and print one summary of what would be sent and what was not run; change nothing.")
    var dryRun = false

    @Option(help: "Skip pending rows older than this many hours as expired.")
    var maxAge: Double = 24

    @Option(help: "Write the pass's figures here in the Prometheus text format (node_exporter textfile collector).")
    var metricsFile: String?

    @Option(help: "Push the pass's metrics to this Prometheus Pushgateway (or HERALD_PUSHGATEWAY_URL).")
    var pushgateway: String?

    @Option(help: "Work in hash partition K of N only (`herald migrate --queue-partitions N`), e.g. 0/4.")
    var shard: String?

    @OptionGroup var common: CommonOptions

    func validate() throws {
        if let shard, Shard(shard) == nil {
            throw ValidationError("--shard must be K/N with 0 <= K < N, 2 <= N <= \(Shard.maxCount), e.g. 0/4; got '\(shard)'")
        }
        guard batchSize >= 1 && batchSize <= 100_000 else { throw ValidationError("--batch-size must be between 1 and 100000") }
        if let m = maxBatches, m < 1 { throw ValidationError("--max-batches must be at least 1") }
        if drain && maxBatches != nil { throw ValidationError("use either --max-batches or --drain, not both") }
        if follow && maxBatches != nil { throw ValidationError("--follow delivers until the deadline: leave out --max-batches") }
        if follow && dryRun { throw ValidationError("--follow sends: it cannot be a --dry-run") }
        if follow, only != nil, try !phases().contains(.deliver) {
            throw ValidationError("--follow keeps delivering: --only must include deliver")
        }
        // Finite and bounded: the deadline is compared with the lease as whole seconds.
        guard deadline > 0 && deadline <= 31_536_000 else {
            throw ValidationError("--deadline must be a positive number of seconds, at most 31536000 (a year)")
        }
        guard maxAge > 0 && maxAge.isFinite else { throw ValidationError("--max-age must be a positive number of hours") }
        if let now, ISO8601.parse(now) == nil {
            throw ValidationError("--now must be an ISO 8601 instant with a zone, e.g. 2026-01-25T03:00:00Z; got '\(now)'")
        }
        _ = try phases()
    }

    func phases() throws -> [Phase] {
        guard let only else { return Phase.allCases }
        var out: [Phase] = []
        for name in only.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            guard let p = Phase(rawValue: name) else {
                throw ValidationError("unknown phase '\(name)'; phases: \(Phase.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            out.append(p)
        }
        guard !out.isEmpty else { throw ValidationError("--only needs at least one phase") }
        return out
    }

    func run() throws {
        let (settings, logger) = try common.start()
        var options = PassOptions()
        options.batchSize = batchSize
        options.shard = shard.flatMap(Shard.init)
        options.drain = drain || follow
        options.maxBatches = drain || follow ? nil : (maxBatches ?? 1)
        options.follow = follow
        options.deadline = deadline
        options.now = now.flatMap(ISO8601.parse)
        options.phases = try phases()
        options.dryRun = dryRun
        options.maxAge = maxAge * 3600
        options.metricsFile = metricsFile
        options.pushgateway = pushgateway
        options.progress = drain && isatty(STDERR_FILENO) == 1 && !common.quiet

        StopSignal.install()
        let (summary, code) = Runner(settings: settings, options: options, logger: logger).run()
        printJSON(summary.json.jsonText)
        if code != .ok { throw ExitNow(code: code) }
    }
}

