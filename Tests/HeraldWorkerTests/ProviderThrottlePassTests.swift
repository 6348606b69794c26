import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// A provider that asks to slow down is not called again in the pass: the rows it did not see go
/// back to the queue with their attempt given back.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct ProviderThrottlePassTests: ProviderPassSuite {

    // MARK: - A provider that asks to slow down is not called again in the pass

    @Test func throttledProviderIsNotCalledAgainThisPass() throws {
        try withProviderLab(.apns) { lab in
            let now = Self.now()
            var ids: [UUID] = []
            var tokens: [String] = []
            for i in 0..<4 {
                let user = try lab.f.profile()
                let token = Self.apnsToken()
                try lab.f.token(user, token)
                tokens.append(token)
                // Distinct run_after: the first row is claimed first.
                ids.append(try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(Double(-300 + i * 10))))
            }
            // A 503 is about the server (a 429 TooManyRequests would be about that token only).
            lab.apns.script(tokens[0], .error(503, "ServiceUnavailable", headers: [("retry-after", "120")]))

            let (summary, code) = Self.pass(lab.url, lab.settings, now: now,
                                            batchSize: 1, drain: true)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(summary.batches == 4, "every row claimed, one a batch")
            #expect(lab.apns.requests.count == 1, "APNs called again after its 503")
            #expect(Self.paths(lab.apns.requests) == [tokens[0]])

            for (i, id) in ids.enumerated() {
                let row = try lab.f.row(id)
                // The row APNs answered used an attempt; those never sent went back with theirs refunded.
                #expect(row["status"].string == (i == 0 ? "failed" : "pending"), "row \(i)")
                #expect(row["permanent"].bool == false, "row \(i)")
                #expect(row["attempts"].int == (i == 0 ? 1 : 0), "row \(i)")
                let after = try #require(row["run_after"].date).timeIntervalSince(now)
                #expect(after >= 119 && after <= 130, "row \(i) retries after \(after) s")
            }
            let released = try lab.db.query("""
                select count(*)::int as n from notification_events where event = 'released' and reason = 'throttled'
                """).first?["n"].int
            #expect(released == 3)
            #expect(summary.released == 3)
        }
    }
}
