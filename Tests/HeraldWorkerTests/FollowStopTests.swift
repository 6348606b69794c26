import Foundation
import HeraldCore
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A stop signal interrupts a follower whenever it comes: one that arrives after the delivery phase,
/// before the following begins, ends the pass as interrupted (exit 3), not as a follower that ran to
/// its deadline (exit 0).
@Suite struct FollowStopTests {
    /// The follower's receipts step, after its delivery phase, asks Expo for a due receipt and the
    /// answer is held; SIGTERM arrives while it waits. Once the answer comes, the follower does not
    /// begin following, and exits 3.
    @Test func aStopBetweenAFollowersPhasesAndItsFollowingInterruptsIt() throws {
        try withProviderLab(.expo) { lab in
            // A push sent 20 minutes ago: its receipt is due (Expo's receipts come 15 minutes after).
            let sentAt = ProviderPass.now().addingTimeInterval(-20 * 60)
            let user = try lab.f.profile()
            try lab.f.token(user, "ExponentPushToken[\(UUID().uuidString.prefix(12))]", provider: "expo")
            let row = try lab.f.enqueue(to: user, channel: "push", at: sentAt.addingTimeInterval(-10))
            let settings = lab.settings
            #expect(ProviderPass.pass(lab.url, settings, now: sentAt).1 == .ok)
            #expect(try lab.f.row(row)["status"].string == "sent")

            let gate = FakeGate()
            lab.expo.enqueue(FakeResponse(status: 200, body: Array(#"{"data":{}}"#.utf8), gate: gate))
            let follower = try FollowerProcess(env: settings.merging(["DATABASE_URL": lab.url]) { $1 },
                                               deadline: 120, only: "deliver,receipts")
            #expect(gate.waitUntilHeld(1), "the receipts step never asked: \(follower.logText)")
            kill(follower.process.processIdentifier, SIGTERM)
            // The follower takes the signal on a dispatch queue, apart from the receipt's answer: the
            // answer is held a moment longer, so the stop is taken while the step still waits.
            Thread.sleep(forTimeInterval: 0.5)
            gate.open()
            let summary = follower.finish()

            #expect(follower.process.terminationStatus == 3, "\(follower.logText)")
            #expect(summary["interrupted"]?.boolValue == true)
            #expect(summary["follow"] == nil || summary["follow"] == .null, "it began following after the stop: \(follower.logText)")
        }
    }
}
