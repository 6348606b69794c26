import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport

/// Section 8: enqueue → provider latency of notifications an app's backend enqueues itself, one row
/// per transaction at a steady rate, through a follower (`herald run --follow`) that LISTENs, one that
/// polls (HERALD_FOLLOW_LISTEN=off), and batch passes — beside the floor, the same commits'
/// notifications reaching a bare LISTEN connection. Each latency runs from the enqueue's commit (as
/// the enqueuing client sees it return) to the fake APNs's receipt of the request, both read from
/// this process's clock. At 100/s a follower is seldom idle (a round finds the next row already
/// there), so the two followers are also measured at 5/s, where each row finds it waiting. Beside them,
/// what the follower's generators add: reminders scheduled through the app's RPC 2 s ahead, from each
/// reminder's time to its push's receipt (`Bench+FollowReminders`).
extension Bench {
    func followLatency() throws {
        let rows = 1_000, rate = 100.0, period = 5.0, sparseRows = 100, sparseRate = 5.0
        let url = try freshDatabase("herald_bench_follow")
        print("8. enqueue → provider: \(rows) pushes enqueued one per transaction at \(Int(rate))/s, APNs fake (TLS, HTTP/2, answering at once)")
        let certificates = try TestCertificates.make()
        let apns = try FakeAPNs(certificates: certificates, threads: 1)
        defer { apns.shutdown() }
        let keyFile = certificates.directory + "/apns-follow.p8"
        try apns.keyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let db = try PGConnection(url)
        defer { db.close() }
        let tokens = try latencyRecipients(db, count: rows)
        var env = ProcessInfo.processInfo.environment
        for (k, v) in ["DATABASE_URL": url, "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": apns.keyId,
                       "APNS_TEAM_ID": apns.teamId, "APNS_TOPIC": apns.topic, "APNS_URL": apns.baseURL,
                       "HERALD_CA_FILE": certificates.caFile, "HERALD_LOG_LEVEL": "info"] { env[k] = v }
        let run = LatencyRun(url: url, db: db, apns: apns, tokens: tokens, rate: rate)
        let sparse = LatencyRun(url: url, db: db, apns: apns, tokens: Array(tokens.prefix(sparseRows)), rate: sparseRate)
        let listening = env.merging(["HERALD_FOLLOW_LISTEN": "auto"]) { _, n in n }
        let polling = env.merging(["HERALD_FOLLOW_LISTEN": "off"]) { _, n in n }

        var floor: [Double] = [], ignored: [Double] = []
        let listen = try run.measure { try followerRound(listening, run, floor: &floor) }
        let poll = try run.measure { try followerRound(polling, run, floor: &ignored) }
        var split: [(wait: Double, inside: Double)] = []
        let batch = try run.measure { try batchRound(env, run, period: period, split: &split) }
        let scaled = split.map { $0.wait * (60 / period) + $0.inside }
        let sparseListen = try sparse.measure { try followerRound(listening, sparse, floor: &ignored) }
        let sparsePoll = try sparse.measure { try followerRound(polling, sparse, floor: &ignored) }
        let reminders = ReminderRun(db: db, apns: apns, tokens: Array(tokens.prefix(sparseRows)))
        let remindersListen = try reminderRound(listening, reminders)
        let remindersPoll = try reminderRound(polling, reminders)

        func line(_ label: String, _ xs: [Double], _ note: String) {
            print("  \(label.padding(toLength: 36, withPad: " ", startingAt: 0)) \(Percentiles(xs).text)   \(note)")
        }
        line("follower, LISTEN", listen, "(\(listen.count) of \(rows) received; aim p95 < 50 ms)")
        line("  floor: the commits' notifications", floor,
             "(a bare LISTEN connection in this process, 0 when it came before the commit returned: \(floor.count) received)")
        line("follower, polling every 500 ms", poll, "(HERALD_FOLLOW_LISTEN=off; \(poll.count) of \(rows))")
        line("batch pass every \(Int(period)) s, measured", batch,
             "(`herald run --batch-size 1000`, one batch, started every \(Int(period)) s; \(batch.count) of \(rows))")
        line("batch pass every minute, scaled", scaled,
             "(each row's measured wait for the pass that sent it × \(Int(60 / period)), plus its measured time inside it)")
        line("at \(Int(sparseRate))/s: follower, LISTEN", sparseListen, "(\(sparseListen.count) of \(sparseRows))")
        line("at \(Int(sparseRate))/s: follower, polling", sparsePoll, "(\(sparsePoll.count) of \(sparseRows))")
        line("reminder, follower LISTEN", remindersListen,
             "(its time → provider: \(remindersListen.count) of \(sparseRows) scheduled by RPC 2 s ahead, 10/s, beside 20,000 others; aim p95 < 2 s)")
        line("reminder, follower polling", remindersPoll, "(the same, HERALD_FOLLOW_LISTEN=off; \(remindersPoll.count) of \(sparseRows))")
        print("")
    }

    /// `count` recipients with push on and one APNs token each; returns the tokens, recipient by recipient.
    func latencyRecipients(_ db: PGConnection, count: Int) throws -> [(recipient: UUID, token: String)] {
        try db.execute("truncate notification_queue, inbox, push_receipts, user_profiles cascade")
        try db.execute("""
            insert into user_profiles (user_id, timezone, notify_push)
            select md5('follow' || g)::uuid, 'UTC', true from generate_series(1, \(count)) g
            """)
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider)
            select user_id, encode(sha256(user_id::text::bytea), 'hex'), 'ios', 'apns' from user_profiles
            """)
        return try db.query("""
            select p.user_id, t.device_token from user_profiles p join device_tokens t using (user_id) order by p.user_id
            """).map { ($0["user_id"].uuid!, $0["device_token"].string!) }
    }

    /// One follower as a process while the rows are enqueued; `floor` gets the commit → notification
    /// latencies a bare listener saw meanwhile.
    func followerRound(_ env: [String: String], _ run: LatencyRun, floor: inout [Double]) throws -> [Date] {
        let p = try startFollower(env, only: "deliver")
        defer { if p.isRunning { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() } }
        let listener = try BareListener(url: run.url)
        let commits = try run.enqueue()
        floor = zip(commits, listener.stop(expecting: commits.count)).map { max(0, $1.timeIntervalSince($0) * 1000) }
        _ = run.waitForAll(commits)
        return commits
    }

    /// Batch passes (`BatchPasses`) started every `period` seconds while the rows are enqueued,
    /// until all are received; `split` gets each row's wait for the pass that sent it and its time
    /// inside that pass.
    func batchRound(_ env: [String: String], _ run: LatencyRun, period: Double,
                    split: inout [(wait: Double, inside: Double)]) throws -> [Date] {
        let starts = BatchPasses(herald: herald, env: env, period: period)
        let commits = try run.enqueue()
        _ = run.waitForAll(commits)
        let passStarts = starts.stop()
        for (commit, receipt) in zip(commits, run.receipts(commits)) {
            guard let receipt, let start = passStarts.last(where: { $0 <= receipt }) else { continue }
            split.append((max(0, start.timeIntervalSince(commit)) * 1000, receipt.timeIntervalSince(max(start, commit)) * 1000))
        }
        return commits
    }
}
