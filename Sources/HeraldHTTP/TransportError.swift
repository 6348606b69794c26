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
    /// Any other libcurl error: the CURLcode and its message.
    case other(code: Int, message: String)
    /// An SMTP server refused: `code` is its last reply code (e.g. 550, 451, 535; 0 if it gave none),
    /// `command` what it refused, and `message` libcurl's text and the server's whole reply. Never carries
    /// the credentials.
    case smtp(code: Int, command: SMTPCommand, message: String)

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
