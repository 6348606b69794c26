import CCurl
import Foundation
@testable import HeraldHTTP
import HeraldTestSupport
import Testing

/// A connection that ends under its requests is not their answer: the transport sends again at once, on a
/// new connection, what never wholly left, and what was sent when the caller says so; nothing waits for a
/// dead connection, and a request the server never processed is never processed twice.
extension HTTPSuite {
@Suite struct ConnectionEndTests {
    /// What the server did with the requests of one run, by body.
    struct Tally {
        var answered: [Int: Int] = [:]
        var failures: [Int: TransportError] = [:]
        var lost: [Int: Int] = [:]
        var completions = 0
    }

    /// Sends `count` requests (bodies "0"…) to `server`, resending a lost answer up to `maxLost` times.
    /// The timeout is long: a request left waiting on a dead connection fails the test however long
    /// it waits, while a busy machine's slow fake does not.
    static func run(_ server: FakeHTTPServer, _ certificates: TestCertificates?, count: Int, maxLost: Int,
                    version: HTTPVersion = .http2, timeout: Double = 120) throws -> Tally {
        let transport = try HTTPTransport(options: .init(caFile: certificates?.caFile, maxTransfersInFlight: 1000))
        let requests = (0..<count).map {
            HTTPRequest(url: server.baseURL + "/send", body: Array("\($0)".utf8), timeout: timeout, version: version)
        }
        var tally = Tally()
        transport.perform(requests, resendAfterLostAnswer: { index, error in
            #expect(error.isConnectionEnd)
            tally.lost[index, default: 0] += 1
            return tally.lost[index]! <= maxLost
        }) { index, result in
            tally.completions += 1
            switch result {
            case .success(let response): tally.answered[index] = Int(response.text)
            case .failure(let error): tally.failures[index] = error
            }
        }
        return tally
    }

    /// How many times the server processed each body.
    static func processed(_ server: FakeHTTPServer) -> [String: Int] {
        server.requests.reduce(into: [:]) { $0[$1.text, default: 0] += 1 }
    }

    /// Each way a server ends an HTTP/2 connection under 1,000 requests (at 20 ms an answer, ended every
    /// 200 requests), or refuses streams: every request is answered, once, and nothing waited for its
    /// timeout. A request the server processed twice is one whose answer was lost with its connection,
    /// sent again by the caller's choice: libcurl never sends one again by itself. After a GOAWAY, which
    /// names what was processed, or a refused stream, nothing is processed twice: a lost answer there is
    /// of a stream the server never processed (libcurl 7.88 still opens streams on a connection that
    /// sent a GOAWAY, and a stream refused after its body left looks to herald like a lost answer), so
    /// sending it again is no copy.
    @Test(arguments: [ConnectionEnding.abort(afterRequests: 200), .reset(afterRequests: 200),
                      .goAway(afterRequests: 200), .closeAfterResponse(afterRequests: 200), .refuseEvery(7)])
    func everyRequestIsAnsweredWhenAnHTTP2ServerEndsItsConnections(_ ending: ConnectionEnding) throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates, threads: 2, ending: ending) { request in
            .text(200, request.text, delay: 0.02)
        }
        defer { server.shutdown() }

        let tally = try Self.run(server, certificates, count: 1000, maxLost: 5)

        #expect(tally.completions == 1000)
        #expect(tally.failures.isEmpty, "\(tally.failures.prefix(3))")
        #expect(tally.answered.count == 1000 && tally.answered.allSatisfy { $0.key == $0.value })
        let twice = Self.processed(server).filter { $0.value > 1 }.compactMap { Int($0.key) }
        let unseen = twice.filter { tally.lost[$0] == nil }
        #expect(unseen.isEmpty, "processed twice without a lost answer: \(unseen.prefix(3))")
        switch ending {
        case .goAway:
            #expect(twice.isEmpty, "a stream beyond a GOAWAY was processed, then sent again: \(twice.prefix(3))")
        case .refuseEvery:
            #expect(twice.isEmpty, "a refused stream was processed, then sent again: \(twice.prefix(3))")
        default:
            #expect(!tally.lost.isEmpty, "the server ended no connection with answers in flight")
        }
        switch ending {
        case .refuseEvery:
            #expect(server.refusedCount > 0)
        case .goAway:
            // Every stream may have begun before the GOAWAY, all answered on the one connection.
            #expect(server.goAwayCount > 0, "the server never sent a GOAWAY")
        default:
            #expect(server.connectionCount > 1, "the server never ended a connection")
        }
    }

    /// A lost answer the caller does not send again completes as the connection's end, with the request
    /// sent: the server may have had it or not (its fate is unknown), and it was processed at most once.
    @Test func aLostAnswerNotSentAgainCompletesAsTheConnectionsEnd() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates, ending: .abort(afterRequests: 50)) { request in
            .text(200, request.text, delay: 0.02)
        }
        defer { server.shutdown() }

        let tally = try Self.run(server, certificates, count: 200, maxLost: 0)

        #expect(tally.completions == 200)
        #expect(!tally.failures.isEmpty)
        let processed = Self.processed(server)
        for (index, error) in tally.failures {
            guard case .connectionEnded(let sent, let message) = error else {
                Issue.record("request \(index) failed otherwise: \(error)")
                continue
            }
            #expect(sent)
            #expect(!message.isEmpty)
            #expect((processed["\(index)"] ?? 0) <= 1, "request \(index) was processed twice")
        }
    }

    /// A request the server processed on a reused connection, which then ended with no byte of the
    /// answer back, is the caller's to send again, never libcurl's: libcurl 7.88 would send it again by
    /// itself on a fresh connection ("Connection died, retrying a fresh connect"), a copy no one counts.
    /// Each way: cleartext HTTP/1.1 and HTTP/2 over TLS, the second request of a connection ending it.
    @Test(arguments: [false, true])
    func aProcessedRequestWhoseReusedConnectionEndsIsNeverSentAgainByLibcurl(_ http2: Bool) throws {
        let certificates = http2 ? try TestCertificates.make() : nil
        defer { certificates?.remove() }
        let server = try FakeHTTPServer(tls: certificates, http2: http2, ending: .abort(afterRequests: 2)) { request in
            .text(200, request.text)
        }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates?.caFile))
        let version: HTTPVersion = http2 ? .http2 : .http1_1
        let first = transport.perform(HTTPRequest(url: server.baseURL + "/send", body: Array("first".utf8), version: version))
        #expect((try? first.get().status) == 200)

        var lost = 0
        var outcome: Result<HTTPResponse, TransportError>?
        transport.perform([HTTPRequest(url: server.baseURL + "/send", body: Array("second".utf8), version: version)],
                          resendAfterLostAnswer: { _, _ in lost += 1; return false }) { outcome = $1 }

        #expect(Self.processed(server)["second"] == 1, "the processed request was sent again")
        if case .failure(.connectionEnded(let sent, _)) = outcome {
            #expect(sent)
            #expect(lost == 1)
        } else {
            Issue.record("the lost answer came back as \(String(describing: outcome))")
        }
    }

    /// A replayable request (a webhook, whose receiver drops copies by its id) is the exception: libcurl
    /// sends it again by itself on a fresh connection, and it is answered with no lost answer.
    @Test func aReplayableRequestIsSentAgainByLibcurl() throws {
        let server = try FakeHTTPServer(http2: false, ending: .abort(afterRequests: 2)) { .text(200, $0.text) }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init())
        var second = HTTPRequest(url: server.baseURL + "/send", body: Array("second".utf8), version: .http1_1)
        second.replayable = true
        _ = transport.perform(HTTPRequest(url: server.baseURL + "/send", body: Array("first".utf8), version: .http1_1))
        var lost = 0
        var outcome: Result<HTTPResponse, TransportError>?
        transport.perform([second], resendAfterLostAnswer: { _, _ in lost += 1; return false }) { outcome = $1 }

        #expect((try? outcome?.get().text) == "second")
        #expect(lost == 0)
        #expect(Self.processed(server)["second"] == 2)
    }

    /// An HTTP/1.1 server that closes each connection after its answer, with no `Connection: close`:
    /// libcurl notices the dead connection before reusing it, or sends again what it had written to it;
    /// every request is answered once and none is lost.
    @Test func anHTTP1ServerClosingAfterEachResponseAnswersEveryRequestOnce() throws {
        let server = try FakeHTTPServer(threads: 2, ending: .closeAfterResponse(afterRequests: 1)) { request in
            .text(200, request.text, delay: 0.005)
        }
        defer { server.shutdown() }

        let tally = try Self.run(server, nil, count: 400, maxLost: 5, version: .http1_1)

        #expect(tally.completions == 400)
        #expect(tally.failures.isEmpty, "\(tally.failures.prefix(3))")
        #expect(tally.answered.count == 400)
        #expect(Self.processed(server).values.allSatisfy { $0 == 1 }, "a request was processed twice")
        #expect(server.connectionCount >= 400)
    }
}
}

/// How libcurl's result codes, and how much of a body left, classify a failed transfer.
@Suite struct ConnectionEndClassificationTests {
    /// The codes of a connection that ended under the request, each with the body wholly sent, cut, or
    /// empty; and codes that are something else.
    @Test(arguments: [
        (CURLE_PARTIAL_FILE, 100, 100, true), (CURLE_PARTIAL_FILE, 40, 100, false), (CURLE_PARTIAL_FILE, 0, 0, true),
        (CURLE_GOT_NOTHING, 10, 10, true), (CURLE_SEND_ERROR, 0, 10, false), (CURLE_RECV_ERROR, 10, 10, true),
        (CURLE_HTTP2, 3, 10, false),
    ] as [(CURLcode, Int64, Int, Bool)])
    func connectionEndCodesSayWhetherTheRequestLeft(_ code: CURLcode, _ uploaded: Int64, _ body: Int, _ sent: Bool) {
        let error = TransportError(curlCode: code, message: "gone", uploadedBytes: uploaded, bodyBytes: body)
        #expect(error == .connectionEnded(requestSent: sent, message: "gone"))
        #expect(error.isConnectionEnd)
    }

    @Test(arguments: [CURLE_OPERATION_TIMEDOUT, CURLE_COULDNT_CONNECT, CURLE_HTTP2_STREAM, CURLE_SSL_CONNECT_ERROR,
                      CURLE_COULDNT_RESOLVE_HOST, CURLE_WRITE_ERROR])
    func otherCodesAreNotAConnectionsEnd(_ code: CURLcode) {
        let error = TransportError(curlCode: code, message: "x", uploadedBytes: 0, bodyBytes: 10)
        #expect(!error.isConnectionEnd)
        #expect(error == TransportError(curlCode: code, message: "x"))
    }

    /// Any code and any sizes, even negative or huge: never a trap, and a connection's end exactly for
    /// the five codes, sent exactly when the whole body (or none) was handed over.
    @Test func anyCodeAndSizeClassifiesWithoutTrapping() {
        var rng = Fuzz(seed: 23)
        for _ in 0..<Fuzz.iterations {
            let code = CURLcode(rawValue: UInt32(rng.next() % 100))
            let uploaded = Int64(bitPattern: rng.next()) >> (rng.next() % 64)
            let body = Int(truncatingIfNeeded: rng.next() >> (rng.next() % 64))
            let error = TransportError(curlCode: code, message: "", uploadedBytes: uploaded, bodyBytes: body)
            let ends = TransportError.connectionEndCodes.contains(code.rawValue)
            #expect(error.isConnectionEnd == ends)
            if case .connectionEnded(let sent, let message) = error {
                #expect(sent == (body == 0 || uploaded >= Int64(body)))
                #expect(!message.isEmpty)
            }
        }
    }
}

/// Streams per HTTP/2 connection: the server's own limit until a connection ends with answers lost,
/// then at most 64, halved by each further connection that ends so, never below 8; one connection
/// counts once, and a port answered on again is a new connection.
@Suite struct StreamsPerConnectionTests {
    @Test func eachConnectionThatEndsWithAnswersLostLowersTheLimitOnce() {
        var streams = StreamsPerConnection(initial: 1000)
        #expect(streams.limit == 1000)
        streams.answered(onConnection: 1)
        #expect(streams.lostAnswer(onConnection: 1) == 64)
        #expect(streams.lostAnswer(onConnection: 1) == nil, "the same connection counted twice")
        #expect(streams.lostAnswer(onConnection: 2) == 32)
        #expect(streams.lostAnswer(onConnection: 3) == 16)
        #expect(streams.lostAnswer(onConnection: 4) == 8)
        #expect(streams.lostAnswer(onConnection: 5) == nil, "below the floor")
        #expect(streams.limit == 8)
    }

    @Test func aPortAnsweredOnAgainIsANewConnection() {
        var streams = StreamsPerConnection(initial: 100)
        #expect(streams.lostAnswer(onConnection: 7) == 50)
        streams.answered(onConnection: 7)
        #expect(streams.lostAnswer(onConnection: 7) == 25)
    }

    @Test func aSmallInitialLimitStaysAtLeastTheFloor() {
        #expect(StreamsPerConnection(initial: 3).limit == 8)
        var streams = StreamsPerConnection(initial: 10)
        #expect(streams.lostAnswer(onConnection: 1) == 8)
        #expect(streams.lostAnswer(onConnection: 2) == nil)
    }
}
