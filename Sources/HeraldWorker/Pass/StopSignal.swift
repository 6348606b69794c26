import Dispatch
import Foundation
import Synchronization

/// SIGTERM, SIGINT and SIGHUP (the terminal of an interactive drain closed) ask the pass to stop: it
/// claims nothing more, lets in-flight sends finish, records them, and exits with code 3.
///
///     StopSignal.install()
///     while !StopSignal.requested { … }
///
/// A wait that must end at once on a stop (a follower waiting for work) polls `wakeDescriptor`
/// beside what it waits for, or sleeps with `sleep(_:)`: a request writes a byte to that pipe and
/// never reads it back, so every wait after it returns at once.
public enum StopSignal {
    /// The signals that ask a pass to stop, by name.
    public static let names = ["SIGTERM", "SIGINT", "SIGHUP"]

    private static let flag = Atomic<Bool>(false)
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    /// The self-pipe (read end, write end), both non-blocking and closed on exec; made once, on first use.
    private static let wakePipe: (read: Int32, write: Int32) = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return (-1, -1) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        return (fds[0], fds[1])
    }()

    public static var requested: Bool { flag.load(ordering: .relaxed) }

    public static func request() {
        flag.store(true, ordering: .relaxed)
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    /// Readable once a stop has been requested: poll it beside whatever a wait waits for.
    public static var wakeDescriptor: Int32 { wakePipe.read }

    /// Sleeps `seconds`, or less when a stop is requested meanwhile (or was before).
    public static func sleep(_ seconds: Double) {
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, min(seconds, 86_400)) * 1e9)
        while !requested {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < end else { return }
            var fd = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, Int32(min((end - now + 999_999) / 1_000_000, UInt64(Int32.max))))
        }
    }

    /// Replaces the default handlers (which kill the process) with a flag. Call once, early.
    public static func install() {
        _ = wakeDescriptor  // the pipe exists before any signal can come
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { StopSignal.request() }
            source.resume()
            sources.append(source)
        }
    }
}
