import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP port where a connection is refused, for as long as the test process lives.
///
///     let url = "https://localhost:\(RefusingPort.port)"   // connect → ECONNREFUSED
///
/// The port is bound but never listened on, so the kernel answers a connection with a reset, and no
/// other test's server can be handed the same port (as could happen with a server started and shut
/// down: under a parallel test run its port may be taken again before the test connects).
public enum RefusingPort {
    public static let port: Int = {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket: \(errno)")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        precondition(bound, "bind: \(errno)")
        return Int(UInt16(bigEndian: address.sin_port))
    }()
}
