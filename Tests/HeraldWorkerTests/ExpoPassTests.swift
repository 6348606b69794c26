import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// Expo: tickets wait in push_receipts, receipts are asked for on the pass's clock and deactivate
/// dead tokens, and a message that cannot be built fails alone.
/// End to end against a real PostgreSQL and the fake providers over real TLS; the worker is configured
/// only through settings, as an operator would (harness: `ProviderPass`).
@Suite struct ExpoPassTests: ProviderPassSuite {

    // MARK: - Expo receipts

    /// A receipt comes up to a day after the push: a token the app registered again in between (its
    /// `last_used_at` after the ticket) is a fresh registration and stays active.
    @Test func aLateReceiptLeavesATokenRegisteredAgainActive() throws {
        try withProviderLab { lab in
            let accessToken = "expo-access-" + UUID().uuidString
            let expo = try FakeExpo(tls: lab.certificates, accessToken: accessToken)
            defer { expo.shutdown() }
            let now = Self.now()
            let user = try lab.f.profile()
            let again = "ExponentPushToken[again-\(UUID().uuidString.prefix(8))]"
            let againId = try lab.f.token(user, again, provider: "expo")
            expo.failReceipt(token: again, error: "DeviceNotRegistered")
            let id = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let settings = lab.base.merging(lab.settings(expo, accessToken: accessToken)) { $1 }
            _ = Self.pass(lab.url, settings, now: now)
            #expect(try lab.f.row(id)["status"].string == "sent")
            // The app registers the token again after the push (the registration RPC sets last_used_at).
            try lab.db.execute("update device_tokens set last_used_at = now() + interval '1 minute' where id = \(againId)")
            let (s, _) = Self.pass(lab.url, settings, now: now.addingTimeInterval(20 * 60), phases: [.receipts])
            #expect(s.generated[.receiptsChecked] == 1)
            #expect((s.generated[.tokensDeactivated] ?? 0) == 0)
            #expect(try Self.token(lab.db, againId)["is_active"].bool == true)
        }
    }

    @Test func expoReceiptsDeactivateUnregisteredTokens() throws {
        try withProviderLab { lab in
            let accessToken = "expo-access-" + UUID().uuidString
            let expo = try FakeExpo(tls: lab.certificates, accessToken: accessToken)
            defer { expo.shutdown() }

            let now = Self.now()
            let user = try lab.f.profile()
            let gone = "ExponentPushToken[gone-\(UUID().uuidString.prefix(8))]"
            let fine = "ExponentPushToken[fine-\(UUID().uuidString.prefix(8))]"
            let goneId = try lab.f.token(user, gone, provider: "expo")
            let fineId = try lab.f.token(user, fine, provider: "expo")
            expo.failReceipt(token: gone, error: "DeviceNotRegistered")
            // A token Expo refuses in the ticket itself is deactivated at once; it has no receipt to wait for.
            let refused = "ExponentPushToken[refused-\(UUID().uuidString.prefix(8))]"
            let refusedId = try lab.f.token(user, refused, provider: "expo")
            expo.failTicket(token: refused, error: "DeviceNotRegistered")
            let id = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let settings = lab.base.merging(lab.settings(expo, accessToken: accessToken)) { $1 }

            let (s1, c1) = Self.pass(lab.url, settings, now: now)
            #expect(c1 == .ok, "\(s1.error ?? "")")
            #expect(try lab.f.row(id)["status"].string == "sent")
            #expect(expo.sendBatchSizes == [3], "every token in one Expo request")
            #expect(try lab.f.count("select count(*)::int from push_receipts where status = 'pending'") == 2)
            let r = try Self.token(lab.db, refusedId)
            #expect(r["is_active"].bool == false)
            #expect((r["deactivated_reason"].string ?? "").contains("DeviceNotRegistered"))

            // Too early (< 15 min): receipts are not asked for.
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(5 * 60), phases: [.receipts])
            #expect(expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.isEmpty)

            let (s2, c2) = Self.pass(lab.url, settings, now: now.addingTimeInterval(20 * 60), phases: [.receipts])
            #expect(c2 == .ok, "\(s2.error ?? "")")
            #expect(s2.generated[.receiptsChecked] == 2)
            #expect(s2.generated[.tokensDeactivated] == 1)
            #expect(expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.count == 1)

            let receipts = try lab.db.query("select device_token_id, status, error_code, checked_at from push_receipts")
            let byToken = Dictionary(receipts.map { ($0["device_token_id"].uuid!, $0) }, uniquingKeysWith: { a, _ in a })
            #expect(byToken[goneId]?["status"].string == "error")
            #expect(byToken[goneId]?["error_code"].string == "DeviceNotRegistered")
            #expect(byToken[fineId]?["status"].string == "ok")
            #expect(receipts.allSatisfy { $0["checked_at"].date != nil })

            let g = try Self.token(lab.db, goneId)
            #expect(g["is_active"].bool == false)
            #expect((g["deactivated_reason"].string ?? "").contains("DeviceNotRegistered"))
            #expect(try Self.token(lab.db, fineId)["is_active"].bool == true)

            // Checked receipts are not asked for again; the dead token gets nothing more.
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(40 * 60), phases: [.receipts])
            #expect(expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.count == 1)
            let second = try lab.f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(40 * 60))
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(41 * 60))
            #expect(try lab.f.row(second)["status"].string == "sent")
            #expect(expo.sendBatchSizes == [3, 1])
            #expect(expo.sendRequests.last?.text.contains(gone) == false)
        }
    }

    /// Tickets age on the pass's clock (`--now`), like every other decision: a replay at a past instant
    /// asks for receipts 15 minutes after its own sends, and closes tickets whose receipt never came a
    /// day after them.
    @Test func expoTicketsAgeOnThePassClock() throws {
        try withProviderLab(.expo) { lab in
            let now = seedInstant   // months before the real clock
            let user = try lab.f.profile()
            let token = "ExponentPushToken[\(UUID().uuidString.prefix(12))]"
            try lab.f.token(user, token, provider: "expo")
            let first = try lab.f.enqueue(to: user, channel: "push", at: now.addingTimeInterval(-10))
            let settings = lab.settings
            #expect(Self.pass(lab.url, settings, now: now).1 == .ok)
            #expect(try lab.f.row(first)["status"].string == "sent")

            func receiptRequests() -> Int { lab.expo.server.requests.filter { $0.path.hasSuffix("/getReceipts") }.count }
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(5 * 60), phases: [.receipts])
            #expect(receiptRequests() == 0, "asked for a receipt 5 minutes after the send")
            let (s, _) = Self.pass(lab.url, settings, now: now.addingTimeInterval(20 * 60), phases: [.receipts])
            #expect(s.generated[.receiptsChecked] == 1)
            #expect(receiptRequests() == 1)
            #expect(try lab.f.count("select count(*)::int from push_receipts where status = 'ok'") == 1)

            // A receipt that never comes is closed a day after the ticket, not a day after the real clock.
            lab.expo.setReceiptsReady(false)
            let second = try lab.f.enqueue(to: user, channel: "push", kind: "reminder", at: now.addingTimeInterval(3600))
            #expect(Self.pass(lab.url, settings, now: now.addingTimeInterval(3600)).1 == .ok)
            #expect(try lab.f.row(second)["status"].string == "sent")
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(2 * 3600), phases: [.receipts])
            #expect(try lab.f.count("select count(*)::int from push_receipts where status = 'pending'") == 1)
            _ = Self.pass(lab.url, settings, now: now.addingTimeInterval(26 * 3600), phases: [.receipts])
            let expired = try lab.db.query("select status, error_code from push_receipts where queue_id = \(second)").first
            #expect(expired?["status"].string == "error")
            #expect(expired?["error_code"].string == "receipt_expired")
        }
    }

    /// An Expo message that cannot be built (its token, at the table's limit of 4,096 characters, leaves
    /// no room in 4,096 bytes for the rest; a payload's deep link that long is dropped by the renderer) fails alone, with a readable error; the other rows of its
    /// batch go out in one request.
    @Test func anExpoMessageThatCannotBeBuiltFailsAloneAndTheRestAreSent() throws {
        try withProviderLab(.expo) { lab in
            let now = Self.now()
            var ids: [UUID] = []
            for i in 0..<3 {
                let user = try lab.f.profile()
                let token = i == 1 ? "ExponentPushToken[" + String(repeating: "x", count: 4_070) + "]"
                    : "ExponentPushToken[\(UUID().uuidString.prefix(12))]"
                try lab.f.token(user, token, provider: "expo")
                ids.append(try lab.f.enqueue(to: user, channel: "push", payload: #"{"title":"Hello","body":"World"}"#,
                                         at: now.addingTimeInterval(Double(-30 + i))))
            }
            let (summary, code) = Self.pass(lab.url, lab.settings, now: now)
            #expect(code == .ok, "\(summary.error ?? "")")
            #expect(lab.expo.sendBatchSizes == [2])
            #expect(try lab.f.row(ids[0])["status"].string == "sent")
            #expect(try lab.f.row(ids[2])["status"].string == "sent")
            let bad = try lab.f.row(ids[1])
            #expect(bad["status"].string == "failed")
            #expect(bad["permanent"].bool == true)
            let error = bad["last_error"].string ?? ""
            #expect(error.contains("4096 bytes") && error.contains("token"), "\(error)")
            #expect(!error.contains("xxxxxxxx"))
        }
    }
}
