import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// A connection that ends is not a provider that fails. Against providers that end their connections
/// under the pass — abruptly (a close or a reset with answers in flight), gracefully (GOAWAY), or after
/// each HTTP/1.1 response — a drain tries every row, sends again at once what was lost, charges each such
/// try and says so in the trail, keeps the circuit breaker closed, and a copy sent again carries the
/// collapse id of the first.
@Suite(.serialized) struct ConnectionEndPassTests {
    /// `n` recipients, each with one APNs token and one due push row.
    static func fillPush(_ db: PGConnection, rows n: Int, at: Date, provider: String = "apns") throws {
        try db.execute("""
            insert into user_profiles (user_id, timezone, notify_push)
            select md5('conn' || g)::uuid, 'UTC', true from generate_series(1, \(n)) g
            """)
        try db.execute("""
            insert into device_tokens (user_id, device_token, platform, provider)
            select md5('conn' || g)::uuid,
                   case when \(provider) = 'expo' then 'ExponentPushToken[' || md5('tok' || g) || ']'
                        else encode(sha256(('tok' || g)::bytea), 'hex') end, 'ios', \(provider)
              from generate_series(1, \(n)) g
            """)
        try db.execute("""
            insert into notification_queue (recipient_user_id, member_user_id, channel, kind, payload, scheduled_at, run_after)
            select md5('conn' || g)::uuid, md5('conn' || g)::uuid, 'push', 'system',
                   jsonb_build_object('title', 'Hello', 'body', 'Row ' || g), \(at), \(at)
              from generate_series(1, \(n)) g
            """)
    }

    /// A drain at batch 500: the debug build's fake answers a few hundred requests a second, so a larger
    /// batch on a busy machine would wait past the 15 s request timeout at the fake, not at herald.
    static func drain(_ url: String, _ settings: [String: String], now: Date) -> (Summary, ExitCode) {
        ProviderPass.pass(url, settings, now: now, batchSize: 500, drain: true, phases: [.deliver])
    }

    /// 3,000 APNs pushes, 20 ms an answer, the fake ending each connection on its 500th request: one
    /// drain sends at least 90 % (every row whose tries allow it), the next sends the rest; the breaker
    /// stays closed; every copy of a notification carries one collapse id, its own; a row sent again was
    /// charged a try per resend and its trail says why; after a GOAWAY, nothing refused is sent twice.
    @Test(arguments: [ConnectionEnding.abort(afterRequests: 500), .reset(afterRequests: 500),
                      .goAway(afterRequests: 500)])
    func everyPushIsDeliveredWhenAPNsEndsConnectionsEvery500Requests(_ ending: ConnectionEnding) throws {
        try withProviderLab { lab in
            let apns = try FakeAPNs(certificates: lab.certificates, latency: 0.02, threads: 2, ending: ending)
            defer { apns.shutdown() }
            let now = ProviderPass.now()
            try Self.fillPush(lab.db, rows: 3000, at: now.addingTimeInterval(-60))
            let settings = lab.base.merging(try lab.settings(apns)) { $1 }

            let (first, code) = Self.drain(lab.url, settings, now: now)
            #expect(code == .ok, "\(first.phaseErrors)")
            #expect(first.sent >= 2700, "one pass sent \(first.sent) of 3,000")
            #expect(first.breakerOpen.isEmpty, "a connection's end opened the breaker")
            let (second, _) = Self.drain(lab.url, settings, now: now.addingTimeInterval(3600))
            #expect(second.breakerOpen.isEmpty)
            let sent = try lab.db.query("select count(*)::int as n from notification_queue where status = 'sent'").first?["n"].int
            #expect(sent == 3000, "\(first.sent) + \(second.sent) sent")

            // Every copy of one notification carries one collapse id: its own queue id (the apns-id).
            var copies: [String: Set<String>] = [:]
            for request in apns.requests where request.path.hasPrefix("/3/device/") {
                copies[request.header("apns-id") ?? "", default: []].insert(request.header("apns-collapse-id") ?? "none")
            }
            #expect(copies.count == 3000)
            #expect(copies.allSatisfy { $0.value == [$0.key] }, "a copy without its notification's collapse id")

            let resent = try lab.db.query("""
                select count(*)::int as n from notification_deliveries where provider_error_code = 'connection_lost'
                """).first?["n"].int ?? -1
            #expect(resent == first.resent + second.resent)
            // After a GOAWAY, a push processed twice is one whose earlier try was recorded as such (its answer
            // lost or timed out), never a stream refused or beyond the GOAWAY. (After a reset, libcurl itself
            // sends again, once, what got nothing back on a reused connection: not charged, not counted.)
            let processed = apns.requests.reduce(into: [String: Int]()) { $0[$1.header("apns-id") ?? "", default: 0] += 1 }
            for (id, times) in processed where times > 1 && ending == .goAway(afterRequests: 500) {
                let tries = try lab.db.query("""
                    select count(*)::int as n from notification_deliveries where queue_id = \(id)::uuid
                    """).first?["n"].int ?? 0
                #expect(tries >= times, "\(id) processed \(times) times over \(tries) recorded tries")
            }
            if ending != .goAway(afterRequests: 500) {
                #expect(resent > 0, "no answer was lost")
                // A row sent again is charged a try per resend, and its trail says why.
                let charged = try lab.db.query("""
                    select count(*)::int as n from notification_queue q
                     where q.attempts > 1 and exists (select 1 from notification_trail e
                            where e.queue_id = q.id and e.details ? 'resent_after_connection_ended')
                    """).first?["n"].int ?? 0
                #expect(charged > 0)
            }
        }
    }

    /// The same through Expo, whose requests carry up to 100 messages: a chunk whose answer was lost goes
    /// again whole, every message keeps its collapse id, and nothing fails.
    @Test func everyExpoMessageIsDeliveredWhenExpoDropsConnections() throws {
        try withProviderLab { lab in
            let expo = try FakeExpo(tls: lab.certificates, ending: .abort(afterRequests: 4))
            defer { expo.shutdown() }
            let now = ProviderPass.now()
            try Self.fillPush(lab.db, rows: 1000, at: now.addingTimeInterval(-60), provider: "expo")

            let (summary, code) = Self.drain(lab.url, lab.base.merging(lab.settings(expo)) { $1 }, now: now)
            #expect(code == .ok, "\(summary.phaseErrors)")
            #expect(summary.sent == 1000)
            #expect(summary.breakerOpen.isEmpty)
            #expect(expo.server.connectionCount > 1, "the fake never ended a connection")
            var collapse: [String: Set<String>] = [:]
            for request in expo.sendRequests {
                guard case .array(let messages)? = try? JSONValue.parse(Data(request.body)) else { continue }
                for m in messages {
                    collapse[m["to"]?.stringValue ?? "", default: []].insert(m["collapseId"]?.stringValue ?? "none")
                }
            }
            #expect(collapse.count == 1000)
            #expect(collapse.values.allSatisfy { $0.count == 1 && !$0.contains("none") })
        }
    }

    /// A webhook receiver on HTTP/1.1 that closes each connection after its response, with no warning:
    /// every row is delivered, each exactly once, with no attempt charged.
    @Test func everyWebhookIsDeliveredOnceWhenTheReceiverClosesAfterEachResponse() throws {
        let server = try FakeHTTPServer(threads: 2, http2: false, ending: .closeAfterResponse(afterRequests: 1)) { _ in
            FakeResponse(status: 204, delay: 0.002)
        }
        defer { server.shutdown() }
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            var recipients: [UUID] = []
            for _ in 0..<300 { recipients.append(try f.profile()) }
            try f.enqueueMany(300, to: recipients, channel: "webhook", at: seedInstant.addingTimeInterval(-60))
            let worker = Worker(url: tdb.url, settings: WebhookDeliveryTests.settings(server))

            let (summary, code) = worker.run(now: seedInstant, batchSize: 300)

            #expect(code == .ok)
            #expect(summary.sent == 300)
            #expect(summary.resent == 0)
            let ids = server.requests.compactMap { $0.header("webhook-id") }
            #expect(ids.count == 300 && Set(ids).count == 300, "a webhook was delivered twice")
            #expect(try f.count("select count(*)::int from notification_queue where attempts <> 1") == 0)
        }
    }
}
