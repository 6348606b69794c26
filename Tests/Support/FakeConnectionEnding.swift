import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix

/// How a fake server ends its connections: the ways real servers and networks end them under a client.
///
///     // An APNs that drops each connection on its 500th request, answering nothing still in flight.
///     let server = try FakeHTTPServer(tls: certificates, ending: .abort(afterRequests: 500)) { … }
public enum ConnectionEnding: Sendable, Equatable {
    /// On the Nth request of a connection, closes it at once (TCP FIN): that request and every one still
    /// in flight are never answered, though the server may have acted on them. Any dropped connection;
    /// nginx's `keepalive_requests` in its harsh form.
    case abort(afterRequests: Int)
    /// The same, with a TCP reset (RST) instead of a close.
    case reset(afterRequests: Int)
    /// HTTP/2: on the Nth request, a graceful GOAWAY naming the highest stream id; streams that begin
    /// after it are refused (RST_STREAM REFUSED_STREAM, never handed to the handler); once the streams
    /// it processes are answered, a final GOAWAY naming the last of them, and the connection closes a
    /// lingering moment later. What Google's front ends and nginx do when a connection has lived long
    /// enough.
    case goAway(afterRequests: Int)
    /// HTTP/2: refuses every Nth stream of a connection (RST_STREAM REFUSED_STREAM) before processing it,
    /// as a server shedding load does; the connection lives on.
    case refuseEvery(Int)
    /// Answers the Nth request, then closes the connection with no warning (no `Connection: close`, no
    /// GOAWAY): an HTTP/1.1 server whose keep-alive ends as the client may already be reusing it.
    case closeAfterResponse(afterRequests: Int)

    var requests: Int {
        switch self {
        case .abort(let n), .reset(let n), .goAway(let n), .closeAfterResponse(let n), .refuseEvery(let n): max(1, n)
        }
    }
}

/// One connection's count of requests and whether it is ending; shared by its HTTP/2 streams (which run
/// on the connection's event loop) or its one HTTP/1.1 handler.
final class ConnectionLife: @unchecked Sendable {
    let ending: ConnectionEnding?
    private(set) var requests = 0
    /// After a GOAWAY: streams that begin are refused.
    private(set) var goingAway = false
    /// The last stream the final GOAWAY names: every stream that began before the first GOAWAY.
    private var lastStream: Int?
    /// HTTP/2 streams whose request began and that are not yet answered.
    private var open: Set<Int> = []
    /// The highest stream whose request began before the first GOAWAY.
    private var highestBegun = 0

    init(ending: ConnectionEnding?) {
        self.ending = ending
    }

    /// What to do with a request that has fully arrived.
    enum Verdict: Equatable {
        /// Hand it to the handler and answer it.
        case process
        /// Hand it to the handler, answer it, then close the connection.
        case processThenClose
        /// Hand it to the handler and never answer: the connection ends now.
        case processThenEnd(reset: Bool)
        /// Hand it to the handler, answer it, and begin a graceful GOAWAY.
        case processAndGoAway
    }

    /// Streams that began on this connection.
    private var begun = 0

    /// An HTTP/2 request's headers arrived on `stream`. False: refuse it (REFUSED_STREAM), unprocessed.
    func began(stream: Int) -> Bool {
        if goingAway { return false }
        begun += 1
        if case .refuseEvery(let n) = ending, begun % max(1, n) == 0 { return false }
        open.insert(stream)
        highestBegun = max(highestBegun, stream)
        return true
    }

    /// The request on a stream that was not refused (or over HTTP/1.1) has fully arrived.
    func arrived(http2: Bool) -> Verdict {
        requests += 1
        guard let ending, requests >= ending.requests else { return .process }
        switch ending {
        case .abort: return .processThenEnd(reset: false)
        case .reset: return .processThenEnd(reset: true)
        case .closeAfterResponse: return .processThenClose
        case .refuseEvery: return .process
        case .goAway:
            guard http2 else { return .processThenClose }
            guard !goingAway else { return .process }
            goingAway = true
            return .processAndGoAway
        }
    }

    /// The last stream the final GOAWAY names, fixed when the first is sent.
    func finalLastStream() -> Int {
        if lastStream == nil { lastStream = highestBegun }
        return lastStream!
    }

    /// The request on `stream` was answered. True when the connection should now close: a GOAWAY was
    /// sent and every stream that began before it is answered.
    func answered(stream: Int?) -> Bool {
        if let stream { open.remove(stream) }
        return goingAway && open.isEmpty
    }

    /// Closes `connection` at once; with `reset`, as a TCP reset (SO_LINGER 0).
    static func end(_ connection: any Channel, reset: Bool) {
        if reset, let socket = connection as? any SocketOptionProvider {
            socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in connection.close(promise: nil) }
        } else {
            connection.close(promise: nil)
        }
    }

    /// A graceful GOAWAY, as RFC 9113 §6.8 has it: first one naming the highest possible stream (no new
    /// streams, nothing dropped; streams still on their way are refused as they begin), and, once the
    /// streams processed are answered, one naming the last of them (`finish`).
    func goAway(_ connection: any Channel) {
        _ = finalLastStream()
        Self.goAway(connection, lastStream: Int(Int32.max))
    }

    /// How long a connection that went away stays open after its final GOAWAY, reading what the client
    /// still sends, before it closes (unless the client closes it first): as a front end's lingering
    /// close does, so that the client learns which streams were processed before the connection ends.
    static let lingering = TimeAmount.seconds(2)

    /// Whether the final GOAWAY was sent.
    private var finished = false

    /// Every stream that began before the first GOAWAY is answered: names the last of them in the
    /// final GOAWAY at once (streams beyond it were never processed), and closes the connection after
    /// `lingering`. Only the first call does anything.
    func finish(_ connection: any Channel) {
        guard !finished else { return }
        finished = true
        Self.goAway(connection, lastStream: finalLastStream())
        connection.eventLoop.scheduleTask(in: Self.lingering) { connection.close(promise: nil) }
    }

    static func goAway(_ connection: any Channel, lastStream: Int) {
        let frame = HTTP2Frame(streamID: .rootStream,
                               payload: .goAway(lastStreamID: HTTP2StreamID(lastStream), errorCode: .noError, opaqueData: nil))
        connection.writeAndFlush(frame, promise: nil)
    }
}
