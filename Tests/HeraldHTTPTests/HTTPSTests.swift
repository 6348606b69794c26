import Foundation
import HeraldHTTP
import HeraldTestSupport
import Testing

/// TLS, the extra CA and HTTP/2, against the fake server with a throw-away CA.
extension HTTPSuite {
@Suite struct HTTPSTests {
    @Test func trustedExtraCANegotiatesHTTP2() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates) { request in
            .json(200, #"{"saw":"\#(request.httpVersion)"}"#, headers: [("apns-id", request.header("apns-id") ?? "")])
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))

        let result = transport.perform(HTTPRequest(url: server.baseURL + "/3/device/abc",
                                                   headers: [("apns-id", "A1")], body: Array("{}".utf8)))

        let response = try #require(result.success, "\(String(describing: result.failure))")
        #expect(response.status == 200)
        #expect(response.httpVersion == 20)
        #expect(response.text == #"{"saw":"2"}"#)
        #expect(response.header("apns-id") == "A1")
        let seen = try #require(server.requests.first)
        #expect(seen.httpVersion == "2")
        #expect(seen.body == Array("{}".utf8))
        #expect(seen.path == "/3/device/abc")
    }

    @Test func http1_1OverTLSWhenAsked() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates) { request in .text(200, request.httpVersion) }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let response = try #require(transport.perform(
            HTTPRequest(method: "GET", url: server.baseURL + "/", version: .http1_1)).success)
        #expect(response.httpVersion == 11)
        #expect(response.text == "1.1")
    }

    @Test func http2FallsBackToHTTP1_1WhenTheServerOnlyOffersIt() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates, http2: false) { request in .text(200, request.httpVersion) }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let results = performAll(transport, (0..<10).map { _ in HTTPRequest(url: server.baseURL + "/") })
        #expect(results.count == 10)
        #expect(results.values.allSatisfy { $0.count == 1 && $0[0].success?.httpVersion == 11 && $0[0].success?.text == "1.1" })
    }

    @Test func concurrentRequestsMultiplexOnFewConnections() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates) { request in .text(200, request.text, delay: 0.1) }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let requests = (0..<150).map { HTTPRequest(url: server.baseURL + "/m", body: Array("\($0)".utf8)) }

        let results = performAll(transport, requests)

        #expect(results.count == 150)
        #expect(results.allSatisfy { index, outcomes in
            outcomes.count == 1 && outcomes[0].success?.text == "\(index)" && outcomes[0].success?.httpVersion == 20
        })
        #expect(server.requests.count == 150)
        #expect(server.requests.allSatisfy { $0.httpVersion == "2" })
        #expect(server.connectionCount <= 4, "\(server.connectionCount) connections for 150 h2 requests")
        #expect(server.peakInFlight >= 10, "at most \(server.peakInFlight) h2 streams at once")

        // The connection stays in the multi handle's cache: a second call opens no new one.
        let before = server.connectionCount
        let again = performAll(transport, Array(requests.prefix(20)))
        #expect(again.values.allSatisfy { $0.first?.success?.status == 200 })
        #expect(server.connectionCount == before)
    }

    @Test func untrustedServerFailsWithTLS() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates) { _ in .text(200, "should not be reached") }
        defer { server.shutdown() }

        let result = try HTTPTransport().perform(HTTPRequest(url: server.baseURL + "/"))

        guard case .failure(.tls(let message)) = result else {
            Issue.record("expected .tls, got \(result)")
            return
        }
        #expect(!message.isEmpty)
        #expect(server.requests.isEmpty)
    }

    @Test func anotherCAIsNotTrusted() throws {
        let serverCertificates = try TestCertificates.make()
        let otherCertificates = try TestCertificates.make()
        defer { serverCertificates.remove(); otherCertificates.remove() }
        let server = try FakeHTTPServer(tls: serverCertificates) { _ in .text(200, "no") }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: otherCertificates.caFile))
        let result = transport.perform(HTTPRequest(url: server.baseURL + "/"))
        guard case .failure(.tls) = result else {
            Issue.record("expected .tls, got \(result)")
            return
        }
    }

    @Test func unreadableCAFileFailsInit() throws {
        let missing = "/nonexistent/herald-\(UUID().uuidString).pem"
        #expect(throws: TransportSetupError.unreadableCAFile(path: missing, reason: "no such file")) {
            try HTTPTransport(options: .init(caFile: missing))
        }

        let notPEM = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).pem")
        try Data("hello".utf8).write(to: notPEM)
        defer { try? FileManager.default.removeItem(at: notPEM) }
        #expect(throws: TransportSetupError.self) {
            try HTTPTransport(options: .init(caFile: notPEM.path))
        }
    }
}
}
