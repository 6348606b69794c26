import Crypto
import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// Real HTTP to a loopback receiver that checks Standard Webhooks signatures.
@Suite struct WebhookDeliveryTests {
    static let secretBytes = Array("herald-test-secret-0123456789abcdef".utf8)
    static var secret: String { "whsec_" + Data(secretBytes).base64EncodedString() }

    /// Verifies a request the way a Standard Webhooks receiver does.
    static func verify(_ r: FakeRequest) -> Bool {
        func header(_ n: String) -> String? { r.headers.first { $0.0 == n }?.1 }
        guard let id = header("webhook-id"), let ts = header("webhook-timestamp"),
              let sig = header("webhook-signature") else { return false }
        var signed = Array("\(id).\(ts).".utf8)
        signed += r.body
        let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secretBytes))
        let expected = "v1," + Data(mac).base64EncodedString()
        return sig.split(separator: " ").contains { $0 == expected }
    }

    static func settings(_ server: FakeHTTPServer) -> [String: String] {
        ["WEBHOOK_URL": server.baseURL + "/hooks/herald", "WEBHOOK_SECRET": secret]
    }

    @Test func signedDeliveryWithQueueIdAsWebhookId() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer { _ in FakeResponse(status: 204) }
            defer { server.shutdown() }
            let p = try f.profile()
            let id = try f.enqueue(to: p, channel: "webhook", kind: "reminder", at: seedInstant)
            let (summary, code) = Worker(url: tdb.url, settings: Self.settings(server)).run(now: seedInstant)
            #expect(code == .ok)
            #expect(summary.sent == 1)
            let requests = server.requests
            #expect(requests.count == 1)
            let r = try #require(requests.first)
            #expect(r.path == "/hooks/herald")
            #expect(Self.verify(r))
            #expect(r.headers.first { $0.0 == "webhook-id" }?.1 == id.uuidString.lowercased())
            let body = try JSONValue.parse(Data(r.body))
            #expect(body["type"]?.stringValue == "notification.reminder")
            #expect(body["data"]?["id"]?.stringValue == id.uuidString.lowercased())
            #expect(try f.row(id)["status"].string == "sent")
        }
    }

    @Test func serverErrorIsRetriedWithBackoffThenSent() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let calls = Counter()
            let server = try FakeHTTPServer { _ in
                calls.next() == 1 ? FakeResponse(status: 503, body: Array("busy".utf8)) : FakeResponse(status: 200)
            }
            defer { server.shutdown() }
            let p = try f.profile()
            let id = try f.enqueue(to: p, channel: "webhook", at: seedInstant)
            let worker = Worker(url: tdb.url, settings: Self.settings(server))

            _ = worker.run(now: seedInstant)
            var row = try f.row(id)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == false)
            #expect((row["last_error"].string ?? "").contains("503"))
            let retryAt = try #require(row["run_after"].date)
            let delay = retryAt.timeIntervalSince(seedInstant)
            #expect(delay >= 24 && delay <= 37, "30 s ± 20 % for the first retry, got \(delay)")

            // Not due yet: nothing happens.
            _ = worker.run(now: seedInstant.addingTimeInterval(5))
            #expect(server.requests.count == 1)

            _ = worker.run(now: retryAt.addingTimeInterval(1))
            row = try f.row(id)
            #expect(row["status"].string == "sent")
            #expect(row["attempts"].int == 2)
            #expect(server.requests.count == 2)
            // Both attempts carried the same webhook-id, so a receiver can drop a repeat.
            let ids = Set(server.requests.compactMap { r in r.headers.first { $0.0 == "webhook-id" }?.1 })
            #expect(ids == [id.uuidString.lowercased()])
        }
    }

    @Test func retryAfterIsHonoured() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer { _ in FakeResponse(status: 429, headers: [("retry-after", "120")]) }
            defer { server.shutdown() }
            let id = try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant)
            _ = Worker(url: tdb.url, settings: Self.settings(server)).run(now: seedInstant)
            let row = try f.row(id)
            let delay = try #require(row["run_after"].date).timeIntervalSince(seedInstant)
            #expect(delay >= 119 && delay <= 125)
        }
    }

    /// providers.md §7: an answer other than a redirect, 410 or a refused secret is a failure to retry
    /// (a 404 or 422 while the receiver deploys), with its reason.
    @Test func clientErrorIsRetriedWithTheReason() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let server = try FakeHTTPServer { _ in
                FakeResponse.json(422, #"{"error":"unknown recipient"}"#)
            }
            defer { server.shutdown() }
            let id = try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant)
            _ = Worker(url: tdb.url, settings: Self.settings(server)).run(now: seedInstant)
            let row = try f.row(id)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == false)
            #expect((row["last_error"].string ?? "").contains("422"))
            #expect((row["last_error"].string ?? "").contains("unknown recipient"))
            let d = try db.query("select outcome, http_status from notification_deliveries where queue_id = \(id)").first
            #expect(d?["outcome"].string == "retry")
            #expect(d?["http_status"].int == 422)
            // Claimed again when its backoff is over.
            _ = Worker(url: tdb.url, settings: Self.settings(server)).run(now: seedInstant.addingTimeInterval(3600))
            #expect(server.requests.count == 2)
        }
    }

    /// A batch's requests queue for connections, so they can run past one send timeout: none starts once
    /// the rest of the batch's lease could not cover a whole send. Those rows go back to the queue with
    /// no attempt charged, before another pass may take them over — never sent by two passes. The
    /// receiver holds the first answer until that moment has passed, so exactly one request goes out.
    @Test func noRequestStartsWhenTheLeaseCouldNotCoverIt() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let gate = FakeGate()
            let server = try FakeHTTPServer { _ in FakeResponse(status: 204, gate: gate) }
            defer { server.shutdown() }
            var ids: [UUID] = []
            for _ in 0..<6 { ids.append(try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant)) }
            var settings = Self.settings(server)
            settings["HERALD_CONNECTIONS_PER_HOST"] = "1"   // one request at a time
            settings["WEBHOOK_TIMEOUT_SECONDS"] = "10"
            settings["HERALD_LEASE_SECONDS"] = "13"         // no request starts 13 − 10 − 1 = 2 s after the claim
            let worker = Worker(url: tdb.url, settings: settings)
            let shift = ClockShift()
            let pass = InBackground {
                worker.run(now: seedInstant, batchSize: 6) { $0.deadline = 0.5; $0.clockShift = shift }
            }
            // The first request went out after the claim; its answer goes 2.5 s after that on the pass's
            // clock, when the lease can no longer cover another send.
            #expect(gate.waitUntilHeld(1))
            shift.advance(by: 2.5)
            gate.open()
            let (summary, code) = pass.value()
            #expect(code == .ok, "\(summary.error ?? "")")
            let sent = server.requests.count
            #expect(sent == 1, "\(sent - 1) requests started once the lease could no longer cover them")
            let released = try ids.map { try f.row($0) }.filter { $0["status"].string == "pending" }
            #expect(released.count == 6 - sent)
            #expect(released.allSatisfy { $0["attempts"].int == 0 })
            #expect(try f.count("select count(*)::int from notification_events where event = 'released' and reason = 'lease_ending'") == 6 - sent)
        }
    }

    /// A receiver that refuses herald's signature (401) would refuse every webhook: the first answer stops
    /// the pass calling it; every row waits for a later pass with no attempt charged, the error naming
    /// WEBHOOK_SECRET, and the pass ends degraded (exit 4).
    @Test func aRefusedSecretStopsThePassCallingTheReceiverAndChargesNoAttempt() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let server = try FakeHTTPServer { _ in FakeResponse.json(401, #"{"error":"bad signature"}"#) }
            defer { server.shutdown() }
            var ids: [UUID] = []
            for _ in 0..<5 { ids.append(try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant)) }
            let (summary, code) = Worker(url: tdb.url, settings: Self.settings(server)).run(now: seedInstant, batchSize: 1, drain: true)
            #expect(code == .degraded)
            #expect(summary.breakerOpen.contains(.webhook))
            #expect(summary.phaseErrors[.phase(.deliver)]?.contains("webhook refused herald's credentials or configuration (http_401)") == true)
            #expect(server.requests.count == 1, "no request after the first refusal")
            for id in ids {
                let row = try f.row(id)
                #expect(row["status"].string == "pending")
                #expect(row["attempts"].int == 0)
                let wait = try #require(row["run_after"].date).timeIntervalSince(seedInstant)
                #expect(wait >= 299 && wait <= 301)
            }
            #expect((try f.row(ids[0])["last_error"].string ?? "").contains("WEBHOOK_SECRET"))
            #expect(try f.count("select count(*)::int from notification_deliveries") == 1)
        }
    }

    @Test func retriesStopAtMaxAttempts() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer { _ in FakeResponse(status: 500) }
            defer { server.shutdown() }
            let id = try f.enqueue(to: try f.profile(), channel: "webhook", at: seedInstant, maxAttempts: 3)
            var now = seedInstant
            for _ in 0..<5 {
                _ = Worker(url: tdb.url, settings: Self.settings(server)).run(now: now)
                now = now.addingTimeInterval(7200)
            }
            let row = try f.row(id)
            #expect(row["status"].string == "failed")
            #expect(row["permanent"].bool == true)
            #expect(row["attempts"].int == 3)
            #expect(server.requests.count == 3)
            #expect((row["last_error"].string ?? "").contains("gave up after 3 attempts"))
        }
    }

    @Test func connectionsPerHostCapWhatAnHTTP1ReceiverSees() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer { _ in FakeResponse(status: 200, delay: 0.05) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<30 { recipients.append(try f.profile()) }
            try f.enqueueMany(30, to: recipients, channel: "webhook", at: seedInstant)
            var settings = Self.settings(server)
            settings["HERALD_CONNECTIONS_PER_HOST"] = "3"
            let (summary, code) = Worker(url: tdb.url, settings: settings).run(now: seedInstant, batchSize: 30)
            #expect(code == .ok)
            #expect(summary.sent == 30)
            #expect(server.peakInFlight <= 3, "\(server.peakInFlight) requests at once over 3 connections")
            #expect(server.peakInFlight >= 2)
            #expect(server.connectionCount <= 3)
        }
    }

    @Test func concurrentPassesDeliverEveryRowExactlyOnce() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer(threads: 2) { _ in FakeResponse(status: 200, delay: 0.002) }
            defer { server.shutdown() }
            // A recipient's rows are held by one pass at a time (the rate limits): with more recipients than
            // a batch holds, a batch leaves others for the other passes to take meanwhile.
            var recipients: [UUID] = []
            for _ in 0..<400 { recipients.append(try f.profile()) }
            try f.enqueueMany(3000, to: recipients, channel: "webhook", at: seedInstant.addingTimeInterval(-60))
            let worker = Worker(url: tdb.url, settings: Self.settings(server))
            // No rate limits here: this test counts deliveries, not pacing.
            try tdb.setRateLimits()

            let passes = 4
            let results = Results()
            inParallel(passes) { _ in
                let (s, code) = worker.run(now: seedInstant, batchSize: 200, drain: true)
                results.add(s, code)
            }
            #expect(results.codes.allSatisfy { $0 == .ok })
            #expect(results.sent == 3000)
            let ids = server.requests.compactMap { r in r.headers.first { $0.0 == "webhook-id" }?.1 }
            #expect(ids.count == 3000)
            #expect(Set(ids).count == 3000, "a row was delivered twice")
            #expect(try f.count("select count(*)::int from notification_queue where status <> 'sent'") == 0)
            #expect(try f.count("select count(*)::int from notification_deliveries") == 3000)
            #expect(results.batchesByPass.filter { $0 > 0 }.count >= 2, "the passes should have shared the work")
        }
    }

    @Test func killedPassIsFinishedByALaterPassAfterTheLease() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            // The receiver answers slowly, so the pass is mid-flight when it is killed.
            let server = try FakeHTTPServer { _ in FakeResponse(status: 200, delay: 1.0) }
            defer { server.shutdown() }
            // One row per recipient, so no rate limit holds any back: all 40 are in flight together.
            var recipients: [UUID] = []
            for _ in 0..<40 { recipients.append(try f.profile()) }
            try f.enqueueMany(40, to: recipients, channel: "webhook", at: seedInstant)

            let process = try HeraldBinary.start(
                ["run", "--now", ISO8601.string(seedInstant), "--batch-size", "40", "--deadline", "1", "--quiet"],
                env: ["DATABASE_URL": tdb.url, "WEBHOOK_URL": server.baseURL + "/hooks", "WEBHOOK_SECRET": Self.secret,
                      "HERALD_LEASE_SECONDS": "3", "WEBHOOK_TIMEOUT_SECONDS": "1"])
            // Wait until the pass has claimed its batch, then kill it without a chance to record.
            guard try f.waitFor("select count(*)::int from notification_queue where locked_until is not null", atLeast: 40) else {
                process.terminate()
                Issue.record("the pass never claimed its batch")
                return
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 40)

            // Before the lease expires, another pass leaves the rows alone.
            let worker = Worker(url: tdb.url, settings: ["WEBHOOK_URL": server.baseURL + "/hooks", "WEBHOOK_SECRET": Self.secret])
            let early = worker.run(now: seedInstant, batchSize: 100)
            #expect(early.0.processed == 0)
            // 4 s later, on the clock: the killed pass's leases of 3 s have expired.
            let (later, code) = worker.run(now: seedInstant, batchSize: 100) { $0.clockShift = ClockShift(4) }
            #expect(code == .ok)
            #expect(later.recovered == 40)
            #expect(later.sent == 40)
            #expect(try f.count("select count(*)::int from notification_queue where status = 'sent'") == 40)
            #expect(try f.count("select count(*)::int from notification_events where event = 'recovered'") == 40)
        }
    }
}

/// A thread-safe counter for fake handlers with state.
final class Counter: @unchecked Sendable {
    private var n = 0
    private let lock = NSLock()
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        n += 1
        return n
    }
}

final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var sent = 0
    private(set) var codes: [ExitCode] = []
    private(set) var batchesByPass: [Int] = []
    func add(_ s: Summary, _ code: ExitCode) {
        lock.lock()
        defer { lock.unlock() }
        sent += s.sent
        codes.append(code)
        batchesByPass.append(s.batches)
    }
}

/// The `herald` executable that `swift build` made, for tests that need a real process.
enum HeraldBinary {
    /// Starts `herald` with `args`, the test's environment plus `env`, stdin empty, stdout into
    /// `stdout` (else discarded) and stderr into `stderr` (a `Pipe` or a `FileHandle`; else inherited).
    static func start(_ args: [String], env: [String: String], stdout: Pipe? = nil, stderr: Any? = nil) throws -> Process {
        let p = Process()
        p.executableURL = url
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment.merging(env) { _, new in new }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = stdout ?? FileHandle.nullDevice
        if let stderr { p.standardError = stderr }
        try p.run()
        return p
    }

    static var url: URL {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        for config in ["debug", "release"] {
            let u = root.appendingPathComponent(".build/\(config)/herald")
            if FileManager.default.isExecutableFile(atPath: u.path) { return u }
        }
        return root.appendingPathComponent(".build/debug/herald")
    }
}
