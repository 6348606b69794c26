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

    /// The libcurl version in use, e.g. "7.88.1" (for logs).
    public static var libcurlVersion: String { CurlGlobal.version }

    /// Runs every request concurrently on the multi handle (HTTP/2 multiplexing where negotiated,
    /// connection reuse across calls — keep the multi handle and its connection cache alive between
    /// calls), blocking until all have finished. `onComplete(index, result)` is called on the calling
    /// thread as each transfer finishes, in completion order — the caller records results in chunks
    /// while the rest are still in flight (but must not call `perform` from it). At most
    /// `options.maxTransfersInFlight` run at once; the rest start as slots free up.
    public func perform(_ requests: [HTTPRequest], onComplete: (Int, Result<HTTPResponse, TransportError>) -> Void) {
        // A nested call from onComplete would take the outer call's completions, leaving it waiting forever.
        precondition(!performing, "HTTPTransport.perform called from its own onComplete")
        performing = true
        let limit = max(1, options.maxTransfersInFlight)
        // Slow start: until a server's HTTP/2 SETTINGS arrive, libcurl assumes it allows 100 concurrent
        // streams and opens a new connection for each further request. So start at most 100 transfers
        // until one completes (its connection's SETTINGS have then arrived) or half a second passes.
        var warmedUp = limit <= Self.streamsBeforeSettings
        let started = ContinuousClock.now
        var next = 0
        var active: [UnsafeMutableRawPointer: HTTPTransfer] = [:]
        defer {
            performing = false
            if idleHandles.count > idleHandlesKept { idleHandles.removeLast(idleHandles.count - idleHandlesKept) }
        }

        while next < requests.count || !active.isEmpty {
            if !warmedUp, ContinuousClock.now - started > .milliseconds(500) { warmedUp = true }
            while active.count < (warmedUp ? limit : Self.streamsBeforeSettings), next < requests.count {
                let index = next
                next += 1
                switch start(requests[index], index: index) {
                case .success(let transfer): active[transfer.easy.raw] = transfer
                case .failure(let error): onComplete(index, .failure(error))
                }
            }
            if active.isEmpty { continue }

            multi.perform()
            var finishedSome = false
            while let done = multi.nextDone() {
                guard let transfer = active.removeValue(forKey: done.easy) else { continue }
                multi.remove(transfer.easy)
                let result = transfer.result(done.result)
                idleHandles.append(transfer.easy)
                finishedSome = true
                warmedUp = true
                onComplete(transfer.index, result)
            }
            // Go straight back to start waiting requests in the freed slots; otherwise wait for I/O.
            if !active.isEmpty, !(finishedSome && next < requests.count) {
                multi.poll(milliseconds: 100)
            }
        }
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
