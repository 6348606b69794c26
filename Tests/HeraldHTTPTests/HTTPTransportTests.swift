import Foundation
import HeraldHTTP
import HeraldTestSupport
import Testing

/// The transport against the fake HTTP server on loopback.
extension HTTPSuite {
@Suite struct HTTPTransportTests {
    // MARK: Round trips

    @Test func getRoundTripsHeadersAndQuery() throws {
        let server = try FakeHTTPServer { request in
            .json(200, #"{"path":"\#(request.path)"}"#,
                  headers: [("X-Echo", request.header("x-request-id") ?? "none"), ("x-method", request.method)])
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(userAgent: "herald/test"))
        let id = UUID().uuidString

        let result = transport.perform(HTTPRequest(
            method: "GET", url: server.baseURL + "/v1/things?limit=3",
            headers: [("X-Request-Id", id), ("x-empty", "")]))

        let response = try #require(result.success)
        #expect(response.status == 200)
        #expect(response.text == #"{"path":"/v1/things?limit=3"}"#)
        #expect(response.header("x-echo") == id)
        #expect(response.header("X-ECHO") == id)
        #expect(response.headers.contains { $0.0 == "x-echo" && $0.1 == id })
        #expect(response.header("x-method") == "GET")
        #expect(response.header("content-type") == "application/json")
        #expect(response.httpVersion == 11)
        #expect(response.seconds > 0)

        let seen = try #require(server.requests.first)
        #expect(server.requests.count == 1)
        #expect(seen.method == "GET")
        #expect(seen.path == "/v1/things?limit=3")
        #expect(seen.header("x-request-id") == id)
        #expect(seen.header("x-empty") == "")
        #expect(seen.header("user-agent") == "herald/test")
        #expect(seen.body.isEmpty)
        #expect(seen.httpVersion == "1.1")
    }

    @Test func postSendsTheExactBodyAndNoExpect() throws {
        let server = try FakeHTTPServer { request in
            FakeResponse(status: 201, headers: [("x-length", String(request.body.count))],
                         body: request.body.reversed())
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        // Binary, with NUL bytes, and large enough that curl would normally ask for 100-continue.
        let body = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

        let result = transport.perform(HTTPRequest(
            url: server.baseURL + "/upload", headers: [("content-type", "application/octet-stream")], body: body))

        let response = try #require(result.success)
        #expect(response.status == 201)
        #expect(response.body == body.reversed())
        #expect(response.header("x-length") == "5000")
        let seen = try #require(server.requests.first)
        #expect(seen.method == "POST")
        #expect(seen.body == body)
        #expect(seen.header("content-type") == "application/octet-stream")
        #expect(seen.header("expect") == nil)
    }

    @Test func otherMethodsUseCustomRequest() throws {
        let server = try FakeHTTPServer { request in
            .text(200, "\(request.method) \(request.body.count) \(request.header("content-length") ?? "-")")
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport()

        let put = transport.perform(HTTPRequest(method: "PUT", url: server.baseURL + "/a", body: Array("abc".utf8)))
        let emptyPost = transport.perform(HTTPRequest(method: "POST", url: server.baseURL + "/b"))
        let delete = transport.perform(HTTPRequest(method: "DELETE", url: server.baseURL + "/c"))

        #expect(try #require(put.success).text == "PUT 3 3")
        #expect(try #require(emptyPost.success).text == "POST 0 0")
        #expect(try #require(delete.success).text.hasPrefix("DELETE 0"))
        #expect(server.requests.map(\.method) == ["PUT", "POST", "DELETE"])
    }

    @Test func errorStatusesAreResponses() throws {
        let server = try FakeHTTPServer { request in
            request.path == "/boom"
                ? .json(500, #"{"error":"internal"}"#, headers: [("retry-after", "7")])
                : .json(404, #"{"error":"missing"}"#)
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport()

        let boom = try #require(transport.perform(HTTPRequest(url: server.baseURL + "/boom")).success)
        let missing = try #require(transport.perform(HTTPRequest(url: server.baseURL + "/nope")).success)

        #expect(boom.status == 500)
        #expect(boom.text == #"{"error":"internal"}"#)
        #expect(boom.header("retry-after") == "7")
        #expect(missing.status == 404)
    }

    @Test func repeatedResponseHeadersKeepTheirOrder() throws {
        let server = try FakeHTTPServer { _ in
            FakeResponse(status: 200, headers: [("Set-Cookie", "a=1"), ("X-Other", "o"), ("set-cookie", "b=2")])
        }
        defer { server.shutdown() }
        let response = try #require(try HTTPTransport().perform(
            HTTPRequest(method: "GET", url: server.baseURL + "/")).success)
        #expect(response.headers.filter { $0.0 == "set-cookie" }.map(\.1) == ["a=1", "b=2"])
        #expect(response.header("Set-Cookie") == "a=1")
        #expect(response.headers.allSatisfy { $0.0 == $0.0.lowercased() })
    }

    /// h2c works; libcurl 7.88 cannot reuse h2c connections (curl/curl#10634), so connections aren't counted.
    @Test func cleartextHTTP2WithPriorKnowledge() throws {
        let server = try FakeHTTPServer { request in .text(200, request.httpVersion + " " + request.text) }
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        let requests = (0..<30).map {
            HTTPRequest(url: server.baseURL + "/h2c", body: Array("\($0)".utf8), version: .http2PriorKnowledge)
        }
        let results = performAll(transport, requests)
        #expect(results.count == 30)
        let bad = results.filter { index, outcomes in
            !(outcomes.count == 1 && outcomes[0].success?.text == "2 \(index)" && outcomes[0].success?.httpVersion == 20)
        }
        #expect(bad.isEmpty, "\(bad.count) bad, e.g. \(String(describing: bad.first))")
        #expect(server.requests.count == 30)
        #expect(server.requests.allSatisfy { $0.httpVersion == "2" })
    }

    @Test func largeResponseBodiesAreCut() throws {
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0) }
        let server = try FakeHTTPServer { _ in FakeResponse(status: 200, body: big) }
        defer { server.shutdown() }
        let cut = try #require(try HTTPTransport(options: .init(maxResponseBytes: 1000))
            .perform(HTTPRequest(method: "GET", url: server.baseURL + "/big")).success)
        #expect(cut.status == 200)
        #expect(cut.body == Array(big.prefix(1000)))
        let whole = try #require(try HTTPTransport().perform(HTTPRequest(method: "GET", url: server.baseURL + "/big")).success)
        #expect(whole.body == big)
    }

    @Test func headerInjectionIsRefused() throws {
        let server = try FakeHTTPServer { _ in .text(200, "ok") }
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        let results = performAll(transport, [
            HTTPRequest(url: server.baseURL + "/", headers: [("x-a", "1\r\nx-injected: yes")]),
            HTTPRequest(url: server.baseURL + "/", headers: [("x-b: 2\r\nx-injected", "yes")]),
            HTTPRequest(url: server.baseURL + "/", headers: [("x-c", "fine")]),
        ])
        guard case .other = results[0]?.first?.failure, case .other = results[1]?.first?.failure else {
            Issue.record("expected failures, got \(results)")
            return
        }
        #expect(results[2]?.first?.success?.status == 200)
        #expect(server.requests.count == 1)
        #expect(server.requests.allSatisfy { $0.header("x-injected") == nil })
    }

    @Test func redirectsAreNotFollowed() throws {
        let server = try FakeHTTPServer { request in
            request.path == "/old" ? FakeResponse(status: 301, headers: [("location", "/new")]) : .text(200, "new")
        }
        defer { server.shutdown() }
        let response = try #require(try HTTPTransport().perform(HTTPRequest(url: server.baseURL + "/old")).success)
        #expect(response.status == 301)
        #expect(response.header("location") == "/new")
        #expect(server.requests.map(\.path) == ["/old"])
    }

    @Test func headersAreThoseOfTheFinalResponse() throws {
        let server = try FakeHTTPServer { _ in
            FakeResponse(status: 200, headers: [("x-final", "yes")], body: Array("ok".utf8),
                         informational: [(status: 103, headers: [("link", "</style.css>; rel=preload"),
                                                                 ("x-interim", "1")])])
        }
        defer { server.shutdown() }
        let response = try #require(try HTTPTransport().perform(
            HTTPRequest(method: "GET", url: server.baseURL + "/hints", version: .http1_1)).success)
        #expect(response.status == 200)
        #expect(response.header("x-final") == "yes")
        #expect(response.header("x-interim") == nil)
        #expect(response.header("link") == nil)
        #expect(response.text == "ok")
    }

    // MARK: Concurrency

    @Test func concurrentPostsRunConcurrentlyAndArriveOnce() throws {
        let server = try FakeHTTPServer { request in
            .text(200, "echo:" + request.text, delay: 0.1)
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        let count = 200
        let requests = (0..<count).map { HTTPRequest(url: server.baseURL + "/send", body: Array("n=\($0)".utf8)) }

        let results = performAll(transport, requests)

        // Each answer waits 100 ms, so requests sent one after another would never overlap.
        #expect(server.peakInFlight >= 10, "at most \(server.peakInFlight) requests at once: not concurrent")
        #expect(results.count == count)
        for index in 0..<count {
            let once = try #require(results[index]?.count == 1 ? results[index]?.first : nil,
                                    "request \(index) completed \(results[index]?.count ?? 0) times")
            #expect(once.success?.text == "echo:n=\(index)")
        }
        let bodies = server.requests.map(\.text)
        #expect(bodies.count == count)
        #expect(Set(bodies) == Set((0..<count).map { "n=\($0)" }))
    }

    @Test func transfersInFlightAreCapped() throws {
        let server = try FakeHTTPServer { request in .text(200, request.text, delay: 0.05) }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(maxTransfersInFlight: 5))
        let requests = (0..<40).map { HTTPRequest(url: server.baseURL + "/x", body: Array("\($0)".utf8)) }

        let results = performAll(transport, requests)

        #expect(server.peakInFlight <= 5, "\(server.peakInFlight) requests at once: the cap is 5")
        #expect(server.peakInFlight >= 2, "requests went one at a time")
        #expect(results.count == 40)
        #expect(results.allSatisfy { index, outcomes in outcomes.count == 1 && outcomes[0].success?.text == "\(index)" })
        #expect(server.requests.count == 40)
    }

    @Test func largeBatchesReuseHandlesAndAllComplete() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates) { request in .text(200, request.text) }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile, maxTransfersInFlight: 200))
        let count = 1000
        let requests = (0..<count).map { HTTPRequest(url: server.baseURL + "/bulk", body: Array("\($0)".utf8)) }
        var completions = 0
        var wrong: [(Int, Result<HTTPResponse, TransportError>)] = []
        transport.perform(requests) { index, result in
            completions += 1
            if result.success?.text != "\(index)" { wrong.append((index, result)) }
        }
        #expect(completions == count)
        #expect(wrong.count == 0, "\(wrong.count) wrong, e.g. \(wrong.prefix(3))")
        #expect(Set(server.requests.map(\.text)).count == count)
        #expect(server.connectionCount <= 4)
    }

    @Test func completionsArriveInCompletionOrder() throws {
        let server = try FakeHTTPServer { request in
            .text(200, request.path, delay: request.path == "/slow" ? 0.4 : 0)
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        var order: [Int] = []
        transport.perform([HTTPRequest(method: "GET", url: server.baseURL + "/slow"),
                           HTTPRequest(method: "GET", url: server.baseURL + "/fast")]) { index, _ in
            order.append(index)
        }
        #expect(order == [1, 0])
    }

    @Test func http1KeepAliveReusesOneConnectionAcrossCalls() throws {
        let server = try FakeHTTPServer { _ in .text(200, "ok") }
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        for _ in 0..<5 {
            #expect(transport.perform(HTTPRequest(url: server.baseURL + "/k")).success?.status == 200)
        }
        #expect(server.requests.count == 5)
        #expect(server.connectionCount == 1)
    }

    @Test func mixedOutcomesEachCompleteOnce() throws {
        let server = try FakeHTTPServer { request in
            request.path == "/slow" ? .text(200, "late", delay: 3) : .text(200, "ok")
        }
        defer { server.shutdown() }
        let closedURL = "http://127.0.0.1:\(RefusingPort.port)"
        let transport = try HTTPTransport()

        let results = performAll(transport, [
            HTTPRequest(url: server.baseURL + "/ok"),
            HTTPRequest(url: server.baseURL + "/slow", timeout: 0.3),
            HTTPRequest(url: closedURL + "/x"),
            HTTPRequest(url: "not a url at all"),
            HTTPRequest(url: server.baseURL + "/ok"),
        ])

        #expect(results.count == 5)
        #expect(results.values.allSatisfy { $0.count == 1 })
        #expect(results[0]?.first?.success?.text == "ok")
        #expect(results[1]?.first?.failure == .timeout)
        #expect(results[2]?.first?.failure == .connectionRefused)
        #expect(results[3]?.first?.success == nil)
        #expect(results[4]?.first?.success?.text == "ok")
    }

    // MARK: Errors

    @Test func slowServerTimesOut() throws {
        let server = try FakeHTTPServer { _ in .text(200, "too late", delay: 3) }
        defer { server.shutdown() }
        let transport = try HTTPTransport()
        // The answer comes after 3 s; a timeout is the proof that the 0.3 s limit was kept.
        let result = transport.perform(HTTPRequest(url: server.baseURL + "/slow", timeout: 0.3))
        #expect(result.failure == .timeout)
        #expect(server.requests.count == 1)
    }

    @Test func closedPortIsConnectionRefused() throws {
        let url = "http://127.0.0.1:\(RefusingPort.port)/x"
        let result = try HTTPTransport().perform(HTTPRequest(url: url))
        #expect(result.failure == .connectionRefused)
    }
}
}
