/// One HTTP request for ``HTTPTransport``.
///
///     let request = HTTPRequest(
///         url: "https://hooks.example.com/herald",
///         headers: [("content-type", "application/json")],
///         body: Array(#"{"type":"reminder.due"}"#.utf8),
///         timeout: 15)
public struct HTTPRequest: Sendable {
    /// "GET", "POST", "PUT", "DELETE", …
    public var method: String
    /// An absolute http:// or https:// URL.
    public var url: String
    /// Header fields in the order they are sent. An empty value sends the header with no value.
    public var headers: [(String, String)]
    /// The body, sent as is (for POST, PUT and PATCH even when empty, with `Content-Length: 0`).
    public var body: [UInt8]
    /// Seconds allowed for the whole transfer, connection included.
    public var timeout: Double
    /// The HTTP version to ask for.
    public var version: HTTPVersion

    public init(method: String = "POST", url: String, headers: [(String, String)] = [], body: [UInt8] = [],
                timeout: Double = 15, version: HTTPVersion = .http2) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.version = version
    }
}
