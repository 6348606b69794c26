import HeraldHTTP

/// What became of one send to one destination. Adapters classify provider answers into these four.
public enum DeliveryOutcome: Sendable, Equatable {
    /// Accepted by the provider; its message id when it gives one.
    case delivered(messageId: String?)
    /// Transient: try again later — after `after` seconds when the provider said so (`Retry-After`).
    case retry(after: Double?, code: String?, message: String)
    /// Permanent for this message: retrying unchanged will not help.
    case permanent(code: String?, message: String)
    /// The destination is dead (unregistered token, unsubscribed phone): deactivate it, never retry.
    case destinationInvalid(code: String?, message: String)

    public var label: String {
        switch self {
        case .delivered: "delivered"
        case .retry: "retry"
        case .permanent: "permanent"
        case .destinationInvalid: "destination_invalid"
        }
    }

    public var code: String? {
        switch self {
        case .delivered: nil
        case .retry(_, let c, _), .permanent(let c, _), .destinationInvalid(let c, _): c
        }
    }

    public var message: String? {
        switch self {
        case .delivered: nil
        case .retry(_, _, let m), .permanent(_, let m), .destinationInvalid(_, let m): m
        }
    }
}

/// An outcome with the facts of the exchange that produced it, for `notification_deliveries`.
public struct ClassifiedResponse: Sendable, Equatable {
    public var outcome: DeliveryOutcome
    public var httpStatus: Int?
    public var latencyMs: Int?

    public init(_ outcome: DeliveryOutcome, httpStatus: Int? = nil, latencyMs: Int? = nil) {
        self.outcome = outcome
        self.httpStatus = httpStatus
        self.latencyMs = latencyMs
    }
}

extension TransportError {
    /// Transport failures are transient: the row is retried with backoff.
    public var asOutcome: DeliveryOutcome {
        switch self {
        case .timeout: .retry(after: nil, code: "timeout", message: "request timed out")
        case .connectionRefused: .retry(after: nil, code: "connection_refused", message: "connection refused")
        case .couldNotResolve: .retry(after: nil, code: "dns", message: "could not resolve host")
        case .tls(let m): .retry(after: nil, code: "tls", message: "TLS error: \(m)")
        case .other(let code, let m): .retry(after: nil, code: "curl_\(code)", message: m)
        // SMTP reply classes (RFC 5321 §4.2.1): 4yz transient, 5yz permanent. SMTPAdapter refines this.
        case .smtp(let code, _, let m) where (400..<500).contains(code) || code == 0:
            .retry(after: nil, code: code == 0 ? "smtp" : String(code), message: m)
        case .smtp(let code, _, let m): .permanent(code: String(code), message: m)
        }
    }
}
