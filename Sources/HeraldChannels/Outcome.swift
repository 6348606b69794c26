import HeraldCore
import HeraldHTTP

extension TransportError {
    /// Transport failures are transient: the row is retried with backoff.
    public var asOutcome: DeliveryOutcome {
        switch self {
        case .timeout: .retry(after: nil, code: "timeout", message: "request timed out")
        case .connectionRefused: .retry(after: nil, code: "connection_refused", message: "connection refused")
        case .couldNotResolve: .retry(after: nil, code: "dns", message: "could not resolve host")
        case .tls(let m): .retry(after: nil, code: "tls", message: "TLS error: \(m)")
        case .connectionEnded(let sent, let m):
            .retry(after: nil, code: sent ? "connection_lost" : "connection_ended",
                   message: sent ? "the connection ended before the answer: \(m)" : "the connection ended before the request was sent: \(m)")
        case .other(let code, let m): .retry(after: nil, code: "curl_\(code)", message: m)
        // SMTP reply classes (RFC 5321 §4.2.1): 4yz transient, 5yz permanent. SMTPAdapter refines this.
        case .smtp(let code, _, let m) where (400..<500).contains(code) || code == 0:
            .retry(after: nil, code: code == 0 ? "smtp" : String(code), message: m)
        case .smtp(let code, _, let m): .permanent(code: String(code), message: m)
        }
    }
}
