import Foundation
import HeraldTestSupport

/// `h2load` (nghttp2's HTTP/2 load generator; `scripts/deps.sh --bench` installs it) replaying one of
/// herald's own requests at a fake: what the fake, TLS and HTTP/2 allow on this machine with no herald
/// in the way.
///
///     let run = try H2Load.run(replaying: apns.requests.last!, at: apns.baseURL, requests: 50_000,
///                              clients: 4, streams: 100)
///     run.succeeded, run.seconds
struct H2Load {
    var succeeded: Int
    var seconds: Double
    var rate: Double { Double(succeeded) / max(seconds, 0.001) }

    static var installed: Bool { Tools.succeeds("h2load", ["--version"]) }

    /// A process sending `requests` copies of `request` (its method, path, headers and body) to `base`,
    /// over `clients` connections of at most `streams` concurrent streams each.
    static func start(replaying request: FakeRequest, at base: String, requests: Int, clients: Int,
                      streams: Int, directory: String) throws -> (Process, Pipe) {
        let body = directory + "/h2load-\(UUID()).body"
        try Data(request.body).write(to: URL(fileURLWithPath: body))
        var args = ["-n", "\(requests)", "-c", "\(clients)", "-m", "\(streams)", "-t", "1", "-d", body]
        for (name, value) in request.headers where !["host", "content-length", "user-agent", "te"].contains(name) {
            args += ["-H", "\(name): \(value)"]
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["h2load"] + args + [base + request.path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, out)
    }

    /// Waits for a started run; what it reported ("finished in 1.2s", "status codes: 49990 2xx, …").
    static func finish(_ p: Process, _ out: Pipe) throws -> H2Load {
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0, let seconds = number(after: "finished in ", in: text),
              let succeeded = number(after: "status codes: ", in: text) else {
            throw BenchError("h2load failed (exit \(p.terminationStatus)): \(text.suffix(300))")
        }
        // "finished in 850.12ms" or "2.35s"
        let unit = text.range(of: "finished in ").map { text[$0.upperBound...].drop { $0 == "." || $0.isNumber } } ?? ""
        return H2Load(succeeded: Int(succeeded), seconds: unit.hasPrefix("ms") ? seconds / 1000 : seconds)
    }

    /// The number that follows `prefix` in `text`.
    static func number(after prefix: String, in text: String) -> Double? {
        guard let r = text.range(of: prefix) else { return nil }
        return Double(String(text[r.upperBound...].prefix { $0 == "." || $0.isNumber }))
    }

    /// Replays APNs's and FCM's last requests at once, half of `total` each, over `clients` connections
    /// of `streams` streams to each fake; the pushes both accepted and the time the slower took.
    static func ceiling(_ fakes: MorningFakes, total: Int, clients: Int, streams: Int) throws -> H2Load {
        let (apns, fcm) = fakes.pushes
        guard let a = apns.last, let f = fcm.last else { throw BenchError("no push to replay") }
        let started = [
            try start(replaying: a, at: fakes.apns.baseURL, requests: total / 2, clients: clients, streams: streams,
                      directory: fakes.certificates.directory),
            try start(replaying: f, at: fakes.fcm.baseURL, requests: total - total / 2, clients: clients, streams: streams,
                      directory: fakes.certificates.directory),
        ]
        let runs = try started.map { try finish($0.0, $0.1) }
        return H2Load(succeeded: runs.map(\.succeeded).reduce(0, +), seconds: runs.map(\.seconds).max() ?? 0)
    }
}
