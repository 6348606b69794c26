import CCurl
import Foundation
@testable import HeraldHTTP
import HeraldTestSupport
import Testing

/// A complete answer is the answer, even when the server sent it before reading the whole request body
/// and then ended the stream with RST_STREAM (NO_ERROR), as nginx does for a location that answers with
/// `return` (RFC 9113 §8.1: the client must not treat it as an error). A stream reset with an error code,
/// or before a final status, stays a transport error.
extension HTTPSuite {
@Suite(.enabled(if: Tools.nginx, "needs nginx (scripts/deps.sh installs nginx-light)"))
struct EarlyAnswerTests {
    /// libcurl's notes, collected from any thread.
    final class Notes: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func append(_ text: String) { lock.withLock { lines.append(text) } }
        var all: [String] { lock.withLock { lines } }
        /// libcurl 7.88's note when it fails a transfer for sending on a stream whose clean close it had
        /// handled: "[curl #3] * stream 5 closed".
        var closedUnderUpload: Int {
            all.flatMap { $0.split(separator: "\n") }
                .filter { $0.range(of: #"\* stream [0-9]+ closed$"#, options: .regularExpression) != nil }.count
        }
    }

    /// A transport that describes its transfers into `notes`.
    static func transport(_ certificates: TestCertificates, _ notes: Notes) throws -> HTTPTransport {
        var options = TransportOptions(caFile: certificates.caFile)
        options.debugOutput = CurlDebugOutput { notes.append($0) }
        return try HTTPTransport(options: options)
    }

    /// Whether `error` is libcurl failing a stream the server closed early before handing its answer over.
    static func isAnswerNotHandedOver(_ error: TransportError) -> Bool {
        error == .other(code: Int(CURLE_HTTP2_STREAM.rawValue), message: ReceivedAnswer.explained(CURLE_HTTP2_STREAM, ""))
    }

    /// `count` POSTs of `size` bytes to `path`, each with its number as `apns-id` (which nginx logs).
    /// 60 KB by default: nginx answers long before it could have read that, and it fits the stream's
    /// 64 KB flow-control window (beyond it, see `anAnswerLibcurlDidNotPassOnIsNeverTakenForAnother`).
    static func posts(_ nginx: EarlyAnsweringNginx, _ path: String, count: Int, size: Int = 60 * 1024) -> [HTTPRequest] {
        let body = [UInt8](repeating: UInt8(ascii: "a"), count: size)
        return (0..<count).map {
            HTTPRequest(method: "POST", url: nginx.baseURL + path, headers: [("apns-id", "\($0)")], body: body,
                        timeout: 60, version: .http2)
        }
    }

    /// The request numbers nginx answered with `status` at `path`, as it logged them.
    static func answered(_ nginx: EarlyAnsweringNginx, _ path: String, _ status: Int) -> [String] {
        nginx.requests.filter { $0.hasPrefix("POST \(path) \(status) ") }.map { String($0.split(separator: " ")[3]) }
    }

    /// 200 POSTs of 60 KB to a location that answers 200 at once: each completes once, as nginx's 200,
    /// though libcurl saw nginx end most streams before their bodies had all left; nginx answered each once.
    /// Under heavy CPU load libcurl 7.88 now and then fails such a stream before handing its answer over
    /// (up to 14 of 200 seen at a load of 14 on 2 cores): that one is the named transport error, never
    /// another status. Before the transport took a complete answer as the answer, 174 to 200 failed.
    @Test func aCompleteAnswerBeforeTheWholeBodyIsTheAnswer() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let nginx = try EarlyAnsweringNginx(certificates: certificates)
        defer { nginx.remove() }
        let notes = Notes()

        let results = performAll(try Self.transport(certificates, notes), Self.posts(nginx, "/ok", count: 200))

        #expect(results.count == 200 && results.values.allSatisfy { $0.count == 1 })
        let failures = results.values.compactMap { $0.first?.failure }
        #expect(failures.allSatisfy(Self.isAnswerNotHandedOver), "e.g. \(failures.prefix(2))")
        #expect(failures.count <= 50, "\(failures.count) of 200 early answers were not handed over")
        #expect(results.values.compactMap { $0.first?.success }.allSatisfy { $0.status == 200 })
        #expect(notes.closedUnderUpload > 0, "nginx read every body before answering: nothing was tried")
        nginx.stop()
        let answered = Self.answered(nginx, "/ok", 200)
        #expect(answered.count == 200 && Set(answered).count == 200, "nginx answered \(answered.count) times")
    }

    /// The same with a location that refuses at once (400 and a JSON reason): the refusal, body and all,
    /// is each request's answer (or, under heavy load, now and then the named transport error).
    @Test func anEarlyRefusalIsTheServersAnswer() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let nginx = try EarlyAnsweringNginx(certificates: certificates)
        defer { nginx.remove() }

        let results = performAll(try Self.transport(certificates, Notes()), Self.posts(nginx, "/bad", count: 100))

        #expect(results.count == 100)
        var notHandedOver = 0
        for (index, outcome) in results {
            if case .failure(let error)? = outcome.first, outcome.count == 1, Self.isAnswerNotHandedOver(error) {
                notHandedOver += 1
                continue
            }
            guard case .success(let response)? = outcome.first, outcome.count == 1 else {
                Issue.record("request \(index): \(outcome)")
                continue
            }
            #expect(response.status == 400)
            #expect(response.text == #"{"reason":"BadDeviceToken"}"#)
        }
        #expect(notHandedOver <= 25, "\(notHandedOver) of 100 early refusals were not handed over")
    }

    /// Beyond the stream's 64 KB flow-control window, libcurl 7.88 on a shared connection does not always
    /// pass on the answer it received before failing the transfer: with no status, no answer is made up.
    /// Each of 200 POSTs of 96 KB completes once, as nginx's 200 or as a transport error that says what
    /// happened (never a lost connection, never another status); nginx answered each once.
    @Test func anAnswerLibcurlDidNotPassOnIsNeverTakenForAnother() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let nginx = try EarlyAnsweringNginx(certificates: certificates)
        defer { nginx.remove() }

        let results = performAll(try Self.transport(certificates, Notes()),
                                 Self.posts(nginx, "/ok", count: 200, size: 96 * 1024))

        #expect(results.count == 200 && results.values.allSatisfy { $0.count == 1 })
        for outcome in results.values.compactMap(\.first) {
            switch outcome {
            case .success(let response): #expect(response.status == 200)
            case .failure(let error): #expect(Self.isAnswerNotHandedOver(error))
            }
        }
        nginx.stop()
        #expect(Set(Self.answered(nginx, "/ok", 200)).count == 200)
        #expect(Self.answered(nginx, "/ok", 200).count == 200)
    }

    /// A stream nginx resets with an error code stays a transport error: before any status (`return 444`),
    /// with or without a body in flight, and after the status and part of the body (an upstream that died
    /// mid-answer: INTERNAL_ERROR). Neither is a lost connection.
    @Test func aResetWithAnErrorCodeStaysATransportError() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let upstream = try TruncatingUpstream()
        defer { upstream.stop() }
        let nginx = try EarlyAnsweringNginx(certificates: certificates, upstream: upstream.port)
        defer { nginx.remove() }
        let transport = try Self.transport(certificates, Notes())
        let requests = Self.posts(nginx, "/gone", count: 3) + [
            HTTPRequest(method: "POST", url: nginx.baseURL + "/gone", body: [1], timeout: 60, version: .http2),
            HTTPRequest(method: "GET", url: nginx.baseURL + "/gone", timeout: 60, version: .http2),
            HTTPRequest(method: "GET", url: nginx.baseURL + "/cut", timeout: 60, version: .http2),
            HTTPRequest(method: "GET", url: nginx.baseURL + "/cut", timeout: 60, version: .http2),
        ]

        let results = performAll(transport, requests)

        #expect(results.count == requests.count)
        for (index, outcome) in results {
            guard case .failure(let error)? = outcome.first, outcome.count == 1 else {
                Issue.record("request \(index) (\(requests[index].url)) was answered: \(outcome)")
                continue
            }
            #expect(!error.isConnectionEnd)
            guard case .other(let code, let message) = error else {
                Issue.record("request \(index): \(error)")
                continue
            }
            #expect(code == Int(CURLE_HTTP2_STREAM.rawValue))
            #expect(message.contains("was not closed cleanly"), "\(message)")
        }
        #expect(upstream.port > 0)
    }
}
}
