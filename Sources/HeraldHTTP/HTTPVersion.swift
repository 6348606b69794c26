import CCurl

/// The HTTP version a request asks for.
///
///     var request = HTTPRequest(url: "https://api.push.apple.com/3/device/…")
///     request.version = .http2            // ALPN h2, falls back to HTTP/1.1
public enum HTTPVersion: Sendable, Hashable {
    /// HTTP/1.1 only.
    case http1_1
    /// HTTP/2 over TLS, negotiated with ALPN; falls back to HTTP/1.1 (and cleartext URLs use HTTP/1.1).
    case http2
    /// Cleartext HTTP/2 without negotiation (h2c, "prior knowledge"). With libcurl < 7.89 each such
    /// request uses a new connection (reusing one fails there: curl/curl#10634); prefer `.http2` over TLS.
    case http2PriorKnowledge

    /// The CURLOPT_HTTP_VERSION value.
    var curlValue: Int {
        switch self {
        case .http1_1: Int(CURL_HTTP_VERSION_1_1)
        case .http2: Int(CURL_HTTP_VERSION_2TLS)
        case .http2PriorKnowledge: Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
    }

    /// Whether a request for `url` with this version can share an HTTP/2 connection.
    func mayMultiplex(url: String) -> Bool {
        switch self {
        case .http1_1: false
        case .http2: url.prefix(8).lowercased() == "https://"
        case .http2PriorKnowledge: !CurlGlobal.h2cReuseIsBroken
        }
    }

    /// Converts a CURLINFO_HTTP_VERSION value to 10, 11, 20 or 30 (0 if unknown).
    static func number(fromCurlInfo value: Int) -> Int {
        switch value {
        case Int(CURL_HTTP_VERSION_1_0): 10
        case Int(CURL_HTTP_VERSION_1_1): 11
        case Int(CURL_HTTP_VERSION_2_0): 20
        case Int(CURL_HTTP_VERSION_3): 30
        default: 0
        }
    }
}
