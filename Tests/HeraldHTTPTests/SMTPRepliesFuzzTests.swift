import CCurl
import Foundation
@testable import HeraldHTTP
import HeraldTestSupport
import Testing

/// The SMTP reply lines a server sends, as the header callback collects them (`SMTPReplies`), and what a
/// failed mail transfer becomes (`HTTPTransfer.mailFailure`), fed deterministic random lines: whole
/// replies of one or several lines among random bytes, NULs, invalid UTF-8, codes of any size. Nothing
/// may trap; a reply's text is all of its lines; a refusal carries its reply code.
extension HTTPSuite {
@Suite struct SMTPRepliesFuzzTests {
    static let words = ["Rejected", "by", "local", "policy", "Contact", "postmaster", "5.1.1", "4.7.0", "User",
                        "unknown", "<a@relay.fm>:", "é", "تحديث", "TLS", "not", "available"]

    /// A reply line: usually well formed ("550-text", "550 text", "550"), sometimes anything.
    static func line(_ fuzz: inout Fuzz) -> [UInt8] {
        switch fuzz.below(6) {
        case 0: return fuzz.bytes(maxCount: 80)
        case 1: return Array(fuzz.hostileText().utf8)
        case 2: return Array((fuzz.numberText() + fuzz.pick([" ", "-", ""]) + fuzz.hostileText(maxPieces: 4)).utf8)
        default:
            let code = fuzz.pick([220, 221, 250, 334, 354, 421, 450, 451, 454, 535, 550, 551, 553, 554])
            let text = (0..<fuzz.int(0...5)).map { _ in fuzz.pick(words) }.joined(separator: " ")
            return Array("\(code)\(fuzz.pick(["-", " "]))\(text)\(fuzz.pick(["\r\n", "\n", "", "\r"]))".utf8)
        }
    }

    static func append(_ bytes: [UInt8], to replies: inout SMTPReplies) {
        bytes.withUnsafeBytes { replies.append(bytes: $0) }
    }

    @Test func randomLinesNeverTrapAndStayBounded() {
        var fuzz = Fuzz(seed: 61)
        for _ in 0..<Fuzz.iterations / 10 {
            var replies = SMTPReplies()
            for _ in 0..<fuzz.int(0...60) { Self.append(Self.line(&fuzz), to: &replies) }
            if fuzz.chance(0.05) { Self.append(Array(repeating: UInt8(ascii: "5"), count: 70_000), to: &replies) }
            #expect(replies.lines.count <= SMTPReplies.maxLines)
            #expect(replies.lines.allSatisfy { $0.count <= SMTPReplies.maxLineCharacters })
            let code = fuzz.chance(0.8) ? fuzz.pick([250, 421, 450, 454, 535, 550, 554]) : fuzz.status()
            if let text = replies.text(of: code) {
                #expect(text.hasPrefix(String(code)), "\(text.debugDescription) for \(code)")
            }
        }
    }

    /// A reply of several lines, after any noise, reads as its code once and every line's text in order.
    @Test func aWholeReplyIsAllOfItsLines() {
        var fuzz = Fuzz(seed: 62)
        for _ in 0..<Fuzz.iterations {
            var replies = SMTPReplies()
            for _ in 0..<fuzz.int(0...6) { Self.append(Self.line(&fuzz), to: &replies) }
            Self.append(Array("250 2.0.0 OK\r\n".utf8), to: &replies)   // the noise's last reply ends here
            let code = fuzz.pick([421, 450, 451, 454, 550, 551, 553, 554])
            let texts = (0..<fuzz.int(1...6)).map { _ in
                (0..<fuzz.int(1...4)).map { _ in fuzz.pick(Self.words) }.joined(separator: " ")
            }
            for (i, text) in texts.enumerated() {
                let separator = i == texts.count - 1 ? " " : "-"
                Self.append(Array("\(code)\(separator)\(text)\r\n".utf8), to: &replies)
            }
            // The 221 to libcurl's QUIT may come after the refusal.
            if fuzz.chance(0.3) { Self.append(Array("221 2.0.0 Bye\r\n".utf8), to: &replies) }
            #expect(replies.text(of: code) == "\(code) " + texts.joined(separator: " "), "\(replies.lines)")
        }
        var replies = SMTPReplies()
        for line in ["250-mail.example.com", "250 8BITMIME", "550-Rejected by local policy", "550 Contact postmaster"] {
            replies.append(line: line + "\r\n")
        }
        #expect(replies.text(of: 550) == "550 Rejected by local policy Contact postmaster")
        #expect(replies.text(of: 250) == "250 mail.example.com 8BITMIME")
        #expect(replies.text(of: 451) == nil)
    }

    /// `mailFailure`: never traps; a libcurl STARTTLS failure is a STARTTLS refusal with the server's
    /// code; an SMTP refusal carries the reply code and the whole reply's text.
    @Test func failuresCarryTheReplyCodeAndText() {
        var fuzz = Fuzz(seed: 63)
        let codes: [CURLcode] = [CURLE_LOGIN_DENIED, CURLE_USE_SSL_FAILED, CURLE_SEND_ERROR, CURLE_RECV_ERROR,
                                 CURLE_WEIRD_SERVER_REPLY, CURLE_OPERATION_TIMEDOUT, CURLE_COULDNT_CONNECT,
                                 CURLE_SSL_CONNECT_ERROR, CURLE_ABORTED_BY_CALLBACK]
        for _ in 0..<Fuzz.iterations {
            var replies = SMTPReplies()
            for _ in 0..<fuzz.int(0...8) { Self.append(Self.line(&fuzz), to: &replies) }
            let reply = fuzz.chance(0.7) ? fuzz.pick([0, 250, 421, 451, 454, 535, 550, 554]) : fuzz.status()
            let code = fuzz.chance(0.9) ? fuzz.pick(codes) : CURLcode(rawValue: UInt32(fuzz.int(0...120)))
            let message = fuzz.pick(["RCPT failed: \(reply)", "MAIL failed: \(reply)", "DATA failed: \(reply)",
                                     "STARTTLS denied, code \(reply)", "STARTTLS not supported.", "", fuzz.hostileText()])
            let failure = HTTPTransfer.mailFailure(code: code, curlMessage: message, reply: reply, replies: replies,
                                                   messageSent: fuzz.chance(0.5))
            if code == CURLE_USE_SSL_FAILED {
                guard case .smtp(reply, .starttls, _) = failure else {
                    Issue.record("STARTTLS failure with \(reply): \(failure)")
                    continue
                }
            }
            if case .smtp(let c, _, let text) = failure {
                #expect(c == reply)
                if reply >= 400, let words = replies.text(of: reply) { #expect(text.hasSuffix(words)) }
            }
        }
    }
}
}
