import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// `herald run --follow` as a process against the test database and a webhook receiver: after its
/// phases it keeps delivering until its deadline, woken by the queue's notifications (LISTEN) and by
/// the next due time, with every guarantee of a pass. No latency is timed: each test waits for an
/// outcome and says what alone could have caused it.
@Suite struct FollowTests {
    /// A follower polls once a day here, and looks at the queue by itself only every 60 s: within its
    /// deadline, only a notification or a due time it already knows can wake it.
    static let pollOnceADay = ["HERALD_FOLLOW_POLL_MS": "86400000"]

    static let sent: SQL = "select count(*)::int from notification_queue where status = 'sent'"

    /// A row enqueued while a follower waits goes out on the insert's notification, before the
    /// deadline, and SIGTERM ends the wait at once: exit 3, as an interrupted pass.
    @Test func aRowEnqueuedWhileAFollowerWaitsIsSentOnItsNotification() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200) }
            defer { server.shutdown() }
            let recipient = try f.profile()
            let follower = try FollowerProcess(env: FollowerProcess.env(tdb.url, receiver: server, Self.pollOnceADay),
                                               deadline: 120)
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            try f.enqueue(to: recipient, channel: "webhook", at: Date())
            #expect(try f.waitFor(Self.sent, atLeast: 1))
            #expect(follower.process.isRunning, "sent by the follower, before its deadline")
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(follower.process.terminationStatus == 3, "\(follower.logText)")
            #expect(summary["interrupted"]?.boolValue == true)
            #expect(summary["follow"]?["mode"]?.stringValue == "listen")
            #expect((summary["follow"]?["notified"]?.intValue ?? 0) >= 1)
            #expect(summary["sent"]?.intValue == 1)
            #expect(server.requests.count == 1)
            #expect(follower.logText.contains(#""msg":"following the queue""#) && follower.logText.contains(#""mode":"listen""#))
        }
    }

    /// A row enqueued two seconds ahead wakes the follower once (its insert's notification), which
    /// then knows its due time and sends it when it comes, with no further notification.
    @Test func aRowScheduledAheadIsSentWhenItComesDueWithoutANotification() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200) }
            defer { server.shutdown() }
            let recipient = try f.profile()
            let follower = try FollowerProcess(env: FollowerProcess.env(tdb.url, receiver: server, Self.pollOnceADay),
                                               deadline: 120)
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            let id = try f.enqueue(to: recipient, channel: "webhook", at: Date().addingTimeInterval(2))
            #expect(try f.waitFor(Self.sent, atLeast: 1))
            #expect(follower.process.isRunning, "sent by the follower, before its deadline")
            #expect(try f.count("select count(*)::int from notification_queue where id = \(id) and sent_at >= run_after") == 1)
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(follower.process.terminationStatus == 3)
            #expect(summary["follow"]?["mode"]?.stringValue == "listen")
            #expect(summary["follow"]?["notified"]?.intValue == 1, "only the insert's notification came")
            #expect(summary["sent"]?.intValue == 1)
        }
    }

    /// SIGTERM while a follower sends: no request starts after it, those in flight finish and are
    /// recorded, the rest go back to the queue with no attempt charged, none stays claimed, exit 3.
    @Test func aStopSignalStopsAFollowerAsItStopsAPass() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let gate = FakeGate()
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200, gate: gate) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<40 { recipients.append(try f.profile()) }
            let follower = try FollowerProcess(
                env: FollowerProcess.env(tdb.url, receiver: server, ["HERALD_CONNECTIONS_PER_HOST": "4"]),
                deadline: 120, extra: ["--batch-size", "40"])
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            try f.enqueueMany(40, to: recipients, channel: "webhook", at: Date())
            // Once a request waits on each of the 4 connections, nothing more can start.
            #expect(gate.waitUntilHeld(4))
            let seenAtSignal = server.requests.count
            kill(follower.process.processIdentifier, SIGTERM)
            gate.release(4)
            if !waitForExit(follower.process, seconds: 10) { gate.open() }
            let summary = follower.finish()
            #expect(follower.process.terminationStatus == 3, "\(follower.logText)")
            #expect(summary["interrupted"]?.boolValue == true)
            let total = server.requests.count
            #expect(total <= seenAtSignal + 4, "\(total) requests, \(seenAtSignal) at the signal")
            #expect(total < 40)
            #expect(try f.count(Self.sent) == total)
            #expect(try f.count("select count(*)::int from notification_queue where locked_until is not null") == 0)
            #expect(try f.count("""
                select count(*)::int from notification_queue where status = 'pending' and attempts = 0
                """) == 40 - total)
            #expect(summary["released"]?.intValue == 40 - total)
        }
    }

    /// An operator's pause holds a follower's claims as it holds a pass's: woken by the rows'
    /// notification it looks, claims nothing, and the rows stay pending; the resume wakes it and
    /// they go out.
    @Test func aPauseStopsAFollowerFromClaimingAndTheResumeWakesIt() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let server = try FakeHTTPServer(http2: false) { _ in FakeResponse(status: 200) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<3 { recipients.append(try f.profile()) }
            let follower = try FollowerProcess(env: FollowerProcess.env(tdb.url, receiver: server, Self.pollOnceADay),
                                               deadline: 120)
            #expect(follower.waitForWaits(1), "\(follower.logText)")

            let ops = Operator(db: db, actor: "ops", reason: "carrier incident")
            #expect(try ops.pause(channel: "webhook", kind: nil))
            let waits = follower.waits
            try f.enqueueMany(3, to: recipients, channel: "webhook", at: Date())
            // Their notification woke it: it looked at the queue, and waits again.
            #expect(follower.waitForWaits(waits + 1), "\(follower.logText)")
            #expect(try f.count("select count(*)::int from notification_queue where status = 'pending' and attempts = 0") == 3)
            #expect(server.requests.isEmpty)

            #expect(try ops.resume(channel: "webhook", kind: nil))
            #expect(try f.waitFor(Self.sent, atLeast: 3))
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish(seconds: 15)
            #expect(follower.process.terminationStatus == 3)
            #expect(summary["sent"]?.intValue == 3)
            #expect(server.requests.count == 3)
        }
    }

    /// A follower and batch passes on one queue, rows enqueued while they all run: every row is
    /// delivered exactly once, and both kinds of pass claimed rows.
    @Test func aFollowerAndBatchPassesDeliverEachRowExactlyOnce() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let server = try FakeHTTPServer(threads: 2) { _ in FakeResponse(status: 200, delay: 0.05) }
            defer { server.shutdown() }
            var recipients: [UUID] = []
            for _ in 0..<500 { recipients.append(try f.profile()) }
            // The first 200 wait for both; the other 300 come in 30 transactions while both run.
            try f.enqueueMany(200, to: Array(recipients[0..<200]), channel: "webhook", at: Date())
            let env = FollowerProcess.env(tdb.url, receiver: server)
            let follower = try FollowerProcess(env: env, deadline: 120, extra: ["--batch-size", "25"])
            let batches = InBackground { () -> [Int32] in
                var codes: [Int32] = []
                for _ in 0..<3 {  // one after the other, each draining what is due when it starts
                    guard let p = try? HeraldBinary.start(["run", "--drain", "--only", "deliver", "--batch-size", "25", "--quiet"],
                                                          env: env) else { return codes + [-1] }
                    p.waitUntilExit()
                    codes.append(p.terminationStatus)
                }
                return codes
            }
            for chunk in 0..<30 {
                try db.transaction { _ in
                    for r in recipients[(200 + chunk * 10)..<(210 + chunk * 10)] {
                        try f.enqueue(to: r, channel: "webhook", at: Date())
                    }
                }
                usleep(20_000)
            }
            let codes = batches.value()
            #expect(try f.waitFor(Self.sent, atLeast: 500, seconds: 30))
            kill(follower.process.processIdentifier, SIGTERM)
            let summary = follower.finish()
            #expect(follower.process.terminationStatus == 3, "\(follower.logText)")
            #expect(codes == [0, 0, 0])

            let ids = server.requests.compactMap { $0.header("webhook-id") }
            #expect(ids.count == 500)
            #expect(Set(ids).count == ids.count, "a row was delivered twice")
            #expect(try f.count(Self.sent) == 500)
            #expect(try f.count("select count(*)::int from notification_queue where status <> 'sent'") == 0)
            let followerSent = summary["sent"]?.intValue ?? 0
            #expect(followerSent > 0 && followerSent < 500, "the follower sent \(followerSent)")
            #expect(try f.count("select count(distinct pass_id)::int from notification_trail where event = 'sent'") >= 2)
        }
    }
}
