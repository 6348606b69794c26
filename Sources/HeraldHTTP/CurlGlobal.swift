import CCurl

/// libcurl's process-wide initialisation (`curl_global_init`), run exactly once, thread-safely,
/// before the first handle is made:
///
///     _ = CurlGlobal.initialized
enum CurlGlobal {
    /// Whether `curl_global_init` succeeded. A Swift global `let` is initialised once, under a lock.
    static let initialized: Bool = herald_curl_global_init_default() == CURLE_OK

    /// The running libcurl's version, e.g. "7.88.1".
    static let version = String(cString: herald_curl_version_string())

    /// libcurl before 7.89.0 fails a reused h2c (prior knowledge) connection with "Error in the HTTP2
    /// framing layer" (curl/curl#10634, fixed by #10643), so such transfers must each use a new connection.
    static let h2cReuseIsBroken = herald_curl_version_num() < 0x07_59_00
}
