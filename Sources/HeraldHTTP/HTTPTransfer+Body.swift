import CCurl

/// A request body that libcurl reads through callbacks and may not send twice on its own.
///
/// libcurl sends a request again by itself, on a fresh connection, when a reused connection ended with
/// no byte of the answer back — though the server may have processed it ("Connection died, retrying a
/// fresh connect"). To do so it first rewinds the body. The body refuses that rewind, so the transfer
/// fails instead (CURLE_SEND_FAIL_REWIND) and comes back as a lost answer: the caller decides whether
/// it goes again, charged and counted, never as a copy no one sees.
///
///     let body = UploadBody(request.body)
///     try body.attach(to: easy, context: transferPointer)   // libcurl reads it, never rewinds it
final class UploadBody {
    let bytes: [UInt8]
    /// How far libcurl has read.
    private(set) var offset = 0
    /// Whether libcurl asked to read the body again after reading some of it.
    private(set) var refusedRewind = false
    /// Whether a rewind is allowed (``HTTPRequest/replayable``).
    private let replayable: Bool

    init(_ bytes: [UInt8], replayable: Bool = false) {
        self.bytes = bytes
        self.replayable = replayable
    }

    var count: Int { bytes.count }
    /// Whether libcurl read the whole body (handed it to the connection).
    var wholeRead: Bool { offset == bytes.count }

    /// Copies up to `capacity` bytes from where libcurl left off into `buffer`; 0 at the end.
    func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let length = min(capacity, bytes.count - offset)
        guard length > 0 else { return 0 }
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + offset, byteCount: length) }
        offset += length
        return length
    }

    /// libcurl asks to go back to `position` (only ever the start): allowed while nothing was read, or
    /// for a replayable request.
    func seek(to position: Int64) -> Int32 {
        if replayable, position == 0 {
            offset = 0
            return Int32(CURL_SEEKFUNC_OK)
        }
        guard position == 0, offset == 0 else {
            refusedRewind = true
            return Int32(CURL_SEEKFUNC_FAIL)
        }
        return Int32(CURL_SEEKFUNC_OK)
    }
}

extension HTTPTransfer {
    /// Has libcurl read `body` through the read callback, refusing any rewind (``UploadBody``).
    func attach(_ body: UploadBody) throws(TransportError) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_READDATA, pointer: me)
        try easy.set(CURLOPT_SEEKDATA, pointer: me)
        _ = herald_curl_easy_setopt_read_callback(easy.raw) { buffer, size, count, context in
            guard let buffer, let context else { return 0 }
            let transfer = Unmanaged<HTTPTransfer>.fromOpaque(context).takeUnretainedValue()
            return transfer.upload.read(into: buffer, capacity: size * count)
        }
        let code = herald_curl_easy_setopt_seek_callback(easy.raw) { context, offset, _ in
            guard let context else { return Int32(CURL_SEEKFUNC_FAIL) }
            return Unmanaged<HTTPTransfer>.fromOpaque(context).takeUnretainedValue().upload.seek(to: Int64(offset))
        }
        guard code == CURLE_OK else { throw TransportError(curlCode: code, message: "setting the seek callback") }
    }
}
