import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// Each provider is paced to its quota (`HERALD_<PROVIDER>_QUOTA`, `HERALD_APNS_CONCURRENCY`), and
/// passes sending at once each keep to their share (`HERALD_QUOTA_SHARES`): a provider that answers 429
/// above its quota sees none. End to end against a real PostgreSQL and fakes over TLS and HTTP/2 that
/// count what arrives in a sliding window (`FakeQuota`).
@Suite struct ProviderQuotaPassTests: ProviderPassSuite {

    /// Rows to `count` people, one FCM token each, due now.
    static func fcmRows(_ f: Fixtures, _ count: Int, now: Date) throws -> [UUID] {
        try (0..<count).map { _ in
            let user = try f.profile()
            try f.token(user, "fcm-" + UUID().uuidString, provider: "fcm")
            return try f.enqueue(to: user, channel: "push", kind: "system", at: now.addingTimeInterval(-30))
        }
    }

    static func sentCount(_ db: PGConnection, _ ids: [UUID]) throws -> Int {
        try db.query("select count(*)::int as n from notification_queue where id = any(\(ids)) and status = 'sent'")
            .first?["n"].int ?? 0
    }

    /// One pass at full speed, 120 pushes due at once, keeps to FCM's quota (50 a second here): the
    /// fake, which answers 429 to any message over 50 in a sliding second, answers none.
    @Test func onePassAtFullSpeedStaysWithinTheProvidersQuota() throws {
        try withProviderLab(.fcm) { lab in
            let quota = FakeQuota(limit: 50, window: 1)
            lab.fcm.enforce(quota)
            let now = Self.now()
            let ids = try Self.fcmRows(lab.f, 120, now: now)

            var settings = lab.settings
            settings["HERALD_FCM_QUOTA"] = "50/s"
            let (summary, code) = Self.pass(lab.url, settings, now: now, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(quota.refused == 0, "FCM answered 429 to \(quota.refused) sends")
            #expect(quota.most <= 50)
            #expect(summary.sent == 120)
            #expect(try Self.sentCount(lab.db, ids) == ids.count)
        }
    }

    /// Two passes draining one queue at once, each told that two share the quota, together keep to it:
    /// the fake sees at most 50 sends in any second, and every row is sent once.
    @Test func twoPassesSharingAQuotaTogetherStayWithinIt() throws {
        try withProviderLab(.fcm) { lab in
            let quota = FakeQuota(limit: 50, window: 1)
            lab.fcm.enforce(quota)
            let now = Self.now()
            let ids = try Self.fcmRows(lab.f, 160, now: now)

            var settings = lab.settings
            settings["HERALD_FCM_QUOTA"] = "50/s"
            settings["HERALD_QUOTA_SHARES"] = "2"
            let sent = Counts()
            inParallel(2) { [settings] _ in
                let (summary, code) = Self.pass(lab.url, settings, now: now, batchSize: 20, drain: true)
                #expect(code == .ok, "\(summary.error ?? "")")
                sent.add(summary.sent)
            }
            #expect(quota.refused == 0, "FCM answered 429 to \(quota.refused) sends")
            #expect(quota.most <= 50)
            #expect(sent.total == 160)
            #expect(lab.fcm.requests.filter { $0.path.hasSuffix("messages:send") }.count == 160, "each row sent once")
            #expect(try Self.sentCount(lab.db, ids) == ids.count)
        }
    }

    /// APNs publishes no rate: herald keeps at most `HERALD_APNS_CONCURRENCY` pushes in flight (5 here),
    /// and a fake that answers each after 0.3 s and 429 to a sixth at once answers none.
    @Test func apnsKeepsNoMoreThanItsConcurrencyInFlight() throws {
        try withProviderLab { lab in
            let apns = try FakeAPNs(certificates: lab.certificates, latency: 0.3)
            defer { apns.shutdown() }
            let quota = FakeQuota(limit: 5, window: 0.3)
            apns.enforce(quota)
            let now = Self.now()
            let ids = try (0..<30).map { _ in
                let user = try lab.f.profile()
                try lab.f.token(user, Self.apnsToken())
                return try lab.f.enqueue(to: user, channel: "push", kind: "system", at: now.addingTimeInterval(-30))
            }

            var settings = lab.base.merging(try lab.settings(apns)) { $1 }
            settings["HERALD_APNS_CONCURRENCY"] = "5"
            let (summary, code) = Self.pass(lab.url, settings, now: now, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(quota.refused == 0, "APNs answered 429 to \(quota.refused) pushes")
            #expect(quota.most == 5, "five in flight at once, the bound")
            #expect(summary.sent == 30)
            #expect(try Self.sentCount(lab.db, ids) == ids.count)
        }
    }
}

/// Sums of what threads report.
final class Counts: @unchecked Sendable {  // `sum` under `lock`
    private let lock = NSLock()
    private var sum = 0
    func add(_ n: Int) { lock.withLock { sum += n } }
    var total: Int { lock.withLock { sum } }
}
