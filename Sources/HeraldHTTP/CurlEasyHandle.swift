import CCurl

/// A libcurl easy handle (`CURL *`): one transfer's options. Owns the handle and its error buffer and
/// frees both exactly once, in `deinit`. Protocol-neutral, so HTTP and SMTP transfers can share it.
///
///     let easy = try CurlEasyHandle()
///     try easy.set(CURLOPT_URL, "https://example.com/")
///     try easy.set(CURLOPT_NOSIGNAL, 1)
///
/// Not thread-safe: use one handle from one thread at a time.
public final class CurlEasyHandle {
    /// The `CURL *`, valid for the life of this object.
    public let raw: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private let errorBufferSize = Int(herald_curl_error_size())

    public init() throws(TransportSetupError) {
        guard CurlGlobal.initialized else { throw .curl("curl_global_init failed") }
        guard let handle = curl_easy_init() else { throw .curl("curl_easy_init failed") }
        raw = handle
        errorBuffer = .allocate(capacity: errorBufferSize)
        errorBuffer.initialize(repeating: 0, count: errorBufferSize)
        reset()
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deinitialize(count: errorBufferSize)
        errorBuffer.deallocate()
    }

    /// Clears every option for the next transfer (`curl_easy_reset`) and clears the error message.
    /// Connections and caches survive: they belong to the multi handle.
    public func reset() {
        curl_easy_reset(raw)
        errorBuffer[0] = 0
        _ = herald_curl_easy_setopt_pointer(raw, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
    }

    /// libcurl's detailed message for the last failure (CURLOPT_ERRORBUFFER), or "".
    public var errorMessage: String { String(cString: errorBuffer) }

    // MARK: Options

    /// Sets a `long` option.
    public func set(_ option: CURLoption, _ value: Int) throws(TransportError) {
        try check(herald_curl_easy_setopt_long(raw, option, value), option)
    }

    /// Sets a string option; libcurl copies the string.
    public func set(_ option: CURLoption, _ value: String) throws(TransportError) {
        try check(herald_curl_easy_setopt_string(raw, option, value), option)
    }

    /// Sets a `curl_off_t` option.
    public func set(_ option: CURLoption, offset value: Int64) throws(TransportError) {
        try check(herald_curl_easy_setopt_off_t(raw, option, curl_off_t(value)), option)
    }

    /// Sets a pointer option. The caller keeps the memory alive until the transfer is done.
    public func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(TransportError) {
        try check(herald_curl_easy_setopt_pointer(raw, option, value), option)
    }

    /// Sets a list option. The caller keeps `list` alive until the transfer is done.
    public func set(_ option: CURLoption, list: CurlStringList) throws(TransportError) {
        try check(herald_curl_easy_setopt_slist(raw, option, list.raw), option)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(TransportError) {
        guard code == CURLE_OK else {
            throw TransportError(curlCode: code, message: "setting option \(option.rawValue): "
                                 + String(cString: curl_easy_strerror(code)))
        }
    }

    // MARK: Information after a transfer

    /// A `long` item of `curl_easy_getinfo`, or nil.
    public func info(long item: CURLINFO) -> Int? {
        var value = 0
        return herald_curl_easy_getinfo_long(raw, item, &value) == CURLE_OK ? value : nil
    }

    /// A `double` item of `curl_easy_getinfo`, or nil.
    public func info(double item: CURLINFO) -> Double? {
        var value = 0.0
        return herald_curl_easy_getinfo_double(raw, item, &value) == CURLE_OK ? value : nil
    }

    /// A `curl_off_t` item of `curl_easy_getinfo` (the `_T` sizes), or nil.
    public func info(offset item: CURLINFO) -> Int64? {
        var value: curl_off_t = 0
        return herald_curl_easy_getinfo_off_t(raw, item, &value) == CURLE_OK ? Int64(value) : nil
    }

    /// A `char *` item of `curl_easy_getinfo`, or nil.
    public func info(string item: CURLINFO) -> String? {
        var value: UnsafeMutableRawPointer?
        guard herald_curl_easy_getinfo_pointer(raw, item, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value.assumingMemoryBound(to: CChar.self))
    }
}
