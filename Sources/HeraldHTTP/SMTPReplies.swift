import CCurl
import Foundation

/// The SMTP server's reply lines, as libcurl hands them to the header callback one at a time, and the
/// text of one whole reply. A reply may span lines: `550-` on each line but the last, `550 ` on the last
/// (RFC 5321 §4.2.1). A refusal is classified by all of its lines, so "550-Rejected by local policy" is
/// not lost behind "550 Contact postmaster".
///
///     var replies = SMTPReplies()
///     replies.append(line: "550-Rejected by local policy\r\n")
///     replies.append(line: "550 Contact postmaster\r\n")
///     replies.text(of: 550)   // "550 Rejected by local policy Contact postmaster"
struct SMTPReplies {
    /// Lines kept: the last ones (a long EHLO answer or a wordy refusal fits).
    static let maxLines = 32
    /// Characters kept of one line: a hostile server's long line costs no more than this.
    static let maxLineCharacters = 1_000

    /// The kept lines, oldest first, without their line ends.
    private(set) var lines: [String] = []

    /// Adds one line as received (invalid UTF-8 repaired, surrounding white space and line end dropped).
    mutating func append(bytes: UnsafeRawBufferPointer) {
        append(line: String(decoding: bytes, as: UTF8.self))
    }

    mutating func append(line: String) {
        if lines.count >= Self.maxLines { lines.removeFirst(lines.count - Self.maxLines + 1) }
        lines.append(String(line.trimmingCharacters(in: .whitespacesAndNewlines).prefix(Self.maxLineCharacters)))
    }

    /// The last reply with `code`, its lines joined: the code once, then each line's text after it
    /// ("550-a", "550 b" → "550 a b"). Nil when no kept line ends a reply with that code.
    func text(of code: Int) -> String? {
        let number = String(code)
        guard let last = lines.lastIndex(where: { Self.text(of: $0, code: number, final: true) != nil }) else { return nil }
        var first = last
        while first > lines.startIndex, Self.text(of: lines[first - 1], code: number, final: false) != nil { first -= 1 }
        let texts = (first...last).compactMap { Self.text(of: lines[$0], code: number, final: $0 == last) }
            .filter { !$0.isEmpty }
        return ([number] + texts).joined(separator: " ")
    }

    /// A line's text after `code` and its separator (" " on a reply's last line, "-" on the others),
    /// or nil when the line is not such a line.
    private static func text(of line: String, code: String, final: Bool) -> String? {
        guard line.hasPrefix(code) else { return nil }
        let rest = line.dropFirst(code.count)
        if final && rest.isEmpty { return "" }
        guard let separator = rest.first, separator == (final ? " " : "-") else { return nil }
        return rest.dropFirst().trimmingCharacters(in: .whitespaces)
    }
}

extension HTTPTransfer {
    /// What a failed mail transfer means: an SMTP refusal (`.smtp`, with what was refused and the
    /// server's whole reply) or the transfer error it would be for HTTP (timeout, refused, TLS).
    ///
    /// - Parameters:
    ///   - code: libcurl's result; `curlMessage` its error buffer's text.
    ///   - reply: the last reply code libcurl recorded (CURLINFO_RESPONSE_CODE), 0 if none.
    ///   - replies: the server's reply lines.
    ///   - messageSent: true when the whole message had been read by libcurl (a refusal after it is
    ///     about the message).
    static func mailFailure(code: CURLcode, curlMessage: String, reply: Int, replies: SMTPReplies,
                            messageSent: Bool) -> TransportError {
        let error = TransportError(curlCode: code, message: curlMessage)
        guard case .other = error else { return error }   // timeout, refused, TLS: as for HTTP
        let command: SMTPCommand
        switch code {
        case CURLE_LOGIN_DENIED: command = .auth
        // libcurl: STARTTLS not offered ("STARTTLS not supported.", the reply code then is EHLO's) or
        // refused ("STARTTLS denied, code 454"): the adapter tells them apart by the reply code.
        case CURLE_USE_SSL_FAILED: command = .starttls
        default:
            if let verb = [SMTPCommand.mail, .rcpt, .data].first(where: { curlMessage.hasPrefix("\($0.rawValue) failed") }) {
                command = verb
            } else if reply >= 400, messageSent {
                command = .endOfData   // refused after the whole message was sent
            } else {
                command = .other
            }
        }
        guard command != .other || reply >= 400 else { return error }
        // The server's own words where it gave a refusal (334 lines are AUTH prompts, not refusals).
        let words = reply >= 400 ? replies.text(of: reply) ?? "" : ""
        let message = [curlMessage.isEmpty ? String(cString: curl_easy_strerror(code)) : curlMessage, words]
            .filter { !$0.isEmpty }.joined(separator: ": ")
        return .smtp(code: reply, command: command, message: message)
    }
}
