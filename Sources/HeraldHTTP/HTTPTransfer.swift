import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One HTTP request in flight on an easy handle: configures the handle from an ``HTTPRequest`` and
/// collects the response through libcurl's callbacks, which receive this object as an unretained
/// pointer. The owner keeps it alive until the handle has left the multi handle.
///
///     let transfer = HTTPTransfer(index: 0, easy: easy)
///     try transfer.configure(request, options: options, caBundle: nil)
///     try multi.add(easy)   // … when done: transfer.result(code)
final class HTTPTransfer {
    let index: Int
    let easy: CurlEasyHandle
    private var headerList: CurlStringList?
    private(set) var responseHeaders: [(String, String)] = []
    private(set) var responseBody: [UInt8] = []
    private var maxResponseBytes = Int.max

    init(index: Int, easy: CurlEasyHandle) {
        self.index = index
        self.easy = easy
    }

    /// Resets the handle and sets every option for `request`.
    func configure(_ request: HTTPRequest, options: TransportOptions, caBundle: String?) throws(TransportError) {
        easy.reset()
        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try easy.set(CURLOPT_FOLLOWLOCATION, 0)
        try easy.set(CURLOPT_HTTP_VERSION, request.version.curlValue)
        // Wait for an HTTP/2 connection being set up rather than open another one. Only where HTTP/2 is
        // possible: for cleartext HTTP/1.1, libcurl would hold requests until the first response arrives.
        if request.version.mayMultiplex(url: request.url) { try easy.set(CURLOPT_PIPEWAIT, 1) }
        if request.version == .http2PriorKnowledge, CurlGlobal.h2cReuseIsBroken {
            try easy.set(CURLOPT_FRESH_CONNECT, 1)
            try easy.set(CURLOPT_FORBID_REUSE, 1)
        }
        if Self.verbose { try easy.set(CURLOPT_VERBOSE, 1) }
        try easy.set(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
        try easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout))
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(min(options.connectTimeout, request.timeout)))
        try easy.set(CURLOPT_USERAGENT, options.userAgent)
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        maxResponseBytes = max(0, options.maxResponseBytes)
        if let caBundle { try easy.set(CURLOPT_CAINFO, caBundle) }

        try configureMethodAndBody(request)

        let headers = try CurlStringList()
        for (name, value) in request.headers {
            // libcurl sends header lines as given: a CR or LF would let a value inject header lines.
            guard !name.isEmpty, !name.contains(where: { $0 == ":" || $0.isNewline || $0 == " " }),
                  !value.contains(where: \.isNewline) else {
                throw .other(code: Int(CURLE_BAD_FUNCTION_ARGUMENT.rawValue),
                             message: "invalid header field \(name.debugDescription)")
            }
            // "Name:" would remove a header; "Name;" sends it with an empty value.
            try headers.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        if !request.headers.contains(where: { $0.0.lowercased() == "expect" }) {
            try headers.append("Expect:")   // no 100-continue round trip
        }
        headerList = headers
        try easy.set(CURLOPT_HTTPHEADER, list: headers)

        let me = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_WRITEDATA, pointer: me)
        try easy.set(CURLOPT_HEADERDATA, pointer: me)
        _ = herald_curl_easy_setopt_write_callback(easy.raw) { data, size, count, context in
            let length = size * count
            guard let data, let context, length > 0 else { return length }
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(context).takeUnretainedValue()
            let room = transfer.maxResponseBytes - transfer.responseBody.count
            if room > 0 {
                transfer.responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: min(length, room)))
            }
            return length
        }
        _ = herald_curl_easy_setopt_header_callback(easy.raw) { data, size, count, context in
            let length = size * count
            guard let data, let context, length > 0 else { return length }
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(context).takeUnretainedValue()
            transfer.receivedHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
            return length
        }
    }

    private func configureMethodAndBody(_ request: HTTPRequest) throws(TransportError) {
        let method = request.method.uppercased()
        switch method {
        case "GET" where request.body.isEmpty:
            try easy.set(CURLOPT_HTTPGET, 1)
        case "HEAD":
            try easy.set(CURLOPT_NOBODY, 1)
        case _ where !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(method):
            // libcurl copies the body, so nothing must outlive this call.
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(request.body.count))
            if request.body.isEmpty {
                try easy.set(CURLOPT_COPYPOSTFIELDS, "")
            } else {
                var body = request.body
                let code = body.withUnsafeMutableBytes { bytes in
                    herald_curl_easy_setopt_pointer(easy.raw, CURLOPT_COPYPOSTFIELDS, bytes.baseAddress)
                }
                guard code == CURLE_OK else {
                    throw TransportError(curlCode: code, message: "copying the request body")
                }
            }
            if method != "POST" { try easy.set(CURLOPT_CUSTOMREQUEST, request.method) }
        default:
            try easy.set(CURLOPT_CUSTOMREQUEST, request.method)
        }
    }

    /// One header line (status line, field, or the blank line ending a header block). A status line
    /// starts a new response (after a 1xx or a proxy's CONNECT reply), so earlier fields are dropped.
    private func receivedHeaderLine(_ line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            responseHeaders.removeAll(keepingCapacity: true)
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        var value = line[(colon + 1)...]
        while let first = value.first, isSpace(first) { value = value.dropFirst() }
        while let last = value.last, isSpace(last) { value = value.dropLast() }
        responseHeaders.append((name, String(decoding: value, as: UTF8.self)))
    }

    /// The outcome, once libcurl reports the transfer done with `code`.
    func result(_ code: CURLcode) -> Result<HTTPResponse, TransportError> {
        guard code == CURLE_OK else {
            return .failure(TransportError(curlCode: code, message: easy.errorMessage))
        }
        return .success(HTTPResponse(
            status: easy.info(long: CURLINFO_RESPONSE_CODE) ?? 0,
            headers: responseHeaders,
            body: responseBody,
            httpVersion: HTTPVersion.number(fromCurlInfo: easy.info(long: CURLINFO_HTTP_VERSION) ?? 0),
            seconds: easy.info(double: CURLINFO_TOTAL_TIME) ?? 0))
    }

    /// HERALD_CURL_VERBOSE=1 makes libcurl describe every transfer on stderr (for debugging).
    private static let verbose = getenv("HERALD_CURL_VERBOSE").map { String(cString: $0) == "1" } ?? false

    private static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 1 }
        return max(1, Int((seconds * 1000).rounded(.up)))
    }
}
