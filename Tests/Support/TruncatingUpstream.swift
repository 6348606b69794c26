import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on a loopback port that answers every request with `200`, `Content-Length: 1000`
/// and only the first ten bytes of that body, then closes the connection: an upstream that dies in the
/// middle of its answer. Behind a proxy (``EarlyAnsweringNginx``'s `/cut`), the client gets the status
/// and part of the body, then a reset of its stream with an error code.
///
///     let upstream = try TruncatingUpstream()
///     defer { upstream.stop() }
///     let nginx = try EarlyAnsweringNginx(certificates: certificates, upstream: upstream.port)
public final class TruncatingUpstream: @unchecked Sendable {  // `fd` is closed once, by `stop()`
    public let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    public init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackSocketError(what: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = self.fd
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0 && listen(fd, 64) == 0
            }
        }
        guard bound else {
            let code = errno
            close(fd)
            throw LoopbackSocketError(what: "bind/listen", code: code)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in serve() }.start()
    }

    private func serve() {
        defer { done.signal() }
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if lock.withLock({ stopped }) { return }
                continue
            }
            Self.answerTruncated(client)
        }
    }

    /// Reads the request's header section, writes the cut answer, closes.
    private static func answerTruncated(_ client: Int32) {
        defer { close(client) }
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.containsHeaderEnd {
            let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            request.append(contentsOf: buffer[..<n])
        }
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n0123456789".utf8)
        _ = answer.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    }

    /// Stops accepting and closes the port.
    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        shutdown(fd, Int32(SHUT_RDWR))   // wakes the blocked accept, which then sees `stopped`
        done.wait()
        close(fd)
    }

    deinit { stop() }
}

private extension Array where Element == UInt8 {
    var containsHeaderEnd: Bool {
        guard count >= 4 else { return false }
        for i in 0...(count - 4) where self[i] == 13 && self[i + 1] == 10 && self[i + 2] == 13 && self[i + 3] == 10 {
            return true
        }
        return false
    }
}
