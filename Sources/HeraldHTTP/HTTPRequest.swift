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
    /// Set for a mail sent over SMTP instead of an HTTP request: then `url` is smtp:// or smtps://,
    /// `body` is the whole RFC 5322 message (CRLF line ends), and `method`, `headers` and `version` are
    /// ignored. See ``MailEnvelope``.
    public var mail: MailEnvelope?
    /// Whether libcurl may send the request again by itself when a reused connection ends with nothing
    /// of the answer back: only for a request whose receiver drops copies by an id it carries (a
    /// webhook's `webhook-id`). Otherwise such a request comes back as a lost answer (``UploadBody``).
    public var replayable = false

    public init(method: String = "POST", url: String, headers: [(String, String)] = [], body: [UInt8] = [],
                timeout: Double = 15, version: HTTPVersion = .http2, mail: MailEnvelope? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.version = version
        self.mail = mail
    }
}

/// The SMTP envelope of a mail for ``HTTPTransport``: who it is from and to (MAIL FROM, RCPT TO), and
/// whether the connection must be encrypted. The credentials come from the URL
/// (`smtp://user:password@host:587`, percent-encoded); smtps:// is TLS from the start (port 465).
///
///     let request = HTTPRequest(
///         url: "smtp://herald:secret@mail.example.com:587",
///         body: Array("From: herald@example.com\r\nTo: ada@example.com\r\nSubject: Hi\r\n\r\nHello\r\n".utf8),
///         mail: MailEnvelope(from: "herald@example.com", recipients: ["ada@example.com"]))
///
/// The response's `status` is the server's last reply code (250 once the message is accepted), its body is
/// empty, its `httpVersion` 0, and its headers are `message-id` (the message's own Message-ID header, when it has one) and
/// `smtp-reply` (the server's last reply, its lines joined). A refusal (4yz, 5yz) is a ``TransportError/smtp(code:command:message:)``.
public struct MailEnvelope: Sendable, Equatable {
    /// The bare address for MAIL FROM, e.g. "herald@example.com" (no display name, no angle brackets).
    public var from: String
    /// Bare addresses, one RCPT TO each. Any refused recipient fails the whole transfer.
    public var recipients: [String]
    /// For smtp:// URLs: true requires STARTTLS (CURLUSESSL_ALL; a server not offering it fails the
    /// transfer with `.smtp(command: "STARTTLS")`); false uses it when offered. smtps:// is always TLS.
    public var requireTLS: Bool

    public init(from: String, recipients: [String], requireTLS: Bool = true) {
        self.from = from
        self.recipients = recipients
        self.requireTLS = requireTLS
    }
}
