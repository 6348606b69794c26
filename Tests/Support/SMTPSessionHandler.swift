import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// The server's shared, lock-protected record.
final class FakeSMTPState: @unchecked Sendable {
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
final class SMTPSessionHandler: ChannelInboundHandler {
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
