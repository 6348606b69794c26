import Foundation
import HeraldHTTP
import Testing

/// Every HeraldHTTP test, one at a time: several count requests in flight at a fake server, and one
/// is CPU-heavy. (No test reads a clock: concurrency is measured at the server, as `peakInFlight`.)
@Suite(.serialized) enum HTTPSuite {}

extension Result {
    var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }

    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Runs `requests` and returns each index's results (normally exactly one each).
func performAll(_ transport: HTTPTransport, _ requests: [HTTPRequest])
    -> [Int: [Result<HTTPResponse, TransportError>]] {
    var results: [Int: [Result<HTTPResponse, TransportError>]] = [:]
    transport.perform(requests) { index, result in results[index, default: []].append(result) }
    return results
}
