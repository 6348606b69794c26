import Foundation
import HeraldHTTP
import HeraldTestSupport
import Testing

/// A request the caller holds back (`StartDecision.wait`: a provider's quota) is not refused: it keeps
/// its place, is asked again, and starts when the caller says so, in the same call.
extension HTTPSuite {
@Suite struct PacedStartTests {
    /// Twenty requests, each told to wait three times before it may start, and never more than two in
    /// flight: all are answered, once, none returned unstarted, and the server never holds more than two.
    @Test func aRequestToldToWaitStartsLaterInTheSameCallAndKeepsItsPlace() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates) { request in .text(200, request.path, delay: 0.02) }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        let requests = (0..<20).map { HTTPRequest(url: server.baseURL + "/\($0)") }

        var asked = [Int: Int]()
        var inFlight = 0
        var answers = [Int: Int]()
        var started: [Int] = []
        let unstarted = transport.perform(requests, decide: { index in
            asked[index, default: 0] += 1
            if asked[index, default: 0] <= 3 { return .wait(seconds: 0.005) }
            guard inFlight < 2 else { return .wait(seconds: 0.1) }
            inFlight += 1
            started.append(index)
            return .start
        }) { index, result in
            inFlight -= 1
            #expect(result.success?.status == 200)
            answers[index, default: 0] += 1
        }
        #expect(unstarted.isEmpty)
        #expect(answers.count == 20 && answers.values.allSatisfy { $0 == 1 })
        #expect(asked.values.allSatisfy { $0 >= 4 })
        #expect(server.peakInFlight <= 2)
        #expect(started == Array(0..<20), "each started after the one before it")
    }

    /// Held back, then refused (a stop signal while it waited): returned unstarted, never sent.
    @Test func aRequestHeldBackThenRefusedIsReturnedUnstarted() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let server = try FakeHTTPServer(tls: certificates) { _ in .text(200, "ok") }
        defer { server.shutdown() }
        let transport = try HTTPTransport(options: .init(caFile: certificates.caFile))
        var asked = 0
        let unstarted = transport.perform([HTTPRequest(url: server.baseURL + "/")], decide: { _ in
            asked += 1
            return asked < 3 ? .wait(seconds: .nan) : .refuse
        }) { _, _ in Issue.record("a refused request completed") }
        #expect(unstarted == [0])
        #expect(server.requests.isEmpty)
    }
}
}
