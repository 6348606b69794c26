import Foundation
import Testing
@testable import HeraldCore

@Suite struct ProviderHealthTests {
    /// (answers, suspicious answers, suspect?) — at least 10 suspicious, and more than half of all.
    @Test(arguments: [
        (0, 0, false),
        (9, 9, false),      // every answer refused, but fewer than 10
        (10, 10, true),
        (19, 10, true),     // 10 of 19: more than half
        (20, 10, false),    // exactly half is not more than half
        (21, 11, true),
        (22, 11, false),
        (42, 40, true),
        (2_000, 10, false), // a few dead tokens among many good ones
        (32, 2, false),     // the normal case: 2 bad tokens among 30 good
    ])
    func threshold(_ answers: Int, _ suspicious: Int, _ suspect: Bool) {
        #expect(ProviderHealth.isSuspect(answers: answers, suspicious: suspicious) == suspect)
    }

    /// A sequence of answers (true = a suspicious refusal) and the verdict after it.
    @Test(arguments: [
        (String(repeating: "x", count: 30), true),                                   // all refused
        (String(repeating: "x", count: 9), false),                                    // too few
        (String(repeating: ".", count: 30) + String(repeating: "x", count: 2), false), // 2 among 30 good
        (String(repeating: ".", count: 10) + String(repeating: "x", count: 11), true), // 11 of 21
        (String(repeating: ".", count: 11) + String(repeating: "x", count: 11), false), // 11 of 22
        // Suspect after the first 10, then many good answers: it stays suspect for the pass.
        (String(repeating: "x", count: 10) + String(repeating: ".", count: 100), true),
        (String(repeating: ".x", count: 20), false),                                   // 20 of 40, never more than half
        (String(repeating: "x.", count: 20), true),                                    // 10 of 19 on the way: sticky
        ("." + String(repeating: "x.", count: 20), false),
        ("x" + String(repeating: "x.", count: 20), true),                              // 11 of 21 on the way
    ])
    func verdictOverASequence(_ answers: String, _ suspect: Bool) {
        var health = ProviderHealth()
        var turnedAt: Int?
        for (i, c) in answers.enumerated() {
            if health.record(.apns, suspicious: c == "x", code: c == "x" ? "BadDeviceToken" : nil) {
                #expect(turnedAt == nil, "record reports turning suspect only once")
                turnedAt = i
            }
        }
        #expect(health.isSuspect(.apns) == suspect, "\(answers)")
        #expect((turnedAt != nil) == suspect)
        #expect(health.tally(.apns).answers == answers.count)
        #expect(health.tally(.apns).suspicious == answers.filter { $0 == "x" }.count)
    }

    @Test func providersAreJudgedApart() {
        var health = ProviderHealth()
        for _ in 0..<12 { health.record(.apns, suspicious: true, code: "BadDeviceToken") }
        for _ in 0..<12 { health.record(.fcm, suspicious: false) }
        health.record(.fcm, suspicious: true, code: "SENDER_ID_MISMATCH")
        #expect(health.isSuspect(.apns))
        #expect(!health.isSuspect(.fcm))
        #expect(!health.isSuspect(.smtp), "a provider with no answers is not suspect")
        #expect(health.tally(.fcm).answers == 13)
    }

    @Test func messageNamesTheCountsTheCodeAndWhatToCheck() {
        var health = ProviderHealth()
        for _ in 0..<40 { health.record(.apns, suspicious: true, code: "BadDeviceToken") }
        for _ in 0..<2 { health.record(.apns, suspicious: false) }
        #expect(health.message(.apns, hint: "check APNS_ENV (sandbox/production) and APNS_TOPIC",
                               kept: "tokens were not deactivated")
                == "apns: 40 of 42 answers this pass were BadDeviceToken — check APNS_ENV (sandbox/production) and APNS_TOPIC; tokens were not deactivated")

        var mixed = ProviderHealth()
        for _ in 0..<7 { mixed.record(.smtp, suspicious: true, code: "550") }
        for _ in 0..<4 { mixed.record(.smtp, suspicious: true, code: "553") }
        #expect(mixed.tally(.smtp).commonCode == "550")
        #expect(mixed.message(.smtp, hint: "check SMTP_URL", kept: "the channel was not switched off")
                == "smtp: 11 of 11 answers this pass were destination-invalid (mostly 550) — check SMTP_URL; the channel was not switched off")
    }
}
