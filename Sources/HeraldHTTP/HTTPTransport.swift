import CCurl

/// Sends HTTP requests concurrently on one libcurl multi handle: HTTP/2 multiplexing where the server
/// negotiates it, connections reused across calls, per-request timeouts.
///
///     let transport = try HTTPTransport(options: .init(caFile: caFile, userAgent: "herald/1.0"))
///     transport.perform(requests) { index, result in
///         switch result {
///         case .success(let response): record(index, response.status)
///         case .failure(let error): retryLater(index, error)
///         }
///     }
///
/// Owns its multi handle, a pool of idle easy handles and the combined CA bundle, and frees them when
/// released. Not thread-safe: use one transport from one thread at a time (one per worker thread).
public final class HTTPTransport {
    public let options: TransportOptions
    private let multi: CurlMultiHandle
    private let caBundle: CABundleFile?
    private var idleHandles: [CurlEasyHandle] = []
    /// Idle easy handles kept between calls.
    private let idleHandlesKept = 64
    private var performing = false
    /// libcurl's assumption of a server's HTTP/2 MAX_CONCURRENT_STREAMS before its SETTINGS arrive.
    fileprivate static let streamsBeforeSettings = 100

    public init(options: TransportOptions = .init()) throws {
        self.options = options
        if let caFile = options.caFile {
            caBundle = try CABundleFile(extraCAFile: caFile)
        } else {
            caBundle = nil
        }
        multi = try CurlMultiHandle()
        streams = StreamsPerConnection(initial: max(100, options.maxTransfersInFlight))
        try multi.set(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, max(1, options.maxConnectionsPerHost))
        try multi.set(CURLMOPT_MAX_TOTAL_CONNECTIONS, max(1, options.maxTotalConnections))
        try multi.set(CURLMOPT_MAXCONNECTS, max(1, options.maxTotalConnections))
        // libcurl's own cap on streams per HTTP/2 connection defaults to 100, beyond which it opens a
        // connection per further request; let the server's SETTINGS decide instead, until connections
        // end with answers in flight (StreamsPerConnection).
        try multi.set(CURLMOPT_MAX_CONCURRENT_STREAMS, streams.limit)
    }

    deinit {
        // Easy handles are detached after each transfer; release them before the multi handle.
        idleHandles.removeAll()
    }

    /// Runs every request concurrently on the multi handle (HTTP/2 multiplexing where negotiated,
    /// connection reuse across calls — keep the multi handle and its connection cache alive between
    /// calls), blocking until all have finished. `onComplete(index, result)` is called on the calling
    /// thread as each transfer finishes, in completion order — the caller records results in chunks
    /// while the rest are still in flight (but must not call `perform` from it, and should not block in
    /// it: the other transfers wait meanwhile). At most `options.maxTransfersInFlight` run at once.
    ///
    /// A request is handed to libcurl only when its host has room: `maxConnectionsPerHost` requests
    /// at once to a host not known to multiplex (one per connection), more once it answered over
    /// HTTP/2. So a request never waits inside libcurl for a connection, and its timeout counts from
    /// when it goes on the wire, not from when it was queued.
    ///
    /// A connection that ends under its requests is not their answer. A request that never wholly left
    /// goes again at once on a new connection (up to `unsentResends` times). A request sent whose answer
    /// was lost with its connection — or that libcurl would have sent again by itself (``UploadBody``) —
    /// goes again at once when `resendAfterLostAnswer(index, error)` says so — the caller's choice,
    /// since the server may have acted on it — else completes with
    /// ``TransportError/connectionEnded(requestSent:message:)``. Either way the other requests go on.
    ///
    /// `shouldStart(index)` is asked before each request is started (and before each start again); a
    /// request it refuses is not started (after a stop signal it refuses them all; a provider's open
    /// circuit breaker refuses that provider's). The transfers in flight finish, and the indices of the
    /// requests never started are returned, in order (they never left this process: nothing was sent).
    @discardableResult
    public func perform(_ requests: [HTTPRequest], shouldStart: (Int) -> Bool = { _ in true },
                        resendAfterLostAnswer: (Int, TransportError) -> Bool = { _, _ in false },
                        onComplete: (Int, Result<HTTPResponse, TransportError>) -> Void) -> [Int] {
        perform(requests, decide: { shouldStart($0) ? .start : .refuse },
                resendAfterLostAnswer: resendAfterLostAnswer, onComplete: onComplete)
    }

    /// Whether a request starts now (`perform(_:decide:…)`).
    public enum StartDecision: Sendable, Equatable {
        case start
        /// Never in this call: it is returned among the requests not started.
        case refuse
        /// Not yet: it keeps its place, and the same request is asked again after `seconds` (at most
        /// 0.1 s, sooner when a transfer finishes). The requests behind it to the same host wait too.
        case wait(seconds: Double)
    }

    /// `perform` where `decide(index)`, asked before each start (and each start again), may also hold a
    /// request back for a while (`StartDecision.wait`: a provider's quota paces it) without refusing it.
    @discardableResult
    public func perform(_ requests: [HTTPRequest], decide: (Int) -> StartDecision,
                        resendAfterLostAnswer: (Int, TransportError) -> Bool = { _, _ in false },
                        onComplete: (Int, Result<HTTPResponse, TransportError>) -> Void) -> [Int] {
        // A nested call from onComplete would take the outer call's completions, leaving it waiting forever.
        precondition(!performing, "HTTPTransport.perform called from its own onComplete")
        performing = true
        defer {
            performing = false
            if idleHandles.count > idleHandlesKept { idleHandles.removeLast(idleHandles.count - idleHandlesKept) }
        }
        var run = Run(requests, limit: max(1, options.maxTransfersInFlight))
        while !run.queues.isEmpty || !run.active.isEmpty {
            startWaiting(&run, requests, decide: decide, onComplete: onComplete)
            if run.active.isEmpty {
                // Only requests told to wait: nothing to drive meanwhile.
                if let pause = run.pause { multi.poll(milliseconds: pause) }
                continue
            }
            multi.perform()
            var finishedSome = false
            while let done = multi.nextDone() {
                guard let transfer = run.active.removeValue(forKey: done.easy) else { continue }
                finishedSome = true
                let ended = finish(transfer, transfer.result(done.result), &run,
                                   resendAfterLostAnswer: resendAfterLostAnswer, onComplete: onComplete)
                // The rest of a dead connection's transfers would wait for libcurl to notice: end them now.
                if let port = ended {
                    for (key, other) in run.active where other.easy.info(long: CURLINFO_LOCAL_PORT) == port {
                        run.active[key] = nil
                        finish(other, .failure(other.connectionEnded()), &run,
                               resendAfterLostAnswer: resendAfterLostAnswer, onComplete: onComplete)
                    }
                }
            }
            // Go straight back to start waiting requests in the freed slots; otherwise wait for I/O.
            if !run.active.isEmpty, !(finishedSome && !run.queues.isEmpty) {
                multi.poll(milliseconds: run.pause ?? 100)
            }
        }
        return (run.refused + run.queues.remaining).sorted()
    }

    /// How many times a request that never wholly left is sent again on a new connection before it
    /// completes with the connection's end.
    public static let unsentResends = 3

    /// One call of `perform`: what waits, what runs, what was refused.
    private struct Run {
        var queues: HostQueues
        var active: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
        var activeByHost: [Int: Int] = [:]
        var refused: [Int] = []
        var unsentTries: [Int: Int] = [:]
        /// Milliseconds until the first request told to wait is asked again (1 to 100); nil: none waits.
        var pause: Int?
        let limit: Int
        // Slow start: until a server's HTTP/2 SETTINGS arrive, libcurl assumes it allows 100 concurrent
        // streams and opens a new connection for each further request. So start at most 100 transfers
        // until one completes (its connection's SETTINGS have then arrived) or half a second passes.
        var warmedUp: Bool
        let started = ContinuousClock.now

        init(_ requests: [HTTPRequest], limit: Int) {
            queues = HostQueues(requests)
            self.limit = limit
            warmedUp = limit <= HTTPTransport.streamsBeforeSettings
        }
    }

    /// Starts waiting requests while their hosts, and the transport, have room.
    private func startWaiting(_ run: inout Run, _ requests: [HTTPRequest], decide: (Int) -> StartDecision,
                              onComplete: (Int, Result<HTTPResponse, TransportError>) -> Void) {
        if !run.warmedUp, ContinuousClock.now - run.started > .milliseconds(500) { run.warmedUp = true }
        let cap = run.warmedUp ? run.limit : Self.streamsBeforeSettings
        let perHost = max(1, options.maxConnectionsPerHost)
        run.pause = nil
        for host in run.queues.hostsWaiting {
            // A multiplexing host takes as many as its connections carry; another, one per connection.
            let room = multiplexing.contains(run.queues.key(host)) ? min(run.limit, perHost * streams.limit) : perHost
            while run.active.count < cap, run.activeByHost[host, default: 0] < room, let index = run.queues.peek(host) {
                let decision = decide(index)
                if case .wait(let seconds) = decision {
                    run.pause = min(run.pause ?? 100, Self.pauseMilliseconds(seconds))
                    break
                }
                run.queues.pop(host)
                guard decision == .start else { run.refused.append(index); continue }
                switch start(requests[index], index: index) {
                case .success(let transfer):
                    transfer.host = host
                    run.active[transfer.easy.raw] = transfer
                    run.activeByHost[host, default: 0] += 1
                case .failure(let error): onComplete(index, .failure(error))
                }
            }
            if run.active.count >= cap { break }
        }
    }

    /// A wait in whole milliseconds, from 1 to 100 (a wait that is not a finite number: 100).
    static func pauseMilliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite else { return 100 }
        return Int(min(max(seconds * 1000, 1), 100).rounded(.up))
    }

    /// A finished transfer: its handle back to the pool, then its result — or, when its connection ended
    /// under it and it may go again, back to the head of its host's queue. Returns the local port of a
    /// connection that ended, whose other transfers are doomed too.
    @discardableResult
    private func finish(_ transfer: HTTPTransfer, _ result: Result<HTTPResponse, TransportError>, _ run: inout Run,
                        resendAfterLostAnswer: (Int, TransportError) -> Bool,
                        onComplete: (Int, Result<HTTPResponse, TransportError>) -> Void) -> Int? {
        let port = transfer.easy.info(long: CURLINFO_LOCAL_PORT) ?? 0
        multi.remove(transfer.easy)
        run.activeByHost[transfer.host, default: 1] -= 1
        run.warmedUp = true
        idleHandles.append(transfer.easy)
        switch result {
        case .success(let response):
            if response.httpVersion >= 20 { multiplexing.insert(run.queues.key(transfer.host)) }
            streams.answered(onConnection: port)
        case .failure(let error) where error.isConnectionEnd:
            guard case .connectionEnded(let sent, _) = error else { break }
            // A send libcurl wanted to repeat by itself may be a stream the server refused on a live
            // connection: it says nothing of the connection or of its other streams.
            let connectionDied = !transfer.upload.refusedRewind
            if sent, connectionDied, let limit = streams.lostAnswer(onConnection: port) {
                try? multi.set(CURLMOPT_MAX_CONCURRENT_STREAMS, limit)
            }
            let again: Bool
            if sent {
                again = resendAfterLostAnswer(transfer.index, error)
            } else {
                run.unsentTries[transfer.index, default: 0] += 1
                again = run.unsentTries[transfer.index, default: 0] <= Self.unsentResends
            }
            if again { run.queues.pushFront(transfer.host, transfer.index) } else { onComplete(transfer.index, result) }
            return port > 0 && connectionDied ? port : nil
        case .failure:
            break
        }
        onComplete(transfer.index, result)
        return nil
    }

    /// Streams per HTTP/2 connection: the server's limit until connections end with answers lost.
    private var streams: StreamsPerConnection

    /// Hosts (scheme://authority) that answered over HTTP/2: many requests share one connection.
    private var multiplexing: Set<String> = []

    /// The requests not yet started, in order, per host.
    private struct HostQueues {
        private var keys: [String] = []
        private var queues: [[Int]] = []
        private var heads: [Int] = []
        private var waiting = 0

        init(_ requests: [HTTPRequest]) {
            var hostIndex: [String: Int] = [:]
            for (index, request) in requests.enumerated() {
                let key = HTTPTransport.hostKey(request.url)
                let host = hostIndex[key] ?? {
                    keys.append(key); queues.append([]); heads.append(0)
                    hostIndex[key] = keys.count - 1
                    return keys.count - 1
                }()
                queues[host].append(index)
            }
            waiting = requests.count
        }

        var isEmpty: Bool { waiting == 0 }
        var hostsWaiting: [Int] { keys.indices.filter { heads[$0] < queues[$0].count } }
        func key(_ host: Int) -> String { keys[host] }
        func peek(_ host: Int) -> Int? { heads[host] < queues[host].count ? queues[host][heads[host]] : nil }
        mutating func pop(_ host: Int) { heads[host] += 1; waiting -= 1 }
        /// Puts `index` back at the head of `host`'s queue, to be started next.
        mutating func pushFront(_ host: Int, _ index: Int) {
            if heads[host] > 0 {
                heads[host] -= 1
                queues[host][heads[host]] = index
            } else {
                queues[host].insert(index, at: 0)
            }
            waiting += 1
        }
        /// Every index not started, in request order.
        var remaining: [Int] { keys.indices.flatMap { queues[$0][heads[$0]...] }.sorted() }
    }

    /// "https://api.push.apple.com:443" of "https://api.push.apple.com:443/3/device/…": what libcurl
    /// keys its connections by (scheme, host and port), lower-cased.
    static func hostKey(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url.lowercased() }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return (url[..<schemeEnd.upperBound] + authority).lowercased()
    }

    /// Convenience for one request.
    ///
    ///     let result = transport.perform(HTTPRequest(method: "GET", url: "https://example.com/health"))
    public func perform(_ request: HTTPRequest) -> Result<HTTPResponse, TransportError> {
        var outcome: Result<HTTPResponse, TransportError> = .failure(.other(code: -1, message: "not performed"))
        perform([request]) { _, result in outcome = result }
        return outcome
    }

    /// The system's CA bundle file, trusted alone when no extra CA is configured (see `HTTPTransfer.trust`).
    private static let systemBundle = CABundleFile.systemBundlePath()

    /// Configures an easy handle (reused if one is idle) for `request` and adds it to the multi handle.
    private func start(_ request: HTTPRequest, index: Int) -> Result<HTTPTransfer, TransportError> {
        let easy: CurlEasyHandle
        if let idle = idleHandles.popLast() {
            easy = idle
        } else {
            do {
                easy = try CurlEasyHandle()
            } catch {
                return .failure(.other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: error.description))
            }
        }
        let transfer = HTTPTransfer(index: index, easy: easy)
        do {
            try transfer.configure(request, options: options, caBundle: caBundle?.path ?? Self.systemBundle)
            try multi.add(easy)
            return .success(transfer)
        } catch {
            easy.reset()
            idleHandles.append(easy)
            return .failure(error)
        }
    }
}
