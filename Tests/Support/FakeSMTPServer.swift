import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// A message as the fake SMTP server accepted it.
public struct FakeMail: Sendable {
    /// The MAIL FROM address, without angle brackets or parameters.
    public var from: String
    /// The accepted RCPT TO addresses, without angle brackets.
    public var recipients: [String]
    /// The message after DATA, dot-unstuffed, each line ending CRLF, without the final ".".
    public var data: [UInt8]
    /// Whether the connection was encrypted (STARTTLS or implicit TLS) when the message arrived.
    public var tls: Bool
    /// The user that authenticated on the connection, if any.
    public var authenticatedUser: String?
    /// The SASL mechanism used: "PLAIN" or "LOGIN".
    public var authMechanism: String?

    /// The message as text.
    public var text: String { String(decoding: data, as: UTF8.self) }

    /// The header section's fields, unfolded, names as sent, in order.
    public var headers: [(String, String)] {
        let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
        var fields: [(String, String)] = []
        for line in head.components(separatedBy: "\r\n") where !line.isEmpty {
            if line.first == " " || line.first == "\t", let last = fields.popLast() {
                fields.append((last.0, last.1 + line))   // a folded continuation
            } else if let colon = line.firstIndex(of: ":") {
                fields.append((String(line[..<colon]),
                               String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
            }
        }
        return fields
    }

    /// The first value of the header field `name` (case-insensitive), unfolded.
    public func header(_ name: String) -> String? {
        headers.first(where: { $0.0.lowercased() == name.lowercased() })?.1
    }

    /// The body: everything after the blank line ending the header section.
    public var body: String {
        guard let range = text.range(of: "\r\n\r\n") else { return "" }
        return String(text[range.upperBound...])
    }
}

/// A loopback SMTP server (RFC 5321, enough for libcurl): greeting, EHLO/HELO (advertising STARTTLS when
/// it has certificates, AUTH PLAIN LOGIN, SIZE, 8BITMIME), STARTTLS, AUTH PLAIN and LOGIN, MAIL FROM,
/// RCPT TO with scripted replies per address, DATA with dot-unstuffing, RSET, NOOP, QUIT. Records every
/// accepted message.
///
///     let certificates = try TestCertificates.make()
///     let server = try FakeSMTPServer(tls: certificates, user: "herald", password: "s3cret",
///                                     recipientReplies: ["gone@example.com": "550 5.1.1 No such user"])
///     defer { server.shutdown() }
///     // send to "smtp://herald:s3cret@localhost:\(server.port)", trusting certificates.caFile
///     server.mails.first?.tls   // true
public final class FakeSMTPServer: Sendable {
    /// The behaviour of a fake server.
    public struct Options: Sendable {
        /// Certificates for STARTTLS (or implicit TLS); nil: cleartext only, STARTTLS not offered.
        public var tls: TestCertificates?
        /// Whether EHLO advertises STARTTLS (with `tls` set).
        public var offerSTARTTLS: Bool
        /// TLS from the first byte (smtps://, port 465 style) instead of STARTTLS.
        public var implicitTLS: Bool
        /// The credentials AUTH accepts; nil: AUTH is not advertised and MAIL needs none.
        public var user: String?
        public var password: String?
        /// The SASL mechanisms advertised, e.g. ["PLAIN", "LOGIN"] (libcurl prefers LOGIN when both are).
        public var authMechanisms: [String]
        /// The reply to RCPT TO for particular addresses (lower-cased), e.g. "550 5.1.1 No such user";
        /// others get "250 2.1.5 OK".
        public var recipientReplies: [String: String]
        /// The reply after a message's data; nil: "250 2.0.0 OK: queued as <n>".
        public var dataReply: String?
        /// Accept connections but never say anything (to test timeouts).
        public var stall: Bool
        /// The reply to STARTTLS when offered, instead of starting TLS (e.g. "454 4.7.0 TLS not available
        /// due to temporary reason"); nil: "220" and TLS.
        public var starttlsReply: String?

        public init(tls: TestCertificates? = nil, offerSTARTTLS: Bool = true, implicitTLS: Bool = false,
                    user: String? = nil, password: String? = nil, authMechanisms: [String] = ["PLAIN", "LOGIN"],
                    recipientReplies: [String: String] = [:], dataReply: String? = nil, stall: Bool = false,
                    starttlsReply: String? = nil) {
            self.tls = tls
            self.offerSTARTTLS = offerSTARTTLS
            self.implicitTLS = implicitTLS
            self.user = user
            self.password = password
            self.authMechanisms = authMechanisms
            self.recipientReplies = Dictionary(recipientReplies.map { ($0.key.lowercased(), $0.value) },
                                               uniquingKeysWith: { $1 })
            self.dataReply = dataReply
            self.stall = stall
            self.starttlsReply = starttlsReply
        }
    }

    /// The TCP port, on 127.0.0.1.
    public let port: Int
    public let options: Options
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let state: FakeSMTPState

    /// Starts listening on 127.0.0.1 at a free port.
    public convenience init(tls: TestCertificates? = nil, offerSTARTTLS: Bool = true, implicitTLS: Bool = false,
                            user: String? = nil, password: String? = nil,
                            authMechanisms: [String] = ["PLAIN", "LOGIN"], recipientReplies: [String: String] = [:],
                            dataReply: String? = nil, stall: Bool = false, starttlsReply: String? = nil) throws {
        try self.init(options: Options(tls: tls, offerSTARTTLS: offerSTARTTLS, implicitTLS: implicitTLS, user: user,
                                       password: password, authMechanisms: authMechanisms,
                                       recipientReplies: recipientReplies, dataReply: dataReply, stall: stall,
                                       starttlsReply: starttlsReply))
    }

    public init(options: Options) throws {
        self.options = options
        let sslContext: NIOSSLContext?
        if let tls = options.tls {
            let chain = try NIOSSLCertificate.fromPEMFile(tls.certFile).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: tls.keyFile, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain,
                                                                         privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            sslContext = try NIOSSLContext(configuration: configuration)
        } else {
            sslContext = nil
        }
        let state = FakeSMTPState()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                state.connectionAccepted()
                return channel.eventLoop.makeCompletedFuture {
                    let implicit = options.implicitTLS && sslContext != nil
                    if implicit, let sslContext {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        SMTPSessionHandler(options: options, sslContext: sslContext, tlsActive: implicit, state: state))
                }
            }
        do {
            channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        self.group = group
        self.state = state
        port = channel.localAddress?.port ?? 0
    }

    deinit {
        shutdown()
    }

    /// An smtp:// (or smtps:// with implicit TLS) URL for this server, with these credentials
    /// (percent-encoded), host "localhost" so the test certificate matches.
    public func url(user: String? = nil, password: String? = nil) -> String {
        let scheme = options.implicitTLS ? "smtps" : "smtp"
        var credentials = ""
        if let user {
            let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
            credentials = user.addingPercentEncoding(withAllowedCharacters: allowed) ?? user
            if let password {
                credentials += ":" + (password.addingPercentEncoding(withAllowedCharacters: allowed) ?? password)
            }
            credentials += "@"
        }
        return "\(scheme)://\(credentials)localhost:\(port)"
    }

    /// Every accepted message so far, in arrival order.
    public var mails: [FakeMail] { state.mails }

    /// TCP connections accepted so far.
    public var connectionCount: Int { state.connections }

    /// Every command line received so far (AUTH payloads replaced by "AUTH …"), for debugging.
    public var commands: [String] { state.commands }

    /// Closes the listening socket and every connection, and stops the thread. Idempotent.
    public func shutdown() {
        guard state.markShutDown() else { return }
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }
}
