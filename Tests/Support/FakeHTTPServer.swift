import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// What the fake server answers.
///
///     FakeResponse.json(200, #"{"name":"projects/p/messages/1"}"#)
///     FakeResponse(status: 503, headers: [("retry-after", "2")], delay: 0.05)
///     FakeResponse(status: 204, gate: gate)     // sent when the test releases it (see `FakeGate`)
public struct FakeResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Seconds to wait before answering, scheduled on the event loop (other requests proceed meanwhile).
    public var delay: Double
    /// Interim 1xx responses sent first (e.g. 103 Early Hints), each with its own header fields.
    public var informational: [(status: Int, headers: [(String, String)])]
    /// When set, the answer waits at this gate until the test releases it (then `delay` runs).
    public var gate: FakeGate?

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], delay: Double = 0,
                informational: [(status: Int, headers: [(String, String)])] = [], gate: FakeGate? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.informational = informational
        self.gate = gate
    }

    /// A JSON response with `content-type: application/json`.
    public static func json(_ status: Int, _ text: String, headers: [(String, String)] = [],
                            delay: Double = 0) -> FakeResponse {
        FakeResponse(status: status, headers: [("content-type", "application/json")] + headers,
                     body: Array(text.utf8), delay: delay)
    }

    /// A plain-text response.
    public static func text(_ status: Int, _ text: String, headers: [(String, String)] = [],
                            delay: Double = 0) -> FakeResponse {
        FakeResponse(status: status, headers: [("content-type", "text/plain")] + headers,
                     body: Array(text.utf8), delay: delay)
    }
}

/// A loopback HTTP server for tests and benchmarks: cleartext HTTP/1.1 (or h2c with prior knowledge),
/// or TLS with ALPN h2 and http/1.1. The handler runs on the server's event loop for every request (keep it quick; use a lock
/// for state; never sleep in it); answers are sent after `FakeResponse.delay`, or when the test releases
/// them from a `FakeGate`, without blocking other requests.
///
///     let certificates = try TestCertificates.make()
///     let attempts = Counter()   // some lock-protected state of the test's own
///     let server = try FakeHTTPServer(tls: certificates) { request in
///         attempts.increment() == 1 ? .json(503, "{}") : .json(200, #"{"ok":true}"#)
///     }
///     defer { server.shutdown() }
///     // send to server.baseURL + "/send", trusting certificates.caFile
public final class FakeHTTPServer: Sendable {
    /// The TCP port, on 127.0.0.1.
    public let port: Int
    /// "https://localhost:PORT" with TLS, else "http://127.0.0.1:PORT".
    public let baseURL: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let state: FakeServerState

    /// - Parameters:
    ///   - tls: nil for cleartext HTTP/1.1 and h2c (prior knowledge); else TLS with these certificates, ALPN h2 and http/1.1.
    ///   - threads: event loop threads.
    ///   - http2: offer h2 in ALPN (with TLS); false makes the server HTTP/1.1-only, as some webhooks are.
    ///   - ending: how the server ends its connections; nil keeps them open.
    ///   - handler: answers each request.
    public init(tls: TestCertificates? = nil, threads: Int = 1, http2: Bool = true, ending: ConnectionEnding? = nil,
                handler: @escaping @Sendable (FakeRequest) -> FakeResponse) throws {
        let state = FakeServerState(handler: handler, ending: ending)
        let sslContext: NIOSSLContext?
        if let tls {
            let chain = try NIOSSLCertificate.fromPEMFile(tls.certFile).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: tls.keyFile, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain,
                                                                         privateKey: .privateKey(key))
            configuration.minimumTLSVersion = .tlsv12
            configuration.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
            sslContext = try NIOSSLContext(configuration: configuration)
        } else {
            sslContext = nil
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                state.connectionAccepted()
                guard let sslContext else {
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(CleartextProtocolSniffer(state: state))
                    }
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                }.flatMap {
                    channel.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { channel in Self.configureHTTP2(channel, state: state) },
                        http1ChannelConfigurator: { channel in Self.configureHTTP1(channel, state: state) })
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
        baseURL = tls == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)"
    }

    deinit {
        shutdown()
    }

    /// Every request received so far, in arrival order.
    public var requests: [FakeRequest] { state.requests }

    /// How many requests were received so far: cheaper than `requests.count` for a test that waits
    /// for many.
    public var requestCount: Int { state.requestCount }

    /// TCP connections accepted so far.
    public var connectionCount: Int { state.connections }

    /// Requests never handed to the handler: streams beyond a GOAWAY's last stream id.
    public var refusedCount: Int { state.refused }

    /// Connections the server began to end with a graceful GOAWAY.
    public var goAwayCount: Int { state.goAways }

    /// The most requests the server held at once (received, not yet answered): how concurrent the
    /// client was, measured without a clock.
    public var peakInFlight: Int { state.peakInFlight }

    /// Closes the listening socket and every connection, and stops the threads. Idempotent.
    /// Call it from a test's thread, never from the handler.
    public func shutdown() {
        guard state.markShutDown() else { return }
        for gate in state.gates { gate.abandon(server: state.id) }
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    static func configureHTTP1(_ channel: any Channel, state: FakeServerState) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(FakeRequestHandler(
                httpVersion: "1.1", state: state, life: ConnectionLife(ending: state.ending)))
        }
    }

    static func configureHTTP2(_ channel: any Channel, state: FakeServerState) -> EventLoopFuture<Void> {
        // Like real providers (APNs allows ~1,000), accept many concurrent streams per connection.
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)]
            + nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
        // NIO's codec ends a response with a separate empty DATA frame carrying END_STREAM; libcurl,
        // having read content-length bytes, finishes first and sends RST_STREAM for each such stream.
        // NIO's rapid-reset protection (200 RST_STREAM per 30 s) would then GOAWAY the connection under
        // load, which real providers don't do for resets of finished streams.
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.streamResetFrameRateLimit.maximumCount = 1_000_000
        // A stream this server refused or reset may still receive the client's frames already on their
        // way (its body, a WINDOW_UPDATE): RFC 9113 §5.4.2 has them ignored. NIO remembers only the last
        // 32 such streams and ends the connection (PROTOCOL_ERROR) on a frame for any other, and ends it
        // too (ENHANCE_YOUR_CALM) after 200 stream errors in 30 s: guards against a hostile client that
        // no provider applies to its own refusals, and that would end the connections under the test.
        connection.maximumRecentlyResetStreams = 1_000_000
        connection.maximumConnectionGlitches = 1_000_000
        stream.streamErrorRateLimit.maximumCount = 1_000_000
        let life = ConnectionLife(ending: state.ending)
        return channel.configureHTTP2Pipeline(mode: .server, connectionConfiguration: connection,
                                              streamConfiguration: stream) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                try stream.pipeline.syncOperations.addHandler(FakeRequestHandler(httpVersion: "2", state: state, life: life))
            }
        }.map { _ in () }
    }
}

/// The fake server's shared, lock-protected state.
final class FakeServerState: @unchecked Sendable {
    let handler: @Sendable (FakeRequest) -> FakeResponse
    let ending: ConnectionEnding?
    private let lock = NSLock()
    private var _refused = 0
    private var _goAways = 0
    private var _requests: [FakeRequest] = []
    private var _connections = 0
    private var _inFlight = 0
    private var _peakInFlight = 0
    private var _shutDown = false
    private var _gates: [FakeGate] = []
    /// This server, to the gates its answers wait at.
    let id = UUID()

    init(handler: @escaping @Sendable (FakeRequest) -> FakeResponse, ending: ConnectionEnding?) {
        self.handler = handler
        self.ending = ending
    }

    var refused: Int { lock.withLock { _refused } }
    func refusedOne() { lock.withLock { _refused += 1 } }
    var goAways: Int { lock.withLock { _goAways } }
    func wentAway() { lock.withLock { _goAways += 1 } }

    var requests: [FakeRequest] { lock.withLock { _requests } }
    var requestCount: Int { lock.withLock { _requests.count } }
    var connections: Int { lock.withLock { _connections } }
    func connectionAccepted() { lock.withLock { _connections += 1 } }
    var peakInFlight: Int { lock.withLock { _peakInFlight } }
    func received(_ request: FakeRequest) {
        lock.withLock {
            _requests.append(request)
            _inFlight += 1
            _peakInFlight = max(_peakInFlight, _inFlight)
        }
    }
    func answered() { lock.withLock { _inFlight -= 1 } }
    /// The gates this server's answers have waited at.
    var gates: [FakeGate] { lock.withLock { _gates } }
    /// Notes that an answer waits at `gate`; false once the server is shutting down (it never will).
    func uses(_ gate: FakeGate) -> Bool {
        lock.withLock {
            guard !_shutDown else { return false }
            if !_gates.contains(where: { $0 === gate }) { _gates.append(gate) }
            return true
        }
    }
    /// True the first time only.
    func markShutDown() -> Bool {
        lock.withLock {
            defer { _shutDown = true }
            return !_shutDown
        }
    }
}

/// Turns HTTP/1-style request parts (from the HTTP/1.1 decoder or the HTTP/2 stream codec) into a
/// `FakeRequest`, asks the handler, and writes its answer.
private final class FakeRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let httpVersion: String
    private let state: FakeServerState
    private let life: ConnectionLife
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(httpVersion: String, state: FakeServerState, life: ConnectionLife) {
        self.httpVersion = httpVersion
        self.state = state
        self.life = life
    }

    /// Resets this HTTP/2 stream with REFUSED_STREAM: the client may send it again elsewhere.
    private func refuse(_ context: ChannelHandlerContext) {
        guard let codec = try? context.pipeline.syncOperations.context(handlerType: HTTP2FramePayloadToHTTP1ServerCodec.self)
        else { return }
        codec.writeAndFlush(NIOAny(HTTP2Frame.FramePayload.rstStream(.refusedStream)), promise: nil)
    }

    /// The HTTP/2 stream's id; nil over HTTP/1.1.
    private func streamID(_ context: ChannelHandlerContext) -> Int? {
        guard httpVersion == "2" else { return nil }
        return (try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)).map { Int($0) }
    }

    /// The TCP connection: the stream's parent over HTTP/2, the channel itself over HTTP/1.1 (whose
    /// parent is the listening socket).
    private func connection(_ context: ChannelHandlerContext) -> any Channel {
        httpVersion == "2" ? (context.channel.parent ?? context.channel) : context.channel
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            if let stream = streamID(context), !life.began(stream: stream) {
                // Beyond a GOAWAY: refused before any processing.
                self.head = nil
                state.refusedOne()
                refuse(context)
            }
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            self.head = nil
            let stream = streamID(context)
            let verdict = life.arrived(http2: stream != nil)
            let request = FakeRequest(
                method: head.method.rawValue, path: head.uri,
                headers: head.headers.map { ($0.name.lowercased(), $0.value) },
                body: body, httpVersion: httpVersion, receivedAt: Date())
            state.received(request)
            let response = state.handler(request)
            switch verdict {
            case .processThenEnd(let reset):
                state.answered()  // never will be: the connection ends with it in flight
                ConnectionLife.end(connection(context), reset: reset)
                return
            case .processAndGoAway:
                state.wentAway()
                life.goAway(connection(context))
            case .process, .processThenClose:
                break
            }
            let keepAlive = head.isKeepAlive
            let version = head.version
            let close = verdict == .processThenClose
            let answer = {
                if response.delay > 0 {
                    context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(Int64(response.delay * 1e9))) {
                        self.respond(context: context, response, version: version, keepAlive: keepAlive, close: close, stream: stream)
                    }
                } else {
                    self.respond(context: context, response, version: version, keepAlive: keepAlive, close: close, stream: stream)
                }
            }
            if let gate = response.gate {
                // Held until the test releases it. Every promise is completed: a server that shuts down
                // first fails those it still holds (`shutdown`), and holds none after that.
                let released = context.eventLoop.makePromise(of: Void.self)
                released.futureResult.assumeIsolated().whenSuccess { answer() }
                if state.uses(gate) {
                    gate.hold(released, server: state.id)
                } else {
                    released.fail(FakeGateAbandoned())
                }
            } else {
                answer()
            }
        }
    }

    private func respond(context: ChannelHandlerContext, _ response: FakeResponse, version: NIOHTTP1.HTTPVersion,
                         keepAlive: Bool, close: Bool, stream: Int?) {
        state.answered()
        let lastOfGoAway = life.answered(stream: stream)
        guard context.channel.isActive else { return }
        for interim in response.informational {
            var headers = HTTPHeaders()
            for (name, value) in interim.headers { headers.add(name: name, value: value) }
            let head = HTTPResponseHead(version: version, status: .init(statusCode: interim.status), headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
        }
        var headers = HTTPHeaders()
        for (name, value) in response.headers { headers.add(name: name, value: value) }
        headers.replaceOrAdd(name: "content-length", value: String(response.body.count))
        if httpVersion == "1.1", !keepAlive { headers.replaceOrAdd(name: "connection", value: "close") }
        let head = HTTPResponseHead(version: version, status: .init(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !response.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))),
                          promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if httpVersion == "1.1", !keepAlive {
            done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else if close {
            // Ends the connection with no warning.
            let connection = connection(context)
            done.whenComplete { _ in connection.close(promise: nil) }
        } else if lastOfGoAway {
            let connection = connection(context)
            let life = life
            done.whenComplete { _ in life.finish(connection) }
        }
    }
}
