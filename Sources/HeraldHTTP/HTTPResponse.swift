/// A response, whatever its status: a 500 is a response, not a ``TransportError``.
///
///     if case .success(let response) = transport.perform(request), response.status == 200 {
///         let id = response.header("apns-id")
///     }
public struct HTTPResponse: Sendable {
    /// The final status code (never a 1xx).
    public var status: Int
    /// The final response's header fields, names lower-cased, in the order received.
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// The HTTP version used: 10, 11, 20 or 30.
    public var httpVersion: Int
    /// Seconds the whole transfer took (CURLINFO_TOTAL_TIME).
    public var seconds: Double

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], httpVersion: Int = 11,
                seconds: Double = 0) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.seconds = seconds
    }

    /// The first value of the header field `name`, compared case-insensitively.
    ///
    ///     response.header("Retry-After")  // "120"
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first(where: { $0.0 == wanted })?.1
    }

    /// The body as UTF-8 text (invalid sequences repaired).
    public var text: String { String(decoding: body, as: UTF8.self) }
}
