import Foundation
import HeraldChannels
import HeraldCore
import HeraldHTTP
import HeraldTestSupport
import Testing

/// SMTPAdapter: the message it builds and how it classifies the server's answers, through the real
/// transport against the fake SMTP server.
@Suite(.serialized) struct SMTPAdapterTests {
    static let user = "herald"
    static let password = "Sup3r-secret!"
    static let queueId = UUID(uuidString: "6F1C2B0A-1111-4222-8333-944455556666")!
    static let now = Date(timeIntervalSince1970: 1_715_680_800)   // Tue, 14 May 2024 10:00:00 UTC

    static func envelope(to address: String = "ada@example.com", title: String = "Time for your check-in",
                         body: String = "Your daily check-in is due.", locale: String = "en") -> Envelope {
        Envelope(
            item: QueueItem(id: queueId, recipientUserId: UUID(), channelRaw: "email", kindRaw: "checkin_due",
                            scheduledAt: now),
            rendered: RenderedNotification(title: title, body: body, deepLink: "herald://checkins", locale: locale),
            destination: Destination(provider: .smtp, address: address),
            now: now)
    }

    /// Sends `envelope` through a new transport and classifies the result.
    static func send(_ adapter: SMTPAdapter, _ envelope: Envelope, caFile: String? = nil) throws -> ClassifiedResponse {
        let transport = try HTTPTransport(options: .init(caFile: caFile))
        return adapter.classify(transport.perform(try adapter.request(for: envelope)), now: now)
    }

    /// Decodes RFC 2047 `=?UTF-8?B?…?=` words (folding between words dropped); other text as is.
    static func decodeWords(_ value: String) -> String {
        let words = value.components(separatedBy: .whitespaces).filter { !$0.isEmpty }
        guard words.allSatisfy({ $0.hasPrefix("=?UTF-8?B?") && $0.hasSuffix("?=") }) else { return value }
        let bytes = words.flatMap { word -> [UInt8] in
            Array(Data(base64Encoded: String(word.dropFirst(10).dropLast(2))) ?? Data())
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Through the transport

    @Test func deliversArabicMailOverSTARTTLS() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password)
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(user: Self.user, password: Self.password),
                                      from: "فريق هيرالد <herald@example.com>")
        let title = "حان وقت تسجيل الوصول اليومي الخاص بك، لا تنس ذلك من فضلك"
        let body = "تسجيل الوصول اليومي مستحق.\nشكراً لك."

        let classified = try Self.send(adapter, Self.envelope(title: title, body: body, locale: "ar"),
                                       caFile: certificates.caFile)

        #expect(classified.outcome == .delivered(messageId: "6f1c2b0a-1111-4222-8333-944455556666@herald"))
        #expect(classified.httpStatus == 250)
        let mail = try #require(server.mails.first)
        #expect(mail.tls)
        #expect(mail.authenticatedUser == Self.user)
        #expect(mail.from == "herald@example.com")
        #expect(mail.recipients == ["ada@example.com"])
        #expect(mail.header("Date") == "Tue, 14 May 2024 10:00:00 +0000")
        #expect(mail.header("To") == "ada@example.com")
        #expect(mail.header("Message-ID") == "<6f1c2b0a-1111-4222-8333-944455556666@herald>")
        #expect(mail.header("X-Herald-Notification-Id") == "6f1c2b0a-1111-4222-8333-944455556666")
        #expect(mail.header("MIME-Version") == "1.0")
        #expect(mail.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(mail.header("Content-Transfer-Encoding") == "base64")
        let subject = try #require(mail.header("Subject"))
        #expect(subject.hasPrefix("=?UTF-8?B?"))
        #expect(Self.decodeWords(subject) == title)
        let from = try #require(mail.header("From"))
        #expect(from.hasSuffix(" <herald@example.com>"))
        #expect(Self.decodeWords(String(from.dropLast(" <herald@example.com>".count))) == "فريق هيرالد")
        // Header lines stay within 78 characters (encoded words are folded).
        #expect(mail.text.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n")
                    .allSatisfy { $0.utf8.count <= 78 })
        let decoded = String(decoding: Data(base64Encoded: mail.body, options: .ignoreUnknownCharacters) ?? Data(),
                             as: UTF8.self)
        #expect(decoded == "تسجيل الوصول اليومي مستحق.\r\nشكراً لك.\r\n\r\nherald://checkins\r\n")
        #expect(mail.body.components(separatedBy: "\r\n").allSatisfy { $0.count <= 76 })
    }

    @Test func asciiMailIsSevenBit() throws {
        let server = try FakeSMTPServer()
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(), from: "Herald, Inc. <herald@example.com>", requireTLS: false)
        let classified = try Self.send(adapter, Self.envelope(body: "Line one\n.line two"))
        #expect(classified.outcome.label == "delivered")
        let mail = try #require(server.mails.first)
        #expect(mail.header("Subject") == "Time for your check-in")
        #expect(mail.header("From") == "\"Herald, Inc.\" <herald@example.com>")
        #expect(mail.header("Content-Transfer-Encoding") == "7bit")
        #expect(mail.body == "Line one\r\n.line two\r\n\r\nherald://checkins\r\n")
        #expect(mail.tls == false)
    }

    @Test func deadMailboxIsDestinationInvalid() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password, recipientReplies: [
            "gone@example.com": "550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown",
            "nolocal@example.com": "551 5.1.6 User not local",
            "badname@example.com": "553 5.1.3 Mailbox name not allowed",
            "full@example.com": "552 5.2.2 Mailbox full",
            "busy@example.com": "451 4.3.0 Temporary local problem",
        ])
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(user: Self.user, password: Self.password),
                                      from: "herald@example.com")
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let addresses = ["gone", "nolocal", "badname", "full", "busy"].map { "\($0)@example.com" }
        var outcomes: [Int: DeliveryOutcome] = [:]
        transport.perform(try addresses.map { try adapter.request(for: Self.envelope(to: $0)) }) { index, result in
            outcomes[index] = adapter.classify(result, now: Self.now).outcome
        }
        guard case .destinationInvalid("550", let message) = outcomes[0] else {
            Issue.record("550: \(String(describing: outcomes[0]))")
            return
        }
        #expect(message.contains("User unknown"))
        #expect(outcomes[1]?.label == "destination_invalid" && outcomes[1]?.code == "551")
        #expect(outcomes[2]?.label == "destination_invalid" && outcomes[2]?.code == "553")
        #expect(outcomes[3]?.label == "permanent" && outcomes[3]?.code == "552")
        guard case .retry(nil, "451", _) = outcomes[4] else {
            Issue.record("451: \(String(describing: outcomes[4]))")
            return
        }
        #expect(server.mails.isEmpty)
    }

    /// (reply code, the server's words at RCPT TO, the outcome's label). With an enhanced status code
    /// (RFC 3463) it decides: 5.1.x is a dead address, any other 5.x.x is about this message or server.
    /// Without one: 551 and 553 are about the address, 550 too unless its text names a policy refusal.
    /// A relay denial is the configuration's fault: retried, naming SMTP_URL and EMAIL_FROM.
    @Test(arguments: [
        (550, "550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown", "destination_invalid"),
        (550, "550-5.1.1 The email account that you tried to reach does not exist.", "destination_invalid"),
        (551, "551 5.1.6 User not local", "destination_invalid"),
        (553, "553 5.1.3 Mailbox name not allowed", "destination_invalid"),
        (550, "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup", "destination_invalid"),
        (550, "550 5.7.1 <x@example.org>: Relay access denied", "retry"),
        (554, "554 5.7.1 <x@example.org>: Relay access denied", "retry"),
        (550, "550 5.7.1 Service unavailable; client host [192.0.2.1] blocked using zen.spamhaus.org", "permanent"),
        (550, "550 5.7.1 Message rejected as spam", "permanent"),
        (550, "550 5.2.1 Mailbox disabled, not accepting messages", "permanent"),
        (553, "553 5.7.1 Sender address rejected: not owned by user", "permanent"),
        (550, "550 Requested action not taken: mailbox unavailable", "destination_invalid"),
        (551, "551 User not local; please try <forward@example.com>", "destination_invalid"),
        (550, "550 relaying denied", "retry"),
        (550, "550 Administrative prohibition: policy violation", "permanent"),
        (550, "550 Blocked by the recipient's spam filter", "permanent"),
        (550, "550 Access denied", "permanent"),
        (554, "554 Transaction failed", "permanent"),
        (450, "450 4.1.1 Mailbox temporarily unavailable", "retry"),
        // "relay" inside an address or a table's name is no relay denial; 5.1.x wins over the words.
        (550, "550 5.1.1 <a@relay.fm>: Recipient address rejected: User unknown", "destination_invalid"),
        (550, "550 5.1.1 <a@example.com>: Recipient address rejected: User unknown in relay recipient table", "destination_invalid"),
        (550, "550 <a@relay.fm>: Recipient address rejected: User unknown", "destination_invalid"),
        (550, "550 <a@example.com>: Recipient address rejected: User unknown in relay recipient table", "destination_invalid"),
        (550, "550 5.7.1 Unable to relay for x@example.org", "retry"),
        (550, "550 relay not permitted", "retry"),
    ])
    func recipientRefusalsByEnhancedCode(_ code: Int, _ words: String, _ label: String) throws {
        let adapter = try SMTPAdapter(url: "smtp://herald:pw@mail.example.com:587", from: "herald@example.com")
        let classified = adapter.classify(.failure(.smtp(code: code, command: .rcpt, message: "RCPT failed: \(code): \(words)")),
                                          now: Self.now)
        #expect(classified.outcome.label == label, "\(words): \(classified.outcome)")
        #expect(classified.outcome.code == String(code))
        if label == "retry", code >= 500 {
            #expect(classified.outcome.message?.contains("SMTP_URL") == true)
            #expect(classified.outcome.message?.contains("EMAIL_FROM") == true)
        }
        #expect(classified.throttle == nil)
    }

    @Test func relayDenialKeepsTheAddressAndMailboxErrorsDoNot() throws {
        let server = try FakeSMTPServer(recipientReplies: [
            "outside@example.org": "550 5.7.1 <outside@example.org>: Relay access denied",
            "gone@example.com": "550 5.1.1 No such user",
        ])
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(), from: "herald@example.com", requireTLS: false)
        let relay = try Self.send(adapter, Self.envelope(to: "outside@example.org")).outcome
        #expect(relay.label == "retry", "\(relay)")
        #expect(relay.message?.contains("SMTP_URL") == true && relay.message?.contains("Relay access denied") == true)
        let gone = try Self.send(adapter, Self.envelope(to: "gone@example.com")).outcome
        #expect(gone.label == "destination_invalid" && gone.code == "550", "\(gone)")
        #expect(server.mails.isEmpty)
    }

    @Test func rejectedMessageIsPermanent() throws {
        let server = try FakeSMTPServer(dataReply: "550 5.7.1 Message content rejected")
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(), from: "herald@example.com", requireTLS: false)
        let outcome = try Self.send(adapter, Self.envelope()).outcome
        // A 550 to the message itself is about the content, not the mailbox.
        #expect(outcome.label == "permanent")
        #expect(outcome.code == "550")
    }

    /// A refused password is herald's configuration: refused (the pass stops calling the server), never echoed.
    @Test func wrongPasswordIsRefusedAndNeverEchoed() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password)
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(user: Self.user, password: "Wr0ng-guess"), from: "herald@example.com")
        let outcome = try Self.send(adapter, Self.envelope(), caFile: certificates.caFile).outcome
        guard case .refused(let code, let message) = outcome else {
            Issue.record("expected refused, got \(outcome)")
            return
        }
        #expect(code == "535")
        #expect(message.contains("SMTP_URL"))
        #expect(!message.contains("Wr0ng-guess"))
        #expect(!message.contains(Self.password))
        #expect(adapter.redactedURL.contains("***"))
        #expect(!adapter.redactedURL.contains("Wr0ng-guess"))
    }

    /// A refusal of several lines is classified by all of them: the policy named on the first line is
    /// not lost behind the last ("Contact postmaster"), so the address is not taken for dead.
    @Test func multiLineRefusalIsReadWhole() throws {
        let server = try FakeSMTPServer(recipientReplies: [
            "ada@example.com": "550-Rejected by local policy\n550 Contact postmaster",
            "gone@example.com": "550-The account you tried to reach\n550-does not exist.\n550 5.1.1 See https://example.com/help",
        ])
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(), from: "herald@example.com", requireTLS: false)
        let policy = try Self.send(adapter, Self.envelope(to: "ada@example.com")).outcome
        #expect(policy.label == "permanent" && policy.code == "550", "\(policy)")
        #expect(policy.message?.contains("Rejected by local policy Contact postmaster") == true, "\(policy)")
        let gone = try Self.send(adapter, Self.envelope(to: "gone@example.com")).outcome
        #expect(gone.label == "destination_invalid", "\(gone)")
        #expect(gone.message?.contains("The account you tried to reach does not exist. 5.1.1 See") == true, "\(gone)")
    }

    /// libcurl reports a refused STARTTLS with the server's reply code (CURLE_USE_SSL_FAILED, "STARTTLS
    /// denied, code 454"): a 4yz is transient, a 5yz is the server's configuration (refused: every mail
    /// would be); neither sends the mail in the clear.
    @Test func starttlsRefusedFor4yzIsRetriedAnd5yzIsRefused() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        for (reply, label) in [("454 4.7.0 TLS not available due to temporary reason", "retry"),
                               ("554 5.7.3 TLS not available", "refused")] {
            let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password, starttlsReply: reply)
            defer { server.shutdown() }
            let adapter = try SMTPAdapter(url: server.url(user: Self.user, password: Self.password), from: "herald@example.com")
            let classified = try Self.send(adapter, Self.envelope(), caFile: certificates.caFile)
            #expect((classified.outcome.isRefused ? "refused" : classified.outcome.label) == label, "\(reply): \(classified.outcome)")
            #expect(classified.outcome.code == String(reply.prefix(3)))
            #expect(classified.outcome.message?.contains(String(reply.dropFirst(4))) == true, "\(classified.outcome)")
            #expect(!(classified.outcome.message ?? "").contains(Self.password))
            #expect(server.mails.isEmpty)
            #expect(!server.commands.contains { $0.hasPrefix("AUTH") }, "credentials sent in the clear")
        }
    }

    /// A server that echoes the password (as written, decoded, or base64 as AUTH sent it) does not put
    /// it into last_error.
    @Test func echoedPasswordIsRedacted() throws {
        let adapter = try SMTPAdapter(url: "smtp://herald:S3cr%40t-pass@mail.example.com:587", from: "herald@example.com")
        let forms = ["S3cr@t-pass", "S3cr%40t-pass", Data("S3cr@t-pass".utf8).base64EncodedString(),
                     Data("\u{0}herald\u{0}S3cr@t-pass".utf8).base64EncodedString()]
        for form in forms {
            let words = "RCPT failed: 550: 550 5.1.1 unknown user; you said \(form)"
            let outcome = adapter.classify(.failure(.smtp(code: 550, command: .rcpt, message: words)), now: Self.now).outcome
            #expect(outcome.label == "destination_invalid")
            expectNoSecrets(outcome, forms)
            let retry = adapter.classify(.failure(.smtp(code: 451, command: .data, message: words)), now: Self.now).outcome
            expectNoSecrets(retry, forms)
        }
    }

    @Test func serverWithoutSTARTTLSIsRefusedWhenTLSIsRequired() throws {
        let server = try FakeSMTPServer(user: Self.user, password: Self.password)
        defer { server.shutdown() }
        let adapter = try SMTPAdapter(url: server.url(user: Self.user, password: Self.password), from: "herald@example.com")
        let outcome = try Self.send(adapter, Self.envelope()).outcome
        guard case .refused("starttls", let message) = outcome else {
            Issue.record("expected refused starttls, got \(outcome)")
            return
        }
        #expect(message.contains("STARTTLS"))
        #expect(!message.contains(Self.password))
        #expect(server.mails.isEmpty)
    }

    @Test func connectionRefusedIsRetried() throws {
        let server = try FakeSMTPServer()
        let adapter = try SMTPAdapter(url: server.url(), from: "herald@example.com")
        server.shutdown()
        let outcome = try Self.send(adapter, Self.envelope()).outcome
        #expect(outcome == .retry(after: nil, code: "connection_refused", message: "smtp: connection refused"))  // named like every provider's
    }

    @Test func stalledServerTimesOutAndIsRetried() throws {
        let server = try FakeSMTPServer(stall: true)
        defer { server.shutdown() }
        var adapter = try SMTPAdapter(url: server.url(), from: "herald@example.com")
        adapter.timeout = 0.5
        let start = Date()
        let outcome = try Self.send(adapter, Self.envelope()).outcome
        #expect(outcome.label == "retry")
        #expect(outcome.code == "timeout")
        #expect(Date().timeIntervalSince(start) < 3)
    }

    // MARK: Configuration and formatting

    @Test func badURLsThrowWithoutEchoingThePassword() {
        for url in ["http://u:hunter2@mail.example.com", "smtp://", "mail.example.com:587", "smtp://u:hunter2@/x"] {
            do {
                _ = try SMTPAdapter(url: url, from: "herald@example.com")
                Issue.record("\(url) accepted")
            } catch {
                let text = "\(error)"
                #expect(text.contains("SMTP_URL"))
                #expect(!text.contains("hunter2"))
            }
        }
        #expect(throws: AdapterError.self) { try SMTPAdapter(url: "smtp://mail.example.com", from: "not an address") }
        #expect(throws: AdapterError.self) { try SMTPAdapter(url: "smtp://mail.example.com", from: "A <a@b.c>\r\nBcc: x@y.z") }
        #expect((try? SMTPAdapter(url: "smtps://u:p@mail.example.com:465", from: "Herald <h@example.com>")) != nil)
    }

    @Test func requestCarriesTheEnvelope() throws {
        let adapter = try SMTPAdapter(url: "smtp://u:p@mail.example.com:587", from: "Herald <herald@example.com>")
        let request = try adapter.request(for: Self.envelope(to: "ada@example.com"))
        #expect(request.url == "smtp://u:p@mail.example.com:587")
        #expect(request.mail == MailEnvelope(from: "herald@example.com", recipients: ["ada@example.com"], requireTLS: true))
        let text = String(decoding: request.body, as: UTF8.self)
        #expect(text.hasPrefix("Date: Tue, 14 May 2024 10:00:00 +0000\r\nFrom: \"Herald\" <herald@example.com>\r\n"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"), "bare LF in \(text)")
        #expect(throws: AdapterError.self) { try adapter.request(for: Self.envelope(to: "ada@example.com\r\nBcc: x@y.z")) }
        #expect(throws: AdapterError.self) { try adapter.request(for: Self.envelope(to: "+15551234567")) }
    }

    @Test func subjectLineBreaksCannotAddHeaders() throws {
        let adapter = try SMTPAdapter(url: "smtp://mail.example.com", from: "herald@example.com")
        let text = adapter.message(for: Self.envelope(title: "Hi\r\nBcc: evil@example.com"), to: "ada@example.com")
        #expect(!text.contains("\r\nBcc:"))
        #expect(text.contains("\r\nSubject: Hi Bcc: evil@example.com\r\n"))
    }
}
