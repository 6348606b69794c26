import Foundation
@testable import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// `SMTPAdapter.enhancedStatus` and `SMTPAdapter.outcome(code:command:message:)` fed deterministic random
/// replies. Invariants: nothing traps on any bytes; an enhanced code found is `[245].d.d` with 1–3 digits
/// each; any 4yz reply is a retry, whatever was refused and whatever its words; a 5yz to RCPT whose
/// enhanced code is 5.1.x is a dead address, whatever its words ("relay", "policy", an address).
@Suite struct SMTPClassifierFuzzTests {
    static let words = ["Relay access denied", "relaying denied", "relay recipient table", "<a@relay.fm>:", "policy",
                        "spam", "blocked", "denied", "User unknown", "Mailbox full", "4.7.0", "5.7.1", "2.0.0", "5.1",
                        "5..1", "1.2.3.4", "é", "\u{0}", "\r\n", "550-", "Contact postmaster"]

    /// Reply text: random bytes, hostile text, or words a server uses, in any order.
    static func text(_ fuzz: inout Fuzz) -> String {
        switch fuzz.below(4) {
        case 0: return String(decoding: fuzz.bytes(maxCount: 120), as: UTF8.self)
        case 1: return fuzz.hostileText()
        default: return (0..<fuzz.int(0...8)).map { _ in fuzz.pick(words) }.joined(separator: " ")
        }
    }

    static func isWellFormed(_ enhanced: String) -> Bool {
        let parts = enhanced.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 3 && ["2", "4", "5"].contains(parts[0])
            && parts.dropFirst().allSatisfy { (1...3).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }

    @Test func enhancedStatusNeverTrapsAndIsWellFormed() {
        var fuzz = Fuzz(seed: 71)
        for _ in 0..<Fuzz.iterations {
            let text = Self.text(&fuzz)
            if let enhanced = SMTPAdapter.enhancedStatus(text) {
                #expect(Self.isWellFormed(enhanced), "\(enhanced.debugDescription) in \(text.debugDescription)")
            }
        }
        #expect(SMTPAdapter.enhancedStatus("550 5.1.1 User unknown") == "5.1.1")
        #expect(SMTPAdapter.enhancedStatus("550-5.1.10 RESOLVER.ADR.RecipientNotFound") == "5.1.10")
        #expect(SMTPAdapter.enhancedStatus("client host [192.0.2.1] blocked") == nil)
        #expect(SMTPAdapter.enhancedStatus("5.1.1234 x") == nil)
    }

    @Test func anyFourYZIsARetryAndRCPTWith51xIsADeadAddress() {
        var fuzz = Fuzz(seed: 72)
        for _ in 0..<Fuzz.iterations {
            let command = fuzz.pick(SMTPCommand.allCases)
            let code = fuzz.chance(0.8) ? fuzz.int(400...599) : fuzz.status()
            var message = Self.text(&fuzz)
            if fuzz.chance(0.5) {
                // The enhanced code first, the rest of the words after it.
                message = "\(command.rawValue) failed: \(code): \(code) 5.1.\(fuzz.int(0...10)) " + message
            }
            let outcome = SMTPAdapter.outcome(code: code, command: command, message: message)
            if (400..<500).contains(code) {
                #expect(outcome.label == "retry", "\(code) to \(command): \(message.debugDescription) → \(outcome)")
            }
            if command == .rcpt, (500..<600).contains(code), SMTPAdapter.enhancedStatus(message)?.hasPrefix("5.1.") == true {
                #expect(outcome.label == "destination_invalid", "\(code): \(message.debugDescription) → \(outcome)")
            }
        }
    }
}
