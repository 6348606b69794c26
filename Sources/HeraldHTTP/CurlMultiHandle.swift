import CCurl

/// A libcurl multi handle (`CURLM *`): runs many easy handles at once and keeps the connection cache
/// (so connections are reused, and HTTP/2 connections multiplexed, across transfers). Owns the handle
/// and frees it exactly once, in `deinit`. Protocol-neutral.
///
///     let multi = try CurlMultiHandle()
///     try multi.add(easy)
///     while multi.perform() > 0 { multi.poll(milliseconds: 100) }
///     while let done = multi.nextDone() { multi.remove(easy); … done.result … }
///
/// Not thread-safe: use from one thread at a time. Remove every easy handle before releasing it.
public final class CurlMultiHandle {
    /// The `CURLM *`, valid for the life of this object.
    public let raw: UnsafeMutableRawPointer

    public init() throws(TransportSetupError) {
        guard CurlGlobal.initialized else { throw .curl("curl_global_init failed") }
        guard let handle = curl_multi_init() else { throw .curl("curl_multi_init failed") }
        raw = handle
    }

    deinit {
        curl_multi_cleanup(raw)
    }

    /// Sets a `long` multi option.
    public func set(_ option: CURLMoption, _ value: Int) throws(TransportSetupError) {
        let code = herald_curl_multi_setopt_long(raw, option, value)
        guard code == CURLM_OK else {
            throw .curl("curl_multi_setopt \(option.rawValue): " + String(cString: curl_multi_strerror(code)))
        }
    }

    /// Starts `easy`'s transfer on this handle.
    public func add(_ easy: CurlEasyHandle) throws(TransportError) {
        let code = curl_multi_add_handle(raw, easy.raw)
        guard code == CURLM_OK else {
            throw .other(code: Int(code.rawValue), message: "curl_multi_add_handle: "
                         + String(cString: curl_multi_strerror(code)))
        }
    }

    /// Detaches `easy` (finished or not).
    public func remove(_ easy: CurlEasyHandle) {
        _ = curl_multi_remove_handle(raw, easy.raw)
    }

    /// Does whatever I/O is ready without waiting; returns how many transfers are still running.
    @discardableResult
    public func perform() -> Int {
        var running: Int32 = 0
        _ = curl_multi_perform(raw, &running)
        return Int(running)
    }

    /// Waits until a transfer's socket is ready or a timer is due, at most `milliseconds`.
    public func poll(milliseconds: Int) {
        var ready: Int32 = 0
        _ = curl_multi_poll(raw, nil, 0, Int32(milliseconds), &ready)
    }

    /// The next finished transfer, as its `CURL *` and result code, or nil.
    public func nextDone() -> (easy: UnsafeMutableRawPointer, result: CURLcode)? {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(raw, &queued) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                return (easy, message.pointee.data.result)
            }
        }
        return nil
    }
}
