import CCurl

/// Why a transfer produced no HTTP response.
///
///     switch transport.perform(request) {
///     case .success(let response): …
///     case .failure(.timeout), .failure(.connectionRefused): retry later
///     case .failure(let error): …
///     }
public enum TransportError: Error, Sendable, Equatable {
    /// The transfer took longer than the request's timeout (or the connection than the connect timeout).
    case timeout
    /// Nothing listens at the address (CURLE_COULDNT_CONNECT).
    case connectionRefused
    /// The host name did not resolve.
    case couldNotResolve
    /// The TLS handshake or the certificate verification failed; libcurl's message.
    case tls(String)
    /// The connection ended — closed, reset, or dropped by the network — before this request's answer
    /// arrived. With `requestSent` false the request never wholly left this process, so the server cannot
    /// have acted on it; with true its fate is unknown: the server may have acted on it and lost only the
    /// answer. Either way it says nothing of the provider's health: the next request goes on a new
    /// connection.
    case connectionEnded(requestSent: Bool, message: String)
    /// Any other libcurl error: the CURLcode and its message.
    case other(code: Int, message: String)
    /// An SMTP server refused: `code` is its last reply code (e.g. 550, 451, 535; 0 if it gave none),
    /// `command` what it refused, and `message` libcurl's text and the server's whole reply. Never carries
    /// the credentials.
    case smtp(code: Int, command: SMTPCommand, message: String)

    /// Classifies how a transfer of `bodyBytes` ended, `uploadedBytes` of its body having left: the result
    /// codes of a connection that ended under the request become ``connectionEnded(requestSent:message:)``,
    /// the rest as ``init(curlCode:message:)`` has them.
    ///
    ///     TransportError(curlCode: CURLE_PARTIAL_FILE, message: "HTTP/2 stream 7 was not closed cleanly…",
    ///                    uploadedBytes: 120, bodyBytes: 120)   // .connectionEnded(requestSent: true, …)
    public init(curlCode code: CURLcode, message: String, uploadedBytes: Int64, bodyBytes: Int) {
        guard Self.connectionEndCodes.contains(code.rawValue) else {
            self.init(curlCode: code, message: message)
            return
        }
        let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        // A body not wholly handed over cannot have been acted on; an empty one (a GET) may have been.
        let sent = bodyBytes == 0 || uploadedBytes >= Int64(bodyBytes)
        self = .connectionEnded(requestSent: sent, message: text)
    }

    /// What libcurl reports when a connection ends under a transfer: an HTTP/2 connection closed with
    /// streams open ("stream N was not closed cleanly"), or an HTTP/1.1 body cut short (PARTIAL_FILE);
    /// nothing at all came back (GOT_NOTHING); the socket failed sending or receiving (a reset); an
    /// HTTP/2 connection-level error such as a GOAWAY with an error code (HTTP2). A reset of one stream
    /// (HTTP2_STREAM) is the server's answer to that request, not the connection's end.
    static let connectionEndCodes: Set<CURLcode.RawValue> = [
        CURLE_PARTIAL_FILE.rawValue, CURLE_GOT_NOTHING.rawValue, CURLE_SEND_ERROR.rawValue,
        CURLE_RECV_ERROR.rawValue, CURLE_HTTP2.rawValue,
    ]

    /// The connection ended before the answer arrived, whatever became of the request.
    public var isConnectionEnd: Bool {
        if case .connectionEnded = self { true } else { false }
    }

    /// Classifies a libcurl result code; `message` is the error buffer's text, if any.
    public init(curlCode code: CURLcode, message: String) {
        let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            self = .timeout
        case CURLE_COULDNT_CONNECT:
            self = .connectionRefused
        case CURLE_COULDNT_RESOLVE_HOST:
            self = .couldNotResolve
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
             CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            self = .tls(text)
        default:
            self = .other(code: Int(code.rawValue), message: text)
        }
    }
}

/// Why an ``HTTPTransport`` could not be made.
public enum TransportSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `TransportOptions.caFile` could not be read, or holds no PEM certificate.
    case unreadableCAFile(path: String, reason: String)
    /// libcurl could not make a handle or accept an option.
    case curl(String)

    public var description: String {
        switch self {
        case .unreadableCAFile(let path, let reason): "cannot use CA file \(path) (HERALD_CA_FILE): \(reason)"
        case .curl(let message): "libcurl: \(message)"
        }
    }
}

/// What an SMTP server refused.
public enum SMTPCommand: String, Sendable, CaseIterable {
    /// TLS required but not offered or refused.
    case starttls = "STARTTLS"
    /// The credentials (CURLE_LOGIN_DENIED).
    case auth = "AUTH"
    case mail = "MAIL"
    case rcpt = "RCPT"
    case data = "DATA"
    /// The message itself, after its data.
    case endOfData = "."
    /// The greeting or EHLO, or unknown.
    case other = ""
}
