import Foundation
import HeraldCore
import HeraldHTTP

/// Email over SMTP, sent by the shared transport (libcurl), so mails go out concurrently with the other
/// channels' requests. One message per destination: a UTF-8 text/plain RFC 5322 message whose Message-ID
/// is `<queue-id@herald>` (the same on every retry) and which carries `X-Herald-Notification-Id`.
///
///     let smtp = try SMTPAdapter(url: "smtp://herald:secret@mail.example.com:587",   // SMTP_URL
///                                from: "Herald <herald@example.com>")               // EMAIL_FROM
///
/// Outcomes (RFC 5321 reply classes, providers.md §6.7): 250 after the data → delivered; a 4yz reply →
/// retry; a refused recipient → destination invalid only when the mailbox itself is refused (see
/// `outcome(code:command:message:)`); a relay denial → retry, naming SMTP_URL and EMAIL_FROM; other 5yz →
/// permanent; refused credentials, or STARTTLS not offered or refused with a 5yz where TLS is required →
/// permanent (configuration); connection failures → retry. A reply of several lines is read whole.
public struct SMTPAdapter: SingleMessageAdapter {
    /// An address that refuses the channel turns it off for the recipient.
    public var deadDestination: FollowUp? { .optOut }
    public let provider = Provider.smtp
    /// SMTP_URL, credentials included. Never logged.
    private let url: String
    /// EMAIL_FROM's bare address, for MAIL FROM.
    public let fromAddress: String
    /// The From header field's value: `"Name" <address>` or `address`.
    public let fromHeader: String
    /// smtp:// URLs only: require STARTTLS (smtps:// is TLS from the start).
    public let requireTLS: Bool
    /// The password in every form a server could echo back (as written in SMTP_URL, decoded, and in the
    /// base64 of AUTH LOGIN and AUTH PLAIN): scrubbed from every outcome.
    private let secrets: [String]
    public var timeout: Double

    /// - Parameters:
    ///   - url: SMTP_URL, `smtp://user:password@host:587` (STARTTLS) or `smtps://user:password@host:465`;
    ///     user and password percent-encoded.
    ///   - from: EMAIL_FROM, `Name <address>` or `address`.
    ///   - requireTLS: for smtp:// URLs, refuse to send unless the server offers STARTTLS.
    public init(url: String, from: String, requireTLS: Bool = true, timeout: Double = 30) throws {
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "smtp" || scheme == "smtps", let host = parsed.host, !host.isEmpty else {
            // The URL may hold a password: never echo it.
            throw AdapterError("SMTP_URL must look like smtp://user:password@host:587 or smtps://user:password@host:465"
                               + " (user and password percent-encoded)")
        }
        if parsed.password != nil, parsed.user == nil {
            throw AdapterError("SMTP_URL has a password but no user name")
        }
        let sender = try EmailFrom(from)
        let (name, address) = (sender.name, sender.address)
        self.url = url
        fromAddress = address
        fromHeader = name.map { "\(Self.phrase($0)) <\(address)>" } ?? address
        self.requireTLS = requireTLS
        self.timeout = timeout
        secrets = Self.secrets(user: parsed.user, password: parsed.password, encodedPassword: parsed.percentEncodedPassword)
    }

    /// The forms of the password to scrub (see `secrets`); none without a password.
    static func secrets(user: String?, password: String?, encodedPassword: String?) -> [String] {
        guard let password, !password.isEmpty else { return [] }
        let plain = "\u{0}" + (user ?? "") + "\u{0}" + password
        return Array(Set([password, encodedPassword ?? password, Data(password.utf8).base64EncodedString(),
                          Data(plain.utf8).base64EncodedString()]))
            .sorted { $0.count > $1.count }   // longest first: a form inside another is not half-replaced
    }

    /// SMTP_URL without its password, for logs: `smtp://herald:***@mail.example.com:587`.
    public var redactedURL: String {
        guard var parts = URLComponents(string: url) else { return "smtp://***" }
        if parts.password != nil { parts.password = "***" }
        return parts.string ?? "smtp://***"
    }

    public func request(for envelope: Envelope) throws -> HTTPRequest {
        let to = envelope.destination.address.trimmingCharacters(in: .whitespaces)
        guard Self.isAddress(to) else {
            throw AdapterError("not an email address: \(to.debugDescription)")
        }
        return HTTPRequest(method: "POST", url: url, body: Array(message(for: envelope, to: to).utf8),
                           timeout: timeout,
                           mail: MailEnvelope(from: fromAddress, recipients: [to], requireTLS: requireTLS))
    }

    /// The RFC 5322 message for `envelope`, CRLF line ends.
    public func message(for envelope: Envelope, to: String) -> String {
        let id = envelope.item.id.lowercased
        var text = envelope.rendered.body
        if let link = envelope.rendered.deepLink { text += "\n\n" + link }
        let (encoding, body) = Self.encodeBody(text)
        let headers = [
            "Date: " + Self.date(envelope.now),
            "From: " + fromHeader,
            "To: " + to,
            "Subject: " + Self.encodedHeaderText(envelope.rendered.title),
            "Message-ID: <\(id)@herald>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: " + encoding,
            "X-Herald-Notification-Id: " + id,
        ]
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    /// Every outcome is made readable (the server's words may carry NULs or controls) and capped.
    /// Through the shared classifier: a refusal by the server is classified by `outcome(code:command:message:)`
    /// and keeps its reply code as the status; other transport failures are retries.
    public func classify(_ result: Result<HTTPResponse, TransportError>, now: Date) -> ClassifiedResponse {
        AdapterSupport.classify(result, provider: .smtp, secrets: secrets, now: now, outcome: { response, _ in
            guard (200..<300).contains(response.status) else {
                return .retry(after: nil, code: String(response.status),
                              message: "SMTP server answered \(response.status) to the message")
            }
            return .delivered(messageId: response.header("message-id")?.trimmingCharacters(in: CharacterSet(charactersIn: "<> ")))
        }, throttle: { _, _ in nil }, failure: { error in
            guard case .smtp(let code, let command, let message) = error else { return nil }
            return (Self.outcome(code: code, command: command, message: message), code == 0 ? nil : code)
        })
    }

    /// What an SMTP refusal means for this message.
    static func outcome(code: Int, command: SMTPCommand, message: String) -> DeliveryOutcome {
        let reply = code == 0 ? "" : " (\(code))"
        switch command {
        case .starttls where (400..<500).contains(code):
            // Offered but refused for now (454 4.7.0 "TLS not available due to temporary reason").
            return .retry(after: nil, code: String(code), message: "the SMTP server refused STARTTLS for now: \(message)")
        // The server's TLS and herald's credentials: every message would be refused alike.
        case .starttls where (500..<600).contains(code):
            return .refused(code: String(code), message: "the SMTP server refused STARTTLS and TLS is required: "
                              + "use an SMTP server with STARTTLS, or smtps:// in SMTP_URL: \(message)")
        case .starttls:
            // Not offered: the reply code is then EHLO's (250), or none.
            return .refused(code: "starttls", message: "the SMTP server does not offer STARTTLS\(reply) and TLS is "
                              + "required: use an SMTP server with STARTTLS, or smtps:// in SMTP_URL")
        case .auth where (400..<500).contains(code):
            return .retry(after: nil, code: String(code), message: "SMTP authentication failed temporarily: \(message)")
        case .auth:
            return .refused(code: code == 0 ? "auth" : String(code),
                              message: "the SMTP server refused the credentials\(reply): "
                              + "check the user name and password in SMTP_URL")
        case .rcpt where (500..<600).contains(code):
            // RFC 3463: an enhanced code 5.1.x is about the address (bad mailbox, user not local, bad
            // syntax), whatever the words say ("User unknown in relay recipient table").
            let enhanced = Self.enhancedStatus(message)
            if enhanced?.hasPrefix("5.1.") == true {
                return .destinationInvalid(code: String(code), message: "recipient refused: \(message)")
            }
            if Self.isRelayDenial(message) { return Self.relayDenial(code: code, message: message) }
            // 5.2.x (mailbox full/disabled), 5.7.x (policy, spam, auth) and the rest are about this
            // message or this server, not a dead address.
            if let enhanced {
                return .permanent(code: String(code), message: "recipient refused (\(enhanced)): \(message)")
            }
            // No enhanced code: 551 (user not local) and 553 (mailbox name not allowed) are about the
            // address; 550 too, unless its text says it is a policy refusal.
            if code == 551 || code == 553 || (code == 550 && !Self.isPolicyRefusal(message)) {
                return .destinationInvalid(code: String(code), message: "recipient refused: \(message)")
            }
            return .permanent(code: String(code), message: "recipient refused: \(message)")
        case _ where (500..<600).contains(code) && Self.isRelayDenial(message):
            return Self.relayDenial(code: code, message: message)
        default:
            switch code {
            case 400..<500: return .retry(after: nil, code: String(code), message: message)
            case 500..<600: return .permanent(code: String(code), message: message)
            default: return .retry(after: nil, code: code == 0 ? "smtp" : String(code), message: message)
            }
        }
    }

    /// The server will not relay for us: the configuration is wrong, not the recipient.
    static func relayDenial(code: Int, message: String) -> DeliveryOutcome {
        .retry(after: nil, code: String(code), message: "the SMTP server refused to relay (\(code)): "
               + "check SMTP_URL (a server that relays for EMAIL_FROM, with its credentials) and EMAIL_FROM: \(message)")
    }

    /// The RFC 3463 enhanced status code in a reply's text ("5.1.1" in "550 5.1.1 User unknown"), or nil.
    static func enhancedStatus(_ text: String) -> String? {
        let chars = Array(text)
        var i = 0
        while i < chars.count {
            // class "." subject "." detail, with 1–3 digits each, not inside a longer dotted number.
            if "245".contains(chars[i]), i == 0 || !(chars[i - 1].isNumber || chars[i - 1] == ".") {
                var j = i + 1
                var parts = [String(chars[i])]
                while parts.count < 3, j < chars.count, chars[j] == "." {
                    var digits = ""
                    var k = j + 1
                    while k < chars.count, chars[k].isASCII, chars[k].isNumber, digits.count < 4 {
                        digits.append(chars[k])
                        k += 1
                    }
                    guard (1...3).contains(digits.count) else { break }
                    parts.append(digits)
                    j = k
                }
                if parts.count == 3, j == chars.count || !(chars[j].isNumber || chars[j] == ".") {
                    return parts.joined(separator: ".")
                }
            }
            i += 1
        }
        return nil
    }

    /// How servers word a relay denial: Postfix "Relay access denied", Sendmail "Relaying denied", Exim
    /// "relay not permitted", Exchange "Unable to relay", Gmail "Mail relay denied", qmail "…allowed rcpthosts".
    static let relayDenialPhrases = [
        "relay access denied", "relaying denied", "relay denied", "relay not permitted", "relaying not permitted",
        "relay not allowed", "relaying not allowed", "unable to relay", "cannot relay", "not permitted to relay",
        "not allowed to relay", "we do not relay", "relaying prohibited", "relay prohibited", "rcpthosts",
    ]

    /// A refusal whose text says the server will not relay. Phrases, not the word "relay" alone, which is
    /// also in "User unknown in relay recipient table" and in addresses such as `<a@relay.fm>`.
    static func isRelayDenial(_ text: String) -> Bool {
        let t = wordsWithoutAddresses(text)
        return relayDenialPhrases.contains { t.contains($0) }
    }

    /// A 550 whose text names a policy refusal rather than a missing mailbox.
    static func isPolicyRefusal(_ text: String) -> Bool {
        let t = wordsWithoutAddresses(text)
        return isRelayDenial(text) || ["policy", "spam", "blocked", "denied"].contains { t.contains($0) }
    }

    /// The text lower-cased, without the words that hold an address (`<a@relay.fm>:`), single-spaced.
    static func wordsWithoutAddresses(_ text: String) -> String {
        text.lowercased().split(whereSeparator: \.isWhitespace).filter { !$0.contains("@") }.joined(separator: " ")
    }

    /// SMTP_URL and EMAIL_FROM: a server that knows only its own mailboxes (or a wrong account on it)
    /// refuses every outside address as if it did not exist, so every destination-invalid answer counts.
    public var configurationCheck: ConfigurationCheck? {
        ConfigurationCheck(hint: "check SMTP_URL (a server that relays mail for EMAIL_FROM to other domains) and EMAIL_FROM",
                           codes: nil)
    }

    // MARK: Message formatting

    static func isAddress(_ text: String) -> Bool { EmailFrom.isAddress(text) }

    /// A display name: an RFC 2047 encoded word when not ASCII, else a quoted string.
    static func phrase(_ name: String) -> String {
        guard name.allSatisfy(\.isASCII) else { return encodedWords(name) }
        return "\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            + "\""
    }

    /// Unstructured header text (Subject): as is when short printable ASCII, else RFC 2047 encoded words.
    /// Line breaks become spaces, so no text can add header lines.
    static func encodedHeaderText(_ text: String) -> String {
        let flat = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        if flat.utf8.count <= 900, flat.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }),
           !flat.contains("=?") {
            return flat
        }
        return encodedWords(flat)
    }

    /// `=?UTF-8?B?…?=` words of 60 characters at most (36 bytes of text each, split between characters),
    /// folded onto continuation lines, so a header line stays under 78 characters (RFC 2047 allows 75 a word).
    static func encodedWords(_ text: String) -> String {
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if !chunk.isEmpty, chunk.count + bytes.count > 36 {
                words.append("=?UTF-8?B?" + Data(chunk).base64EncodedString() + "?=")
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty || words.isEmpty { words.append("=?UTF-8?B?" + Data(chunk).base64EncodedString() + "?=") }
        return words.joined(separator: "\r\n ")
    }

    /// The body with CRLF line ends: "7bit" when ASCII with short lines, else "base64" (76-column lines).
    static func encodeBody(_ text: String) -> (encoding: String, body: String) {
        let lines = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .components(separatedBy: "\n")
        let crlf = lines.joined(separator: "\r\n") + "\r\n"
        if crlf.unicodeScalars.allSatisfy({ $0.isASCII && ($0.value >= 0x20 || $0 == "\r" || $0 == "\n" || $0 == "\t") }),
           lines.allSatisfy({ $0.utf8.count <= 998 }) {
            return ("7bit", crlf)
        }
        let encoded = Data(crlf.utf8).base64EncodedString(options: [.lineLength76Characters, .endLineWithCarriageReturn,
                                                                     .endLineWithLineFeed])
        return ("base64", encoded + "\r\n")
    }

    /// RFC 5322 date-time in UTC: "Tue, 14 May 2024 10:00:00 +0000".
    static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
