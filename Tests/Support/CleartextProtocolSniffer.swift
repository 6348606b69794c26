import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// On a cleartext connection, waits for the first bytes: the HTTP/2 connection preface ("PRI * HTTP/2.0")
/// sets the connection up for h2c, anything else for HTTP/1.1. Then replays the bytes and leaves.
final class CleartextProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let state: FakeServerState
    private var buffered: ByteBuffer?
    private var decided = false

    init(state: FakeServerState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if decided {
            context.fireChannelRead(data)
            return
        }
        if buffered == nil { buffered = incoming } else { buffered!.writeBuffer(&incoming) }
        guard let bytes = buffered, bytes.readableBytes >= 4 else { return }
        decided = true
        let isHTTP2 = bytes.getString(at: bytes.readerIndex, length: 4) == "PRI "
        let configured = isHTTP2
            ? FakeHTTPServer.configureHTTP2(context.channel, state: state)
            : FakeHTTPServer.configureHTTP1(context.channel, state: state)
        configured.assumeIsolated().whenComplete { result in
            switch result {
            case .success:
                context.fireChannelRead(self.wrapInboundOut(bytes))
                self.buffered = nil
                context.pipeline.syncOperations.removeHandler(self, promise: nil)
            case .failure(let error):
                context.fireErrorCaught(error)
                context.close(promise: nil)
            }
        }
    }
}
