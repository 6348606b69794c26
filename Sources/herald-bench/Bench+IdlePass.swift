import Foundation

/// Section 3: a pass with nothing to do, process start to exit, beside starting the binary.
extension Bench {
    func idlePass() throws {
        let url = try freshDatabase("herald_bench_idle")
        print("3. a pass with nothing to do, process start to exit (median of 15)")
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = url
        env["HERALD_CHANNEL_PUSH"] = "log"
        var pass: [Double] = [], start: [Double] = []
        for _ in 0..<15 {
            pass.append(try Bench.seconds { try spawn(herald, ["run", "--quiet"], env: env) })
            start.append(try Bench.seconds { try spawn(herald, ["--help"], env: env) })
        }
        Bench.line("herald run (empty queue)", String(format: "%.1f ms", median(pass) * 1000), "herald --help",
                   String(format: "%.1f ms", median(start) * 1000), "(aim < 50 ms)")
        print("")
    }
}
