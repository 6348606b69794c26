import CCurl
@testable import HeraldHTTP
import HeraldTestSupport
import Testing

/// When libcurl fails a transfer whose answer nevertheless arrived whole: only a stream libcurl closed
/// cleanly (CURLE_HTTP2_STREAM with nothing in its error buffer), after a final status whose header block
/// ended, with the body as long as its content-length says (or none given).
@Suite struct ReceivedAnswerTests {
    static let whole = ReceivedAnswer(status: 200, headersEnded: true, contentLength: 27, bodyBytes: 27)

    /// The complete answers: with the content-length reached, with none given, an empty one, and a HEAD's
    /// or a 204's whose content-length describes no body.
    @Test(arguments: [
        whole,
        ReceivedAnswer(status: 200, headersEnded: true, contentLength: nil, bodyBytes: 0),
        ReceivedAnswer(status: 400, headersEnded: true, contentLength: nil, bodyBytes: 27),
        ReceivedAnswer(status: 200, headersEnded: true, contentLength: 0, bodyBytes: 0),
        ReceivedAnswer(status: 200, headersEnded: true, contentLength: 512, bodyBytes: 0, bodyExpected: false),
        ReceivedAnswer(status: 204, headersEnded: true, contentLength: 5, bodyBytes: 0),
    ])
    func aCleanlyClosedStreamWithTheWholeAnswerIsAnswered(_ received: ReceivedAnswer) {
        #expect(received.isComplete(despite: CURLE_HTTP2_STREAM, message: ""))
    }

    /// Not complete: no status, an interim one, a header block that never ended, a body short of (or
    /// beyond) its content-length.
    @Test(arguments: [
        ReceivedAnswer(status: 0, headersEnded: false, contentLength: nil, bodyBytes: 0),
        ReceivedAnswer(status: 103, headersEnded: true, contentLength: nil, bodyBytes: 0),
        ReceivedAnswer(status: 200, headersEnded: false, contentLength: nil, bodyBytes: 0),
        ReceivedAnswer(status: 200, headersEnded: true, contentLength: 1000, bodyBytes: 10),
        ReceivedAnswer(status: 200, headersEnded: true, contentLength: 10, bodyBytes: 11),
    ])
    func anAnswerCutShortIsNot(_ received: ReceivedAnswer) {
        #expect(!received.isComplete(despite: CURLE_HTTP2_STREAM, message: ""))
    }

    /// libcurl's reason in the error buffer is a stream that did not close cleanly, whatever arrived; and
    /// any other code is not this case at all.
    @Test func aResetWithAnErrorCodeOrAnyOtherFailureIsNot() {
        for message in ["HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR (err 2)",
                        "HTTP/2 stream 3 was not closed cleanly: CANCEL (err 8)",
                        "HTTP/2 stream 5 was closed cleanly, but before getting  all response header fields, treated as error",
                        "HTTP/2 stream 7 was not closed cleanly before end of the underlying stream"] {
            #expect(!Self.whole.isComplete(despite: CURLE_HTTP2_STREAM, message: message))
        }
        for code in [CURLE_HTTP2, CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING,
                     CURLE_OPERATION_TIMEDOUT, CURLE_WRITE_ERROR] {
            #expect(!Self.whole.isComplete(despite: code, message: ""))
        }
    }

    /// A content-length is digits only; anything else (a sign, spaces, a list, a number too large) is none.
    @Test func aContentLengthIsDigitsOnly() {
        #expect(ReceivedAnswer.length("0") == 0)
        #expect(ReceivedAnswer.length("4096") == 4096)
        for value in [nil, "", "-1", "+5", " 5", "5,5", "0x10", "99999999999999999999", "５"] as [String?] {
            #expect(ReceivedAnswer.length(value) == nil, "\(value ?? "nil")")
        }
    }

    /// Any status, sizes and messages: never a trap, and complete only with the code and an empty buffer.
    @Test func anyReceivedAnswerClassifiesWithoutTrapping() {
        var rng = Fuzz(seed: 35)
        for _ in 0..<Fuzz.iterations {
            let received = ReceivedAnswer(status: Int(truncatingIfNeeded: rng.next()) >> (rng.next() % 64),
                                          headersEnded: rng.next() % 2 == 0,
                                          contentLength: rng.next() % 3 == 0 ? nil : Int64(bitPattern: rng.next()) >> (rng.next() % 64),
                                          bodyBytes: Int64(bitPattern: rng.next()) >> (rng.next() % 64),
                                          bodyExpected: rng.next() % 4 != 0)
            let code = CURLcode(rawValue: UInt32(rng.next() % 100))
            let message = rng.next() % 2 == 0 ? "" : "x"
            if received.isComplete(despite: code, message: message) {
                #expect(code == CURLE_HTTP2_STREAM && message.isEmpty && received.status >= 200 && received.headersEnded)
            }
        }
    }
}
