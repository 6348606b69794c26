import CCurl

/// What a transfer received of its answer: enough to tell a complete answer that libcurl reports as a
/// failed transfer.
///
///     let received = ReceivedAnswer(status: 200, headersEnded: true, contentLength: 0, bodyBytes: 0)
///     received.isComplete(despite: CURLE_HTTP2_STREAM, message: "")   // true: the answer is the answer
struct ReceivedAnswer: Equatable, Sendable {
    /// The last status received (CURLINFO_RESPONSE_CODE; 0: none).
    var status: Int
    /// Whether the header block of that status ended (its blank line arrived).
    var headersEnded: Bool
    /// The response's content-length, when it gave one that reads as a number.
    var contentLength: Int64?
    /// Body bytes received, all of them (not only those kept).
    var bodyBytes: Int64
    /// False for a HEAD request, whose content-length describes a body never sent.
    var bodyExpected = true

    /// Whether a transfer that ended with `code`, libcurl's error buffer reading `message`, was
    /// nevertheless answered in full — so that its answer is the answer, not a failed try.
    ///
    /// An HTTP/2 server may send its complete answer before it has read the whole request body, then end
    /// the stream with RST_STREAM (NO_ERROR); RFC 9113 §8.1 says the client must not treat that as an
    /// error. nginx does it whenever a location answers with `return`. libcurl 7.88 then fails the
    /// transfer with CURLE_HTTP2_STREAM as it goes on sending the body ("* stream 5 closed" in its verbose
    /// log), and writes nothing in the error buffer: lib/http2.c's `cf_h2_send` gets there only once
    /// `http2_handle_stream_close` has taken the stream's close as clean — NO_ERROR, and the final header
    /// fields received. Every other end of a stream with that code writes its reason there: a reset with
    /// an error code ("HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR (err 2)"), a clean close
    /// before the final header fields ("… was closed cleanly, but before getting all response header
    /// fields").
    ///
    /// So the answer is complete when the code is CURLE_HTTP2_STREAM with an empty error buffer, a final
    /// status arrived with its header block ended, and the body is whole: as long as its content-length
    /// says, when it gives one (nghttp2 already refuses DATA beyond it). Without a content-length, the
    /// NO_ERROR reset vouches for the body: RFC 9113 §8.1 allows it only after a complete response.
    func isComplete(despite code: CURLcode, message: String) -> Bool {
        guard code == CURLE_HTTP2_STREAM, message.isEmpty, status >= 200, headersEnded else { return false }
        guard bodyExpected, status != 204, status != 304, let contentLength else { return true }
        return bodyBytes == contentLength
    }

    /// libcurl's message for a failed transfer, or what a silent CURLE_HTTP2_STREAM means when the answer
    /// did not arrive whole: the server ended the stream cleanly while the body was still going out, and
    /// libcurl 7.88 does not always pass on the answer it had (seen with bodies beyond the stream's 64 KB
    /// flow-control window, on a shared connection). Its status is unknown, so it stays a failure.
    static func explained(_ code: CURLcode, _ message: String) -> String {
        guard code == CURLE_HTTP2_STREAM, message.isEmpty else { return message }
        return "the server closed the HTTP/2 stream (NO_ERROR) before the whole request body was sent, "
            + "and its answer did not arrive whole"
    }

    /// A content-length field's value as a length: digits only (RFC 9110 §8.6), else nil.
    static func length(_ value: String?) -> Int64? {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(value)
    }
}
