import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket bound to a loopback port the kernel picked, and not listening.
///
///     let socket = try LoopbackSocket()   // socket.port: nothing listens there, nobody else gets it
///     socket.close()                      // the port is free for a server to take
public final class LoopbackSocket: @unchecked Sendable {  // `fd` is only closed once, by its owner
    public let port: Int
    private var fd: Int32

    public init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackSocketError(what: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = self.fd
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            Glibc.close(fd)
            throw LoopbackSocketError(what: "bind", code: code)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    deinit { close() }
}

public struct LoopbackSocketError: Error, CustomStringConvertible {
    public let what: String
    public let code: Int32
    public var description: String { "\(what) failed on loopback: errno \(code)" }
}

/// A loopback TCP port where a connection is refused, for as long as the test process lives.
///
///     let url = "https://localhost:\(RefusingPort.port)"   // connect → ECONNREFUSED
///
/// The port is bound but never listened on, so the kernel answers a connection with a reset, and no
/// other test's server can be handed the same port (as could happen with a server started and shut
/// down: under a parallel test run its port may be taken again before the test connects).
public enum RefusingPort {
    private static let socket: LoopbackSocket = {
        do { return try LoopbackSocket() } catch { fatalError("no loopback port for the tests: \(error)") }
    }()

    public static var port: Int { socket.port }
}

/// A loopback port as a client sees it.
///
///     while !LoopbackPort.accepts(port) { usleep(20_000) }   // the server started as a process is ready
public enum LoopbackPort {
    /// Whether something accepts TCP connections on loopback `port`.
    public static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
