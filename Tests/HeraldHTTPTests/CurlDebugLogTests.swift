import Foundation
import HeraldHTTP
import HeraldTestSupport
import Testing

/// HERALD_CURL_VERBOSE: libcurl's description of each transfer, with credentials masked and no body.
extension HTTPSuite {
@Suite struct CurlDebugLogTests {
    // MARK: The masking, line by line

    @Test func requestHeaderBlockMasksCredentialsAndQuery() {
        var masker = CurlDebugMasker()
        let lines = masker.lines(.headerOut, "POST /hook?key=abc123 HTTP/1.1\r\nHost: hooks.example.com\r\n"
            + "Authorization: Bearer eyJhbGciOi.secret\r\nx-api-key: k-123\r\nCookie: sid=s3\r\n"
            + "Proxy-Authorization: Basic dXNlcjpwdw==\r\nX-Auth-Token: t0k\r\nContent-Type: application/json\r\n"
            + "apns-topic: com.example.app\r\n\r\n")
        #expect(lines == [
            "> POST /hook?*** HTTP/1.1", "> Host: hooks.example.com", "> Authorization: Bearer ***",
            "> x-api-key: ***", "> Cookie: ***", "> Proxy-Authorization: Basic ***", "> X-Auth-Token: ***",
            "> Content-Type: application/json", "> apns-topic: com.example.app", ">",
        ])
    }

    @Test func http2FieldsResponseFieldsAndNotes() {
        var masker = CurlDebugMasker()
        #expect(masker.lines(.headerOut, "authorization: bearer eyJ.jwt.sig\r\n") == ["> authorization: bearer ***"])
        #expect(masker.lines(.headerIn, "set-cookie: sid=abc; HttpOnly\r\n") == ["< set-cookie: ***"])
        #expect(masker.lines(.headerIn, "HTTP/2 200 \r\n") == ["< HTTP/2 200 "])
        #expect(masker.lines(.headerIn, "location: https://u:pw@h.example/x?sig=1\r\n")
                == ["< location: https://***@h.example/x?***"])
        // curl 8 describes HTTP/2 requests in notes.
        #expect(masker.lines(.text, "[HTTP/2] [1] [authorization: Bearer eyJ.jwt.sig]\n")
                == ["* [HTTP/2] [1] [authorization: Bearer ***]"])
        #expect(masker.lines(.text, "[HTTP/2] [1] [:path: /v1/send?access_token=t]\n")
                == ["* [HTTP/2] [1] [:path: /v1/send?***]"])
        #expect(masker.lines(.text, "[HTTP/2] [1] [:method: POST]\n") == ["* [HTTP/2] [1] [:method: POST]"])
        #expect(masker.lines(.text, "Issue another request to this URL: 'https://u:pw@h.example/x?k=1'\n")
                == ["* Issue another request to this URL: 'https://***@h.example/x?***'"])
        #expect(masker.lines(.text, "Connected to 127.0.0.1 (127.0.0.1) port 8080 (#0)\n")
                == ["* Connected to 127.0.0.1 (127.0.0.1) port 8080 (#0)"])
        #expect(masker.lines(.data, "{\"body\":\"health detail\"}").isEmpty)
        // APNs puts the device token in the path.
        let token = String(repeating: "ab12", count: 16)
        #expect(masker.lines(.headerOut, "POST /3/device/\(token) HTTP/2\r\n") == ["> POST /3/device/ab12…ab12 HTTP/2"])
        #expect(masker.lines(.text, "[HTTP/2] [1] [:path: /3/device/\(token)]\n") == ["* [HTTP/2] [1] [:path: /3/device/ab12…ab12]"])
    }

    @Test func smtpAuthArgumentsAndChallengeAnswersAreMasked() {
        var masker = CurlDebugMasker()
        #expect(masker.lines(.headerOut, "AUTH PLAIN AGhlcmFsZABwYXNz\r\n") == ["> AUTH PLAIN ***"])
        #expect(masker.lines(.headerOut, "AUTH LOGIN\r\n") == ["> AUTH LOGIN"])
        #expect(masker.lines(.headerIn, "334 VXNlcm5hbWU6\r\n") == ["< 334 VXNlcm5hbWU6"])
        #expect(masker.lines(.headerOut, "aGVyYWxk\r\n") == ["> ***"])
        #expect(masker.lines(.headerIn, "334 UGFzc3dvcmQ6\r\n") == ["< 334 UGFzc3dvcmQ6"])
        #expect(masker.lines(.headerOut, "cGFzcw==\r\n") == ["> ***"])
        #expect(masker.lines(.headerIn, "235 2.7.0 Authentication successful\r\n") == ["< 235 2.7.0 Authentication successful"])
        #expect(masker.lines(.headerOut, "MAIL FROM:<herald@example.com>\r\n") == ["> MAIL FROM:<herald@example.com>"])
        #expect(masker.lines(.headerOut, "AUTH XOAUTH2 dXNlcj1hQGIBYXV0aD1CZWFyZXIgeHl6AQE=\r\n") == ["> AUTH XOAUTH2 ***"])
    }

    // MARK: Real transfers

    static let password = "pa55-w0rd-XYZ"
    static let bearer = "bearer-secret-4f1e"

    @Test func httpTransferIsDescribedWithoutCredentialsOrBodies() throws {
        let server = try FakeHTTPServer { _ in .text(200, "response-body-detail") }
        defer { server.shutdown() }
        let lines = Lines()
        var options = TransportOptions()
        options.debugOutput = CurlDebugOutput { lines.append($0) }
        let transport = try HTTPTransport(options: options)
        let withUserInfo = server.baseURL.replacingOccurrences(of: "://", with: "://hook-user:\(Self.password)@")
        let requests = [
            HTTPRequest(method: "POST", url: withUserInfo + "/hook?token=query-secret-9",
                        headers: [("content-type", "application/json")], body: Array(#"{"body":"request-body-detail"}"#.utf8)),
            HTTPRequest(method: "POST", url: server.baseURL + "/send",
                        headers: [("authorization", "Bearer \(Self.bearer)"), ("x-api-key", "key-secret-77")],
                        body: Array("request-body-detail".utf8)),
        ]
        let results = performAll(transport, requests)
        #expect(results.values.allSatisfy { $0.first?.success?.status == 200 })

        let text = lines.text
        #expect(text.contains("POST /hook?*** HTTP/"), "\(text)")
        #expect(text.range(of: "authorization: basic ***", options: .caseInsensitive) != nil, "\(text)")
        #expect(text.range(of: "authorization: bearer ***", options: .caseInsensitive) != nil, "\(text)")
        let basic = Data("hook-user:\(Self.password)".utf8).base64EncodedString()
        for secret in [Self.password, basic, Self.bearer, "key-secret-77", "query-secret-9",
                       "request-body-detail", "response-body-detail"] {
            #expect(!text.contains(secret), "\(secret) reached the debug output:\n\(text)")
        }
    }

    @Test(arguments: ["PLAIN", "LOGIN"])
    func smtpTransferIsDescribedWithoutCredentialsOrMessage(_ mechanism: String) throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let user = "herald-mailer@example.com"
        let server = try FakeSMTPServer(tls: certificates, user: user, password: Self.password, authMechanisms: [mechanism])
        defer { server.shutdown() }
        let lines = Lines()
        var options = TransportOptions(caFile: certificates.caFile)
        options.debugOutput = CurlDebugOutput { lines.append($0) }
        let transport = try HTTPTransport(options: options)
        let message = "From: herald@example.com\r\nTo: ada@example.com\r\nSubject: Results\r\n\r\nmessage-body-detail\r\n"
        let result = transport.perform(HTTPRequest(
            url: server.url(user: user, password: Self.password), body: Array(message.utf8), timeout: 10,
            mail: MailEnvelope(from: "herald@example.com", recipients: ["ada@example.com"], requireTLS: true)))
        #expect(result.success?.status == 250, "\(String(describing: result.failure))")

        let text = lines.text
        #expect(text.contains("> AUTH \(mechanism)"), "\(text)")
        #expect(server.mails.first?.authMechanism == mechanism)
        let plain = Data("\0\(user)\0\(Self.password)".utf8).base64EncodedString()
        let encodedUser = Data(user.utf8).base64EncodedString()
        let encodedPassword = Data(Self.password.utf8).base64EncodedString()
        for secret in [Self.password, plain, encodedUser, encodedPassword, "message-body-detail"] {
            #expect(!text.contains(secret), "\(secret) reached the debug output:\n\(text)")
        }
    }

    @Test func environmentSwitch() {
        #expect(CurlDebugOutput.fromEnvironment(["HERALD_CURL_VERBOSE": "1"]) != nil)
        #expect(CurlDebugOutput.fromEnvironment(["HERALD_CURL_VERBOSE": "0"]) == nil)
        #expect(CurlDebugOutput.fromEnvironment([:]) == nil)
    }
}
}

/// Debug output collected from libcurl's callbacks (the transport's thread).
final class Lines: @unchecked Sendable {
    private var chunks: [String] = []
    private let lock = NSLock()

    func append(_ text: String) {
        lock.lock()
        chunks.append(text)
        lock.unlock()
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return chunks.joined()
    }
}
