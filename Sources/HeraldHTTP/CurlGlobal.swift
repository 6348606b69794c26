import CCurl

/// libcurl's process-wide initialisation (`curl_global_init`), run exactly once, thread-safely,
/// before the first handle is made:
///
///     _ = CurlGlobal.initialized
enum CurlGlobal {
    /// Whether `curl_global_init` succeeded. A Swift global `let` is initialised once, under a lock.
    static let initialized: Bool = herald_curl_global_init_default() == CURLE_OK
}
