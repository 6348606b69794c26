import Foundation
import HeraldHTTP
import HeraldTestSupport
import Testing

/// Mail over SMTP through the same transport (and multi handle) as HTTP, against the fake SMTP server.
extension HTTPSuite {
@Suite struct SMTPTransportTests {
    static let user = "herald@example.com"
    static let password = "p@ss w0rd:secret"

    static func message(to: String = "ada@example.com", subject: String = "Hello", body: String = "Hi Ada.") -> [UInt8] {
        Array(("From: herald@example.com\r\nTo: \(to)\r\nSubject: \(subject)\r\n"
               + "Message-ID: <m-\(to)@herald>\r\n\r\n\(body)\r\n").utf8)
    }

    static func mail(_ server: FakeSMTPServer, to: String = "ada@example.com", password: String = password,
                     requireTLS: Bool = true, body: [UInt8]? = nil, timeout: Double = 10) -> HTTPRequest {
        HTTPRequest(url: server.url(user: user, password: password), body: body ?? message(to: to), timeout: timeout,
                    mail: MailEnvelope(from: "herald@example.com", recipients: [to], requireTLS: requireTLS))
    }

    @Test func deliversOverSTARTTLSWithAuth() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password)
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))

        let result = transport.perform(Self.mail(server, body: Self.message(body: "line one\r\n.leading dot\r\n..two")))

        let response = try #require(result.success, "\(String(describing: result.failure)) \(server.commands)")
        #expect(response.status == 250)
        #expect(response.body.isEmpty)
        #expect(response.header("message-id") == "<m-ada@example.com@herald>")
        #expect(response.header("smtp-reply")?.hasPrefix("250 2.0.0 OK: queued as FAKE1") == true)
        let mail = try #require(server.mails.first)
        #expect(mail.tls)
        #expect(mail.authenticatedUser == Self.user)
        #expect(mail.from == "herald@example.com")
        #expect(mail.recipients == ["ada@example.com"])
        #expect(mail.header("Subject") == "Hello")
        // Dot-stuffed by libcurl, unstuffed by the server: the lines arrive as written.
        #expect(mail.body == "line one\r\n.leading dot\r\n..two\r\n")
        #expect(server.commands.contains("STARTTLS"))
    }

    @Test func authPlainWhenOnlyPlainIsOffered() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password,
                                        authMechanisms: ["PLAIN"])
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let result = transport.perform(Self.mail(server))
        #expect(result.success?.status == 250, "\(String(describing: result.failure))")
        #expect(server.mails.first?.authMechanism == "PLAIN")
        #expect(server.mails.first?.authenticatedUser == Self.user)
    }

    @Test func implicitTLS() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, implicitTLS: true, user: Self.user, password: Self.password)
        defer { server.shutdown() }
        #expect(server.url().hasPrefix("smtps://"))
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let result = transport.perform(Self.mail(server))
        #expect(result.success?.status == 250, "\(String(describing: result.failure))")
        #expect(server.mails.first?.tls == true)
        #expect(!server.commands.contains("STARTTLS"))
    }

    @Test func severalMailsConcurrentlyWithHTTPOnOneCall() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let smtp = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password)
        defer { smtp.shutdown() }
        let http = try FakeHTTPServer(tls: certificates) { _ in .text(200, "ok", delay: 0.2) }
        defer { http.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))

        var requests = (0..<8).map { Self.mail(smtp, to: "user\($0)@example.com") }
        requests.append(HTTPRequest(url: http.baseURL + "/hook", body: Array("{}".utf8)))
        let results = performAll(transport, requests)

        #expect(results.count == 9)
        for index in 0..<8 {
            #expect(results[index]?.count == 1)
            #expect(results[index]?.first?.success?.status == 250, "\(String(describing: results[index]))")
            #expect(results[index]?.first?.success?.header("message-id") == "<m-user\(index)@example.com@herald>")
        }
        #expect(results[8]?.first?.success?.text == "ok")
        #expect(Set(smtp.mails.flatMap(\.recipients)) == Set((0..<8).map { "user\($0)@example.com" }))
        #expect(smtp.mails.allSatisfy { $0.tls && $0.authenticatedUser == Self.user })
        #expect(smtp.connectionCount > 1, "mails went one after another on one connection")

        // A second batch reuses the cached SMTP connections (no new EHLO/AUTH per mail).
        let again = performAll(transport, (0..<3).map { Self.mail(smtp, to: "again\($0)@example.com") })
        #expect(again.values.allSatisfy { $0.first?.success?.status == 250 })
        #expect(smtp.mails.count == 11)
    }

    @Test func recipientRefusalsCarryCodeAndCommand() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password, recipientReplies: [
            "gone@example.com": "550 5.1.1 <gone@example.com>: No such user",
            "busy@example.com": "451 4.3.0 Try again later",
        ])
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let results = performAll(transport, [Self.mail(server, to: "gone@example.com"),
                                             Self.mail(server, to: "busy@example.com"),
                                             Self.mail(server, to: "fine@example.com")])

        guard case .smtp(let code, let command, let message) = results[0]?.first?.failure else {
            Issue.record("expected .smtp, got \(String(describing: results[0]))")
            return
        }
        #expect(code == 550)
        #expect(command == .rcpt)
        #expect(message.contains("No such user"))
        guard case .smtp(451, .rcpt, _) = results[1]?.first?.failure else {
            Issue.record("expected .smtp(451, RCPT), got \(String(describing: results[1]))")
            return
        }
        #expect(results[2]?.first?.success?.status == 250)
        #expect(server.mails.map(\.recipients) == [["fine@example.com"]])
    }

    @Test func messageRefusedAfterItsData() throws {
        let server = try FakeSMTPServer(dataReply: "554 5.7.1 Message rejected as spam")
        defer { server.shutdown() }
        let result = try HTTPTransport().perform(Self.mail(server, requireTLS: false))
        guard case .smtp(554, .endOfData, let message) = result.failure else {
            Issue.record("expected .smtp(554, \".\"), got \(result)")
            return
        }
        #expect(message.contains("rejected as spam"))
    }

    @Test func wrongPasswordIsAuthRefusalWithoutThePassword() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeSMTPServer(tls: certificates, user: Self.user, password: Self.password)
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let result = transport.perform(Self.mail(server, password: "wrong-Pa55"))
        guard case .smtp(535, .auth, let message) = result.failure else {
            Issue.record("expected .smtp(535, AUTH), got \(result)")
            return
        }
        #expect(!message.contains("wrong-Pa55"))
        #expect(!message.contains(Self.password))
        #expect(server.mails.isEmpty)
    }

    @Test func requiredTLSWithoutSTARTTLSFails() throws {
        let server = try FakeSMTPServer(user: Self.user, password: Self.password)   // no certificates: no STARTTLS
        defer { server.shutdown() }
        let result = try HTTPTransport().perform(Self.mail(server))
        guard case .smtp(_, .starttls, _) = result.failure else {
            Issue.record("expected .smtp(STARTTLS), got \(result)")
            return
        }
        #expect(server.mails.isEmpty)
        #expect(!server.commands.contains { $0.hasPrefix("AUTH") }, "credentials sent in the clear")

        // Not required: sent in the clear.
        let clear = try HTTPTransport().perform(Self.mail(server, requireTLS: false))
        #expect(clear.success?.status == 250, "\(clear)")
        #expect(server.mails.first?.tls == false)
    }

    @Test func closedPortIsConnectionRefused() throws {
        let request = HTTPRequest(url: "smtp://127.0.0.1:\(RefusingPort.port)", body: Self.message(to: "ada@example.com"),
                                  mail: MailEnvelope(from: "herald@example.com", recipients: ["ada@example.com"]))
        #expect(try HTTPTransport().perform(request).failure == .connectionRefused)
    }

    @Test func stalledServerTimesOut() throws {
        let server = try FakeSMTPServer(stall: true)
        defer { server.shutdown() }
        // The server never answers: only the 0.5 s limit can end the call.
        let result = try HTTPTransport().perform(Self.mail(server, timeout: 0.5))
        #expect(result.failure == .timeout)
    }

    @Test func addressesThatCouldInjectCommandsAreRefused() throws {
        let server = try FakeSMTPServer()
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        for address in ["a@example.com>\r\nRCPT TO:<b@example.com", "a b@example.com", "", "<a@example.com>"] {
            var request = Self.mail(server, requireTLS: false)
            request.mail?.recipients = [address]
            guard case .other = transport.perform(request).failure else {
                Issue.record("\(address.debugDescription) was not refused")
                continue
            }
        }
        var noRecipient = Self.mail(server, requireTLS: false)
        noRecipient.mail?.recipients = []
        #expect(transport.perform(noRecipient).failure != nil)
        var httpURL = Self.mail(server, requireTLS: false)
        httpURL.url = "http://127.0.0.1:\(server.port)"
        #expect(transport.perform(httpURL).failure != nil)
        #expect(server.mails.isEmpty)
    }
}
}
