import CCurl
import Foundation
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
    /// The transport's number for the request's host (its connection-slot accounting).
    var host = 0
    private var headerList: CurlStringList?
    private(set) var responseHeaders: [(String, String)] = []
    private(set) var responseBody: [UInt8] = []
    private var maxResponseBytes = Int.max
    /// The request body (an HTTP body or a mail), read by libcurl through the read callback.
    private(set) var upload = UploadBody([])
    /// The request body's size, to tell whether it all left when the connection ended.
    private var bodyBytes = 0
    /// Response body bytes received, all of them (`responseBody` keeps at most `maxResponseBytes`).
    private var receivedBodyBytes: Int64 = 0
    /// Whether the last response's header block ended (its blank line arrived).
    private var headersEnded = false
    /// False for a HEAD request: no body comes, whatever its content-length says.
    private var bodyExpected = true

    init(index: Int, easy: CurlEasyHandle) {
        self.index = index
        self.easy = easy
    }

    /// Trusts the CAs of the bundle file at `path` alone, when there is one: with no CA directory beside
    /// it, libcurl keeps the parsed store in the multi handle (CURLOPT_CA_CACHE_TIMEOUT) instead of
    /// parsing the whole bundle again for every new connection — about 37 ms each, which stalled a
    /// pass opening 64 connections at once for 2.4 s.
    private func trust(_ path: String?) throws(TransportError) {
        guard let path else { return }
        try easy.set(CURLOPT_CAINFO, path)
        try easy.set(CURLOPT_CAPATH, pointer: nil)
    }

    /// Resets the handle and sets every option for `request`.
    func configure(_ request: HTTPRequest, options: TransportOptions, caBundle: String?) throws(TransportError) {
        if let mail = request.mail {
            try configureMail(request, mail, options: options, caBundle: caBundle)
            return
        }
        easy.reset()
        bodyBytes = request.body.count
        bodyExpected = request.method.uppercased() != "HEAD"
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
        try enableDebugLog(options)
        try easy.set(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
        try easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout))
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(min(options.connectTimeout, request.timeout)))
        try easy.set(CURLOPT_USERAGENT, options.userAgent)
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        maxResponseBytes = max(0, options.maxResponseBytes)
        try trust(caBundle)

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
            transfer.receivedBodyBytes += Int64(length)
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

    // MARK: SMTP

    /// The envelope when this transfer is a mail, else nil.
    private var mail: MailEnvelope?
    /// The server's last reply lines (through the header callback, which receives SMTP replies; the last
    /// may be the 221 to the QUIT libcurl sends when it closes a failed connection).
    private var replies = SMTPReplies()

    /// Resets the handle and sets the options for sending `request.body` over SMTP.
    private func configureMail(_ request: HTTPRequest, _ mail: MailEnvelope, options: TransportOptions,
                               caBundle: String?) throws(TransportError) {
        easy.reset()
        self.mail = mail
        upload = UploadBody(request.body)
        replies = SMTPReplies()
        let scheme = request.url.prefix(while: { $0 != ":" }).lowercased()
        guard scheme == "smtp" || scheme == "smtps" else {
            throw .other(code: Int(CURLE_UNSUPPORTED_PROTOCOL.rawValue),
                         message: "a mail needs an smtp:// or smtps:// URL, not \(scheme)://")
        }
        // libcurl writes addresses into MAIL FROM / RCPT TO lines as given: refuse anything that could
        // end the line or the address.
        for address in [mail.from] + mail.recipients {
            guard !address.isEmpty, !address.contains(where: { $0.isNewline || $0.isWhitespace || $0 == "<" || $0 == ">" })
            else {
                throw .other(code: Int(CURLE_BAD_FUNCTION_ARGUMENT.rawValue),
                             message: "invalid mail address \(address.debugDescription)")
            }
        }
        guard !mail.recipients.isEmpty else {
            throw .other(code: Int(CURLE_BAD_FUNCTION_ARGUMENT.rawValue), message: "a mail needs a recipient")
        }

        try easy.set(CURLOPT_URL, request.url)
        try easy.set(CURLOPT_PROTOCOLS_STR, "smtp,smtps")
        try easy.set(CURLOPT_NOSIGNAL, 1)
        try enableDebugLog(options)
        try easy.set(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
        try easy.set(CURLOPT_USE_SSL, Int((mail.requireTLS ? CURLUSESSL_ALL : CURLUSESSL_TRY).rawValue))
        try easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout))
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(min(options.connectTimeout, request.timeout)))
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        try trust(caBundle)

        try easy.set(CURLOPT_MAIL_FROM, "<\(mail.from)>")
        let recipients = try CurlStringList(mail.recipients.map { "<\($0)>" })
        headerList = recipients
        try easy.set(CURLOPT_MAIL_RCPT, list: recipients)
        try easy.set(CURLOPT_UPLOAD, 1)
        try easy.set(CURLOPT_INFILESIZE_LARGE, offset: Int64(upload.count))

        try attach(upload)
        let me = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_HEADERDATA, pointer: me)
        // libcurl hands every SMTP reply line to the header callback.
        _ = herald_curl_easy_setopt_header_callback(easy.raw) { data, size, count, context in
            let length = size * count
            guard let data, let context, length > 0 else { return length }
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(context).takeUnretainedValue()
            transfer.replies.append(bytes: UnsafeRawBufferPointer(start: data, count: length))
            return length
        }
    }

    /// The outcome of a mail transfer.
    private func mailResult(_ code: CURLcode) -> Result<HTTPResponse, TransportError> {
        let reply = easy.info(long: CURLINFO_RESPONSE_CODE) ?? 0
        guard code == CURLE_OK else {
            return .failure(Self.mailFailure(code: code, curlMessage: easy.errorMessage, reply: reply, replies: replies,
                                             messageSent: upload.count > 0 && upload.wholeRead))
        }
        var headers: [(String, String)] = []
        if let id = Self.messageID(in: upload.bytes) { headers.append(("message-id", id)) }
        if let text = replies.text(of: reply) { headers.append(("smtp-reply", text)) }
        return .success(HTTPResponse(status: reply, headers: headers, body: [], httpVersion: 0,
                                     seconds: easy.info(double: CURLINFO_TOTAL_TIME) ?? 0))
    }

    /// The Message-ID header field's value in a message's header section, or nil.
    static func messageID(in message: [UInt8]) -> String? {
        var lineStart = 0
        while lineStart < message.count {
            let lineEnd = message[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? message.count
            var line = message[lineStart..<lineEnd]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.isEmpty { return nil }   // end of the header section
            let text = String(decoding: line, as: UTF8.self)
            if text.lowercased().hasPrefix("message-id:") {
                let value = text.dropFirst("message-id:".count).trimmingCharacters(in: .whitespaces)
                return value.isEmpty ? nil : value
            }
            lineStart = lineEnd + 1
        }
        return nil
    }

    private func configureMethodAndBody(_ request: HTTPRequest) throws(TransportError) {
        let method = request.method.uppercased()
        switch method {
        case "GET" where request.body.isEmpty:
            try easy.set(CURLOPT_HTTPGET, 1)
        case "HEAD":
            try easy.set(CURLOPT_NOBODY, 1)
        case _ where !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(method):
            try easy.set(CURLOPT_POST, 1)
            try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(request.body.count))
            upload = UploadBody(request.body, replayable: request.replayable)
            try attach(upload)
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
            headersEnded = false
            return
        }
        if line.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            headersEnded = true
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

    /// What this transfer received of its answer.
    var received: ReceivedAnswer {
        ReceivedAnswer(status: easy.info(long: CURLINFO_RESPONSE_CODE) ?? 0, headersEnded: headersEnded,
                       contentLength: ReceivedAnswer.length(responseHeaders.first { $0.0 == "content-length" }?.1),
                       bodyBytes: receivedBodyBytes, bodyExpected: bodyExpected)
    }

    /// The outcome, once libcurl reports the transfer done with `code`. A complete answer is the answer,
    /// even when the server ended the stream before taking the whole body (``ReceivedAnswer``).
    func result(_ code: CURLcode) -> Result<HTTPResponse, TransportError> {
        if mail != nil { return mailResult(code) }
        let message = easy.errorMessage
        if code == CURLE_SEND_FAIL_REWIND, upload.refusedRewind {
            // libcurl would have sent the request again by itself: its answer was lost (UploadBody).
            return .failure(.connectionEnded(requestSent: upload.wholeRead,
                                             message: "its connection ended before any of the answer came back"))
        }
        guard code == CURLE_OK || received.isComplete(despite: code, message: message) else {
            return .failure(TransportError(curlCode: code, message: ReceivedAnswer.explained(code, message),
                                           uploadedBytes: uploadedBytes,
                                           bodyBytes: bodyBytes))
        }
        return .success(HTTPResponse(
            status: easy.info(long: CURLINFO_RESPONSE_CODE) ?? 0,
            headers: responseHeaders,
            body: responseBody,
            httpVersion: HTTPVersion.number(fromCurlInfo: easy.info(long: CURLINFO_HTTP_VERSION) ?? 0),
            seconds: easy.info(double: CURLINFO_TOTAL_TIME) ?? 0))
    }

    /// How much of the body libcurl took. Its own count starts again at 0 when it begins to send the
    /// request again by itself, so the body's own count (which never goes back) is taken too.
    private var uploadedBytes: Int64 {
        max(easy.info(offset: CURLINFO_SIZE_UPLOAD_T) ?? 0, Int64(upload.offset))
    }

    /// This transfer's end when its connection was found dead under it: sent, when its whole body was
    /// handed over (its fate unknown), else not.
    func connectionEnded() -> TransportError {
        .connectionEnded(requestSent: bodyBytes == 0 || uploadedBytes >= Int64(bodyBytes),
                         message: "its connection ended under another request")
    }

    // MARK: Debug output

    /// This transfer's description, when `options.debugOutput` asks for one (HERALD_CURL_VERBOSE=1).
    private var debugLog: CurlDebugLog?

    /// libcurl's verbose description of the transfer, through a debug callback that masks credentials
    /// and drops body data (never CURLOPT_VERBOSE's own output, which prints `Authorization` and
    /// `AUTH PLAIN` lines as sent).
    private func enableDebugLog(_ options: TransportOptions) throws(TransportError) {
        guard let output = options.debugOutput else {
            debugLog = nil
            return
        }
        debugLog = CurlDebugLog(output: output, label: "curl #\(index)")
        try easy.set(CURLOPT_DEBUGDATA, pointer: Unmanaged.passUnretained(self).toOpaque())
        let code = herald_curl_easy_setopt_debug_callback(easy.raw) { _, type, data, size, context in
            guard let data, let context, size > 0 else { return 0 }
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(context).takeUnretainedValue()
            transfer.debugLog?.received(type, data, size)
            return 0
        }
        guard code == CURLE_OK else { throw TransportError(curlCode: code, message: "setting the debug callback") }
        try easy.set(CURLOPT_VERBOSE, 1)
    }

    /// A timeout in whole milliseconds, at least 1 and at most `Int32.max` (about 24 days), so that no
    /// value traps.
    private static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 1 }
        return max(1, Int(min((seconds * 1000).rounded(.up), Double(Int32.max))))
    }
}
