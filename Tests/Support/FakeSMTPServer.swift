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

/// The server's shared, lock-protected record.
private final class FakeSMTPState: @unchecked Sendable {
    private let lock = NSLock()
    private var _mails: [FakeMail] = []
    private var _commands: [String] = []
    private var _connections = 0
    private var _shutDown = false

    var mails: [FakeMail] { lock.withLock { _mails } }
    var commands: [String] { lock.withLock { _commands } }
    var connections: Int { lock.withLock { _connections } }
    func connectionAccepted() { lock.withLock { _connections += 1 } }
    func received(_ mail: FakeMail) -> Int { lock.withLock { _mails.append(mail); return _mails.count } }
    func command(_ line: String) { lock.withLock { _commands.append(line) } }
    func markShutDown() -> Bool {
        lock.withLock {
            defer { _shutDown = true }
            return !_shutDown
        }
    }
}

/// One SMTP session: splits the byte stream into lines and answers them.
private final class SMTPSessionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum Phase {
        case command
        case authPlain                    // waiting for the base64 "\0user\0password"
        case authLoginUser                // waiting for the base64 user name
        case authLoginPassword(String)    // waiting for the base64 password
        case data                         // reading the message until "."
    }

    private let options: FakeSMTPServer.Options
    private let sslContext: NIOSSLContext?
    private let state: FakeSMTPState
    private var tlsActive: Bool
    private var buffer: [UInt8] = []
    private var phase = Phase.command
    private var greeted = false
    private var user: String?
    private var mechanism: String?
    private var from: String?
    private var recipients: [String] = []
    private var data: [UInt8] = []

    init(options: FakeSMTPServer.Options, sslContext: NIOSSLContext?, tlsActive: Bool, state: FakeSMTPState) {
        self.options = options
        self.sslContext = sslContext
        self.tlsActive = tlsActive
        self.state = state
    }

    func channelActive(context: ChannelHandlerContext) {
        if !options.stall { reply(context, "220 localhost ESMTP herald-fake") }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        buffer += incoming.readBytes(length: incoming.readableBytes) ?? []
        guard !options.stall else { return }
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            var line = Array(buffer[..<newline])
            buffer.removeFirst(newline + 1)
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            handle(line, context: context)
            if !context.channel.isActive { return }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func reply(_ context: ChannelHandlerContext, _ text: String) {
        let wire = text.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\r\n") + "\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: wire)), promise: nil)
    }

    private func handle(_ line: [UInt8], context: ChannelHandlerContext) {
        switch phase {
        case .data:
            if line == [UInt8(ascii: ".")] {
                finishMessage(context)
            } else {
                data += line.first == UInt8(ascii: ".") ? Array(line.dropFirst()) : line   // dot-unstuffing
                data += [0x0D, 0x0A]
            }
            return
        case .authPlain:
            phase = .command
            plain(String(decoding: line, as: UTF8.self), context)
            return
        case .authLoginUser:
            guard let name = Self.decode(String(decoding: line, as: UTF8.self)) else {
                phase = .command
                reply(context, "501 5.5.2 Cannot decode response")
                return
            }
            phase = .authLoginPassword(name)
            reply(context, "334 UGFzc3dvcmQ6")   // "Password:"
            return
        case .authLoginPassword(let name):
            phase = .command
            guard let password = Self.decode(String(decoding: line, as: UTF8.self)) else {
                reply(context, "501 5.5.2 Cannot decode response")
                return
            }
            check(name, password, mechanism: "LOGIN", context)
            return
        case .command:
            break
        }

        let text = String(decoding: line, as: UTF8.self)
        let verb = text.prefix(while: { $0 != " " }).uppercased()
        let argument = text.dropFirst(verb.count).trimmingCharacters(in: .whitespaces)
        state.command(verb == "AUTH" ? "AUTH " + (argument.split(separator: " ").first.map(String.init) ?? "")
                                     : text)
        switch verb {
        case "EHLO":
            greeted = true
            resetTransaction()
            var lines = ["localhost greets \(argument)"]
            if options.tls != nil, options.offerSTARTTLS, !tlsActive { lines.append("STARTTLS") }
            if options.user != nil, !options.authMechanisms.isEmpty {
                lines.append("AUTH " + options.authMechanisms.joined(separator: " "))
            }
            lines += ["SIZE 10485760", "8BITMIME"]
            reply(context, lines.enumerated().map { index, line in
                (index == lines.count - 1 ? "250 " : "250-") + line
            }.joined(separator: "\n"))
        case "HELO":
            greeted = true
            resetTransaction()
            reply(context, "250 localhost")
        case "STARTTLS":
            guard let sslContext, options.offerSTARTTLS, !tlsActive else {
                reply(context, "502 5.5.1 STARTTLS not available")
                return
            }
            if let refusal = options.starttlsReply {
                reply(context, refusal)
                return
            }
            // The reply has passed the pipeline once written, so TLS starts with the client's next bytes.
            reply(context, "220 2.0.0 Ready to start TLS")
            buffer.removeAll()
            do {
                try context.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext),
                                                               position: .first)
            } catch {
                context.close(promise: nil)
                return
            }
            tlsActive = true
            greeted = false   // RFC 3207: the client must EHLO again
            user = nil
            mechanism = nil
            resetTransaction()
        case "AUTH":
            guard options.user != nil else {
                reply(context, "502 5.5.1 AUTH not available")
                return
            }
            guard user == nil else {
                reply(context, "503 5.5.1 Already authenticated")
                return
            }
            let parts = argument.split(separator: " ").map(String.init)
            let chosen = parts.first?.uppercased() ?? ""
            guard options.authMechanisms.contains(chosen) else {
                reply(context, "504 5.5.4 Unrecognized authentication type")
                return
            }
            if chosen == "PLAIN" {
                if parts.count > 1 {
                    plain(parts[1], context)
                } else {
                    phase = .authPlain
                    reply(context, "334 ")
                }
            } else {
                if parts.count > 1, let name = Self.decode(parts[1]) {
                    phase = .authLoginPassword(name)
                    reply(context, "334 UGFzc3dvcmQ6")
                } else {
                    phase = .authLoginUser
                    reply(context, "334 VXNlcm5hbWU6")   // "Username:"
                }
            }
        case "MAIL":
            guard greeted else { return reply(context, "503 5.5.1 Say EHLO first") }
            if options.user != nil, user == nil { return reply(context, "530 5.7.0 Authentication required") }
            guard let address = Self.address(in: argument, after: "FROM:") else {
                return reply(context, "501 5.5.4 Syntax: MAIL FROM:<address>")
            }
            resetTransaction()
            from = address
            reply(context, "250 2.1.0 OK")
        case "RCPT":
            guard from != nil else { return reply(context, "503 5.5.1 Need MAIL first") }
            guard let address = Self.address(in: argument, after: "TO:") else {
                return reply(context, "501 5.5.4 Syntax: RCPT TO:<address>")
            }
            let answer = options.recipientReplies[address.lowercased()] ?? "250 2.1.5 OK"
            if answer.hasPrefix("2") { recipients.append(address) }
            reply(context, answer)
        case "DATA":
            guard from != nil, !recipients.isEmpty else { return reply(context, "503 5.5.1 Need RCPT first") }
            phase = .data
            data = []
            reply(context, "354 End data with <CR><LF>.<CR><LF>")
        case "RSET":
            resetTransaction()
            reply(context, "250 2.0.0 OK")
        case "NOOP":
            reply(context, "250 2.0.0 OK")
        case "QUIT":
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: "221 2.0.0 Bye\r\n")))
                .assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        default:
            reply(context, "502 5.5.2 Command not recognized")
        }
    }

    private func finishMessage(_ context: ChannelHandlerContext) {
        phase = .command
        if let dataReply = options.dataReply {
            resetTransaction()
            return reply(context, dataReply)
        }
        let number = state.received(FakeMail(from: from ?? "", recipients: recipients, data: data, tls: tlsActive,
                                             authenticatedUser: user, authMechanism: mechanism))
        resetTransaction()
        reply(context, "250 2.0.0 OK: queued as FAKE\(number)")
    }

    private func resetTransaction() {
        from = nil
        recipients = []
        data = []
    }

    private func plain(_ encoded: String, _ context: ChannelHandlerContext) {
        guard let decoded = Self.decode(encoded) else { return reply(context, "501 5.5.2 Cannot decode response") }
        // authzid \0 authcid \0 password
        let parts = decoded.split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { return reply(context, "501 5.5.2 Malformed PLAIN response") }
        check(parts[1], parts[2], mechanism: "PLAIN", context)
    }

    private func check(_ name: String, _ password: String, mechanism: String, _ context: ChannelHandlerContext) {
        if name == options.user, password == options.password {
            user = name
            self.mechanism = mechanism
            reply(context, "235 2.7.0 Authentication successful")
        } else {
            reply(context, "535 5.7.8 Authentication credentials invalid")
        }
    }

    private static func decode(_ base64: String) -> String? {
        Data(base64Encoded: base64.trimmingCharacters(in: .whitespaces)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// "FROM:<a@b> SIZE=12" → "a@b".
    private static func address(in argument: String, after keyword: String) -> String? {
        guard argument.uppercased().hasPrefix(keyword) else { return nil }
        let rest = argument.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)
        guard rest.hasPrefix("<"), let close = rest.firstIndex(of: ">") else { return nil }
        return String(rest[rest.index(after: rest.startIndex)..<close])
    }
}
