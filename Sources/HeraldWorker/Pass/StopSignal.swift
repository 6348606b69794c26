import Dispatch
import Foundation
import Synchronization

/// SIGTERM, SIGINT and SIGHUP (the terminal of an interactive drain closed) ask the pass to stop: it
/// claims nothing more, lets in-flight sends finish, records them, and exits with code 3.
///
///     StopSignal.install()
///     while !StopSignal.requested { … }
public enum StopSignal {
    private static let flag = Atomic<Bool>(false)
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    public static var requested: Bool { flag.load(ordering: .relaxed) }

    public static func request() { flag.store(true, ordering: .relaxed) }

    /// Replaces the default handlers (which kill the process) with a flag. Call once, early.
    public static func install() {
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { StopSignal.request() }
            source.resume()
            sources.append(source)
        }
    }
}
