import CCurl
import HeraldHTTP
import Testing

/// How libcurl result codes map to `TransportError`.
extension HTTPSuite {
@Suite struct TransportErrorTests {
    @Test func classifiesCurlCodes() {
        #expect(TransportError(curlCode: CURLE_OPERATION_TIMEDOUT, message: "x") == .timeout)
        #expect(TransportError(curlCode: CURLE_COULDNT_CONNECT, message: "x") == .connectionRefused)
        #expect(TransportError(curlCode: CURLE_COULDNT_RESOLVE_HOST, message: "x") == .couldNotResolve)
        #expect(TransportError(curlCode: CURLE_PEER_FAILED_VERIFICATION, message: "bad cert") == .tls("bad cert"))
        #expect(TransportError(curlCode: CURLE_SSL_CONNECT_ERROR, message: "handshake") == .tls("handshake"))
        #expect(TransportError(curlCode: CURLE_SSL_CACERT_BADFILE, message: "ca") == .tls("ca"))
        #expect(TransportError(curlCode: CURLE_GOT_NOTHING, message: "empty reply")
                == .other(code: Int(CURLE_GOT_NOTHING.rawValue), message: "empty reply"))
    }

    @Test func fallsBackToLibcurlsMessage() {
        guard case .other(let code, let message) = TransportError(curlCode: CURLE_RECV_ERROR, message: "") else {
            Issue.record("expected .other")
            return
        }
        #expect(code == 56)
        #expect(!message.isEmpty)
    }
}
}
