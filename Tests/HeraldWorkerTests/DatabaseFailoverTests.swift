import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A managed database fails over by promoting its standby: a follower on the multi-host URL
/// (`target_session_attrs=read-write`) connects again to the new primary, listens again, records the
/// sends that were in flight, and goes on delivering until its deadline. Real servers: a primary with a
/// synchronous standby (scripts/pg-pair.sh), the primary stopped at once (`pg_ctl stop -m immediate`)
/// and the standby promoted while the follower sends.
@Suite(.serialized, .enabled(if: Tools.psql, "needs PostgreSQL's programs (scripts/deps.sh installs them)"))
struct DatabaseFailoverTests {
    /// A webhook receiver that holds its answers at `gate` while `holding` is set.
    final class Receiver: @unchecked Sendable {  // `holding` is read and written under `lock`
        let gate = FakeGate()
        private let lock = NSLock()
        private var holding = false
        private(set) var server: FakeHTTPServer!

        init() throws {
            server = try FakeHTTPServer(http2: false) { [unowned self] _ in
                FakeResponse(status: 200, gate: lock.withLock { holding } ? gate : nil)
            }
        }

        func hold(_ on: Bool) { lock.withLock { holding = on } }

        /// How many requests each row (the `webhook-id`) received.
        var requestsPerRow: [String: Int] {
            Dictionary(server.requests.compactMap { $0.header("webhook-id") }.map { ($0, 1) }, uniquingKeysWith: +)
        }
    }

    /// Rows committed before the failover, rows whose webhook was in flight when the primary went away,
    /// and rows committed on the promoted standby: every one is delivered, none more than twice; the
    /// rows in flight are recorded `sent` on the new primary (not left leased until their lease ends);
    /// the follower goes on (it does not exit 2), delivers the rows committed after the promotion
    /// before its deadline, and counts its reconnects.
    @Test func aFollowerGoesOnThroughAFailoverAndDeliversEveryCommittedRow() throws {
        let pair = try PostgresPair()
        defer { pair.stop() }
        let receiver = try Receiver()
        defer { receiver.server.shutdown() }
        var app = try PGConnection(pair.url, applicationName: "herald-tests")
        var f = Fixtures(db: app)
        var recipients: [UUID] = []
        for _ in 0..<30 { recipients.append(try f.profile()) }
        let metrics = NSTemporaryDirectory() + "herald-failover-\(UUID().uuidString).prom"
        defer { unlink(metrics) }
        let follower = try FollowerProcess(env: FollowerProcess.env(pair.url, receiver: receiver.server, FollowTests.pollOnceADay),
                                           deadline: 120, extra: ["--metrics-file", metrics])
        defer { if follower.process.isRunning { kill(follower.process.processIdentifier, SIGKILL) } }
        #expect(follower.waitForWaits(1), "\(follower.logText)")

        // Before: ten rows, sent and recorded.
        var committed: [UUID] = []
        for r in recipients[0..<10] { committed.append(try f.enqueue(to: r, channel: "webhook", at: Date())) }
        #expect(try f.waitFor(FollowTests.sent, atLeast: 10), "\(follower.logText)")

        // Five rows, in one transaction (one claim), whose webhooks wait for their answers while the
        // primary goes away.
        receiver.hold(true)
        let held = try app.transaction { _ in
            try recipients[10..<15].map { try f.enqueue(to: $0, channel: "webhook", at: Date()) }
        }
        committed += held
        #expect(receiver.gate.waitUntilHeld(5), "\(follower.logText)")
        let seconds = try pair.failover()
        receiver.hold(false)
        receiver.gate.open()

        // After: the app connects again, to the promoted standby, and commits fourteen rows there.
        app.close()
        app = try PGConnection(pair.url, applicationName: "herald-tests")
        f = Fixtures(db: app)
        for r in recipients[15..<29] { committed.append(try f.enqueue(to: r, channel: "webhook", at: Date())) }
        #expect(try f.waitFor(FollowTests.sent, atLeast: 29, seconds: 30), "failover took \(seconds) s; \(follower.logText)")

        // It listens again: once it waits on its new LISTEN connection, a row's notification wakes it
        // (it polls once a day here).
        #expect(Self.waitsAfterListeningAgain(follower), "\(follower.logText)")
        committed.append(try f.enqueue(to: recipients[29], channel: "webhook", at: Date()))
        #expect(try f.waitFor(FollowTests.sent, atLeast: 30, seconds: 20), "\(follower.logText)")

        #expect(follower.process.isRunning, "the follower goes on after the failover: \(follower.logText)")
        #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 0)
        // The webhooks in flight are recorded with their answers, not sent again after a lease.
        #expect(try f.count("""
            select count(*)::int from notification_deliveries where queue_id = any(\(held)::uuid[]) and outcome = 'delivered'
            """) == 5)
        let perRow = receiver.requestsPerRow
        for id in committed {
            let n = perRow[id.uuidString.lowercased()] ?? 0
            #expect((1...2).contains(n), "row \(id) was delivered \(n) times")
        }
        kill(follower.process.processIdentifier, SIGTERM)
        let summary = follower.finish(seconds: 20)
        #expect(follower.process.terminationStatus == 3, "\(follower.logText)")
        #expect((summary["reconnects"]?.intValue ?? 0) >= 2, "the pass's and the LISTEN connection: \(summary)")
        #expect(summary["follow"]?["mode"]?.stringValue == "listen")
        let text = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
        #expect(text.contains("herald_pass_reconnects \(summary["reconnects"]?.intValue ?? -1)\n"), "\(text)")
    }

    /// Waits until the follower, having opened its LISTEN connection again, waits for work on it; false
    /// after 20 s.
    static func waitsAfterListeningAgain(_ follower: FollowerProcess) -> Bool {
        let reconnected = #""connection":"listen","level":"notice","ms""#
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            let log = follower.logText
            if let at = log.range(of: reconnected), log[at.upperBound...].contains(FollowerProcess.waitLine) { return true }
            usleep(20_000)
        }
        return false
    }

    /// A pass (`herald run --drain`, no follower) whose webhooks are in flight when the primary goes
    /// away records their answers on the promoted standby and ends as a pass that completed (exit 0),
    /// counting its reconnect: no row is left leased for another pass to send again.
    @Test func aPassRecordsItsSendsInFlightOnThePromotedStandby() throws {
        let pair = try PostgresPair()
        defer { pair.stop() }
        let receiver = try Receiver()
        defer { receiver.server.shutdown() }
        receiver.hold(true)
        var app = try PGConnection(pair.url, applicationName: "herald-tests")
        let f = Fixtures(db: app)
        var rows: [UUID] = []
        for _ in 0..<5 { rows.append(try f.enqueue(to: try f.profile(), channel: "webhook", at: Date())) }
        let out = Pipe()
        let pass = try HeraldBinary.start(["run", "--only", "deliver", "--drain", "--deadline", "60"],
                                          env: FollowerProcess.env(pair.url, receiver: receiver.server), stdout: out,
                                          stderr: FileHandle.nullDevice)
        defer { if pass.isRunning { kill(pass.processIdentifier, SIGKILL) } }
        #expect(receiver.gate.waitUntilHeld(5))
        try pair.failover()
        receiver.gate.open()
        #expect(waitForExit(pass, seconds: 30))
        let summary = (try? JSONValue.parse(out.fileHandleForReading.readDataToEndOfFile())) ?? .null
        #expect(pass.terminationStatus == 0, "\(summary)")
        #expect(summary["sent"]?.intValue == 5, "\(summary)")
        #expect((summary["reconnects"]?.intValue ?? 0) >= 1, "\(summary)")
        app.close()
        app = try PGConnection(pair.url, applicationName: "herald-tests")
        #expect(try Fixtures(db: app).count("""
            select count(*)::int from notification_queue where id = any(\(rows)::uuid[]) and status = 'sent' and locked_until is null
            """) == 5)
        #expect(receiver.server.requests.count == 5)
    }

    /// No database accepts writes any more (the primary stopped, the standby never promoted): the
    /// follower tries for HERALD_RECONNECT_SECONDS (2 here), not less, then exits 2 saying so.
    @Test func aFollowerGivesUpOnlyOnceNoDatabaseAnsweredWithinTheBound() throws {
        let pair = try PostgresPair()
        defer { pair.stop() }
        let receiver = try Receiver()
        defer { receiver.server.shutdown() }
        let follower = try FollowerProcess(
            env: FollowerProcess.env(pair.url, receiver: receiver.server, ["HERALD_RECONNECT_SECONDS": "2"]), deadline: 120)
        defer { if follower.process.isRunning { kill(follower.process.processIdentifier, SIGKILL) } }
        #expect(follower.waitForWaits(1), "\(follower.logText)")
        let stopped = Date()
        try pair.stopPrimary()
        let summary = follower.finish(seconds: 30)
        let seconds = Date().timeIntervalSince(stopped)
        #expect(follower.process.terminationStatus == 2, "\(follower.logText)")
        #expect(seconds >= 2 && seconds < 15, "exited \(seconds) s after the primary stopped")
        #expect(summary["error"]?.stringValue?.contains("no database answered within HERALD_RECONNECT_SECONDS (2 s)") == true,
                "\(summary)")
    }
}
