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
    private static let streamsBeforeSettings = 100

    public init(options: TransportOptions = .init()) throws {
        self.options = options
        if let caFile = options.caFile {
            caBundle = try CABundleFile(extraCAFile: caFile)
        } else {
            caBundle = nil
        }
        multi = try CurlMultiHandle()
        try multi.set(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        try multi.set(CURLMOPT_MAX_HOST_CONNECTIONS, max(1, options.maxConnectionsPerHost))
        try multi.set(CURLMOPT_MAX_TOTAL_CONNECTIONS, max(1, options.maxTotalConnections))
        try multi.set(CURLMOPT_MAXCONNECTS, max(1, options.maxTotalConnections))
        // libcurl's own cap on streams per HTTP/2 connection defaults to 100, beyond which it opens a
        // connection per further request; let the server's SETTINGS decide instead.
        try multi.set(CURLMOPT_MAX_CONCURRENT_STREAMS, max(100, options.maxTransfersInFlight))
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
    /// `shouldStart(index)` is asked before each request is started; a request it refuses is not
    /// started (after a stop signal it refuses them all; a provider's open circuit breaker refuses
    /// that provider's). The transfers in flight finish, and the indices of the requests never started
    /// are returned, in order (they never left this process: nothing was sent).
    @discardableResult
    public func perform(_ requests: [HTTPRequest], shouldStart: (Int) -> Bool = { _ in true },
                        onComplete: (Int, Result<HTTPResponse, TransportError>) -> Void) -> [Int] {
        // A nested call from onComplete would take the outer call's completions, leaving it waiting forever.
        precondition(!performing, "HTTPTransport.perform called from its own onComplete")
        performing = true
        let limit = max(1, options.maxTransfersInFlight)
        let perHost = max(1, options.maxConnectionsPerHost)
        // Slow start: until a server's HTTP/2 SETTINGS arrive, libcurl assumes it allows 100 concurrent
        // streams and opens a new connection for each further request. So start at most 100 transfers
        // until one completes (its connection's SETTINGS have then arrived) or half a second passes.
        var warmedUp = limit <= Self.streamsBeforeSettings
        let started = ContinuousClock.now
        var queues = HostQueues(requests)
        var active: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
        var activeByHost: [Int: Int] = [:]
        var refused: [Int] = []
        defer {
            performing = false
            if idleHandles.count > idleHandlesKept { idleHandles.removeLast(idleHandles.count - idleHandlesKept) }
        }

        while !queues.isEmpty || !active.isEmpty {
            if !warmedUp, ContinuousClock.now - started > .milliseconds(500) { warmedUp = true }
            let cap = warmedUp ? limit : Self.streamsBeforeSettings
            for host in queues.hostsWaiting {
                let room = multiplexing.contains(queues.key(host)) ? limit : perHost
                while active.count < cap, activeByHost[host, default: 0] < room, let index = queues.peek(host) {
                    queues.pop(host)
                    guard shouldStart(index) else { refused.append(index); continue }
                    switch start(requests[index], index: index) {
                    case .success(let transfer):
                        transfer.host = host
                        active[transfer.easy.raw] = transfer
                        activeByHost[host, default: 0] += 1
                    case .failure(let error): onComplete(index, .failure(error))
                    }
                }
                if active.count >= cap { break }
            }
            if active.isEmpty { continue }

            multi.perform()
            var finishedSome = false
            while let done = multi.nextDone() {
                guard let transfer = active.removeValue(forKey: done.easy) else { continue }
                multi.remove(transfer.easy)
                activeByHost[transfer.host, default: 1] -= 1
                let result = transfer.result(done.result)
                if case .success(let response) = result, response.httpVersion >= 20 {
                    multiplexing.insert(queues.key(transfer.host))
                }
                idleHandles.append(transfer.easy)
                finishedSome = true
                warmedUp = true
                onComplete(transfer.index, result)
            }
            // Go straight back to start waiting requests in the freed slots; otherwise wait for I/O.
            if !active.isEmpty, !(finishedSome && !queues.isEmpty) {
                multi.poll(milliseconds: 100)
            }
        }
        return (refused + queues.remaining).sorted()
    }

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
            try transfer.configure(request, options: options, caBundle: caBundle?.path)
            try multi.add(easy)
            return .success(transfer)
        } catch {
            easy.reset()
            idleHandles.append(easy)
            return .failure(error)
        }
    }
}
