import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport

/// Section 9, "a morning": 100,000 people in one zone whose forecasts are due at 08:00, in 500 places,
/// one device each (half APNs, half FCM), as `Morning` runs it (Tests/Support/Morning.swift: passes
/// every five minutes from 07:00 against a weather fake and an insight-service fake, then a follower
/// that delivers at 08:00 through fake APNs and FCM over TLS and HTTP/2), each herald a process of its
/// own. Beside it, in the same run: `h2load` replaying herald's own last APNs and FCM requests at the
/// same fakes at once (the providers' ceiling on this machine), and the bare claim + record of as many
/// rows (the database path's floor). HERALD_BENCH_MORNING_PEOPLE and _PLACES change the scale,
/// HERALD_BENCH_MORNING_BATCH the passes' `--batch-size` (crontab.example's 200).
extension Bench {
    func morning() throws {
        let env = ProcessInfo.processInfo.environment
        let people = env["HERALD_BENCH_MORNING_PEOPLE"].flatMap { Int($0) } ?? 100_000
        let places = env["HERALD_BENCH_MORNING_PLACES"].flatMap { Int($0) } ?? 500
        let url = try freshDatabase("herald_bench_morning")
        print("9. a morning: \(people) people in one zone, forecasts due at 08:00, \(places) places, one device each (half APNs, half FCM)")
        let fakes = try MorningFakes()
        defer { fakes.shutdown() }
        var morning = Morning(people: people, places: places, herald: herald)
        morning.batchSize = env["HERALD_BENCH_MORNING_BATCH"].flatMap { Int($0) } ?? morning.batchSize
        print("  (passes and the follower at --batch-size \(morning.batchSize))")
        let f = try morning.run(url: url, fakes: fakes)
        printPriming(f, people: people, places: places)
        printDelivery(f, fakes, people: people, url: url, batch: morning.batchSize)
        print("")
    }

    private func printPriming(_ f: MorningFigures, people: Int, places: Int) {
        Bench.line("weather requests", "\(f.weatherRequests)", "places", "\(places)",
                   "aim ≤ \(places): \(f.weatherRequests <= places ? "✓" : "not met")")
        Bench.line("insight calls", "\(f.insightCalls)", "people", "\(people)", "")
        for p in f.primingPasses {
            let words = ["forecasts", "weather_fetched", "weather_reused", "forecast_insights", "forecast_insight_failed",
                         "forecast_templated_words"].compactMap { k in p.generated[k].flatMap { $0 > 0 ? "\(k) \($0)" : nil } }
            let at = String(ISO8601.string(p.now ?? Date()).dropFirst(11).prefix(5))
            let mb = p.peakMemoryMB.map { String(format: "%.1f", $0) } ?? "?"
            let errors = p.phaseErrors.sorted { $0.key < $1.key }.map { "\($0.key) failed: \($0.value.prefix(120))" }
            print("    pass at \(at): \(String(format: "%.1f", p.seconds)) s, \(mb) MB; \((words + errors).joined(separator: ", ")); \(p.enqueued ?? 0) enqueued")
        }
        let longest = f.primingPasses.map(\.seconds).max() ?? 0
        let done = f.enqueuedBeforeEight == people && longest < 300
        Bench.line("pre-priming, \(f.primingPasses.count) passes from 07:00", "\(f.enqueuedBeforeEight) enqueued", "people", "\(people)",
                   "(longest pass \(String(format: "%.1f", longest)) s of its 300; the follower following "
                   + "\(f.followingBeforeEight.map { String(format: "%.1f", $0) } ?? "?") s before 08:00) aim: done before 08:00: \(done ? "✓" : "not met")")
    }

    private func printDelivery(_ f: MorningFigures, _ fakes: MorningFakes, people: Int, url: String, batch: Int) {
        let seconds = f.secondsToLastPush ?? .infinity
        Bench.line("08:00 → last push accepted", String(format: "%.1f s", seconds), "pushes", "\(f.pushes) to \(f.distinctDevices) devices",
                   "(\(f.sentRows) rows sent) aim ≤ 60 s, all \(people): \(seconds <= 60 && f.distinctDevices == people ? "✓" : "not met")")
        let rate = f.pushesPerSecond ?? 0
        var ceiling: (H2Load, String)?
        if H2Load.installed {
            for (clients, streams) in [(1, 100), (4, 100)] {
                do {
                    let run = try H2Load.ceiling(fakes, total: people, clients: clients, streams: streams)
                    if run.rate > ceiling?.0.rate ?? 0 { ceiling = (run, "\(clients) connections × \(streams) streams to each") }
                } catch {
                    print("  (h2load with \(clients) connections: \(error))")
                }
            }
        }
        if let (c, how) = ceiling {
            Bench.line("pushes a second", "\(Int(rate))/s", "h2load, the same fakes", "\(Int(c.rate))/s (\(c.succeeded) accepted; \(how))",
                       "\(Int(rate / c.rate * 100)) % of it; aim ≥ 50 %: \(rate >= c.rate / 2 ? "✓" : "not met")")
        } else {
            Bench.line("pushes a second", "\(Int(rate))/s", "h2load", H2Load.installed ? "not measured"
                       : "not installed (scripts/deps.sh --bench installs nghttp2-client)", "")
        }
        if let own = try? sendlessDrain(url, batch: batch) {
            Bench.line("herald's path with no sends", "\(Int(rate))/s", "the same rows again, log adapter",
                       "\(Int(Double(people) / own)) rows/s", "(\(Int(rate * own / Double(people) * 100)) % of it: what the sends add; "
                       + "\(ceiling.map { "\(Int(Double(people) / own / $0.0.rate * 100)) % of the h2load ceiling" } ?? "") )")
        }
        if let floor = try? bareClaimRecord(url, rows: people, batch: 200, now: Morning.eight) {
            Bench.line("database path, bare floor", "\(Int(rate))/s", "bare claim + record, batch 200",
                       "\(Int(floor.rate)) rows/s", String(format: "(%.0f %% of it)", rate / floor.rate * 100))
        }
        let peak = f.peakMemoryMB ?? .infinity
        Bench.line("peak RSS of the herald processes", String(format: "%.1f MB", peak), "the follower",
                   f.follower?.peakMemoryMB.map { String(format: "%.1f MB", $0) } ?? "?",
                   "aim ≤ 256 MB: \(peak <= 256 ? "✓" : "not met")")
    }

    /// The morning's rows made due again, as at 08:00 (statistics taken while all are pending), and
    /// delivered by `herald run --drain --only deliver` with push on the log adapter: herald's claim,
    /// context, decisions and records of the same rows, with no request. Its seconds.
    func sendlessDrain(_ url: String, batch: Int) throws -> Double {
        let db = try PGConnection(url)
        defer { db.close() }
        try db.execute("""
            update notification_queue set status = 'pending', attempts = 0, sent_at = null, locked_until = null, locked_by = null
             where kind = 'daily_forecast'
            """)
        try db.execute("delete from notification_deliveries")
        try db.execute("vacuum analyze notification_queue")
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = url
        env["HERALD_CHANNEL_PUSH"] = "log"
        env["HERALD_LOG_ADAPTER_FILE"] = "/dev/null"
        return try Bench.seconds {
            try runProcess(herald, ["run", "--only", "deliver", "--drain", "--batch-size", "\(batch)", "--quiet",
                                    "--now", "2026-01-25T08:00:01Z"], env: env)
        }
    }
}
