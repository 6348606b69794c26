import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-terminal, so a test can give a child process a terminal as an operator's shell would,
/// without `script` or any other program. Hand `follower` to the child (as its stderr, say), then
/// `readAll()` what it wrote once it has exited.
///
///     let terminal = try PseudoTerminal()
///     let p = try HeraldBinary.start(["run", "--drain"], env: env, stderr: terminal.follower)
///     p.waitUntilExit()
///     let text = terminal.readAll()
final class PseudoTerminal: @unchecked Sendable {  // `received` is behind `lock`
    /// The terminal side a child writes to; `isatty` is true for it.
    let follower: FileHandle
    private let leader: Int32
    private let reader = DispatchGroup()
    private let lock = NSLock()
    private var received: [UInt8] = []

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init() throws {
        // glibc declares posix_openpt, grantpt, unlockpt and ptsname only for XSI sources, which the
        // Glibc module is not; they are plain libc functions, found by name.
        typealias FDCall = @convention(c) (Int32) -> Int32
        typealias NameCall = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?
        func libc<T>(_ symbol: String, as: T.Type) throws -> T {
            guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) else {
                throw Failure(description: "libc has no \(symbol)")
            }
            return unsafeBitCast(address, to: T.self)
        }
        let openpt = try libc("posix_openpt", as: FDCall.self)
        let grantpt = try libc("grantpt", as: FDCall.self)
        let unlockpt = try libc("unlockpt", as: FDCall.self)
        let ptsname = try libc("ptsname", as: NameCall.self)

        leader = openpt(O_RDWR | O_NOCTTY)
        guard leader >= 0, grantpt(leader) == 0, unlockpt(leader) == 0, let name = ptsname(leader) else {
            throw Failure(description: "no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let fd = open(name, O_RDWR | O_NOCTTY)
        guard fd >= 0 else { throw Failure(description: "cannot open \(String(cString: name))") }
        follower = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        // Read while the child writes: a terminal's buffer is small, and a full one would block it.
        reader.enter()
        Thread { [leader, lock, reader] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(leader, &buffer, buffer.count)
                if n > 0 {
                    lock.withLock { self.received += buffer[0..<n] }
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    break  // EIO once no process holds the follower side open
                }
            }
            reader.leave()
        }.start()
    }

    /// Everything written to the terminal; call it after the child has exited.
    func readAll() -> String {
        try? follower.close()
        reader.wait()
        return lock.withLock { String(decoding: received, as: UTF8.self) }
    }

    deinit {
        close(leader)
    }
}
