import CCurl

/// A libcurl string list (`struct curl_slist *`), e.g. request headers or SMTP recipients.
/// Owns the list and frees it exactly once, in `deinit`; keep it alive until the transfer is done.
///
///     let headers = try CurlStringList(["content-type: application/json", "Expect:"])
///     try easy.set(CURLOPT_HTTPHEADER, list: headers)
public final class CurlStringList {
    /// The `struct curl_slist *`; nil while the list is empty.
    public private(set) var raw: UnsafeMutablePointer<curl_slist>?

    public init(_ items: [String] = []) throws(TransportError) {
        for item in items { try append(item) }
    }

    deinit {
        curl_slist_free_all(raw)
    }

    /// Appends a copy of `item`.
    public func append(_ item: String) throws(TransportError) {
        guard let list = curl_slist_append(raw, item) else {
            throw .other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
        }
        raw = list
    }
}
