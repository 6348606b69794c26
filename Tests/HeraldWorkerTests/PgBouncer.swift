import Foundation
import HeraldTestSupport

/// A PgBouncer in transaction pooling mode in front of a test database, on a private loopback port,
/// started and stopped by a test. PgBouncer refuses to run as root, so as root it runs as `postgres`
/// (as scripts/pg.sh runs the server).
final class PgBouncer {
    /// Where PgBouncer is installed (scripts/deps.sh installs it), or nil.
    static let binary: String? = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    let port: Int
    let directory: URL
    private let process: Process

    /// Starts a PgBouncer that lends `poolSize` server connections to `database` (a postgresql:// URL
    /// without a password), every client to any user logging in as the URL's user.
    init(database: String, poolSize: Int) throws {
        guard let binary = Self.binary else { throw BouncerError("pgbouncer is not installed (scripts/deps.sh)") }
        guard let url = URLComponents(string: database), let host = url.host, let serverPort = url.port else {
            throw BouncerError("cannot read host and port from the test database URL")
        }
        port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pgbouncer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = """
            [databases]
            * = host=\(host) port=\(serverPort) user=\(url.user ?? "postgres")
            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = any
            pool_mode = transaction
            default_pool_size = \(poolSize)
            max_client_conn = 100
            logfile = \(directory.path)/pgbouncer.log
            pidfile = \(directory.path)/pgbouncer.pid
            """
        let file = directory.appendingPathComponent("pgbouncer.ini")
        try config.write(to: file, atomically: true, encoding: .utf8)
        let p = Process()
        if getuid() == 0 {
            try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: directory.path)
            p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            p.arguments = ["-u", "postgres", "--", binary, file.path]
        } else {
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = [file.path]
        }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        // Ready when it accepts connections.
        let deadline = Date().addingTimeInterval(10)
        while !LoopbackPort.accepts(port) {
            guard Date() < deadline, p.isRunning else {
                stop()
                throw BouncerError("pgbouncer did not start: \(log)")
            }
            usleep(50_000)
        }
    }

    /// `database` through this PgBouncer.
    func url(_ database: String) -> String {
        var url = URLComponents(string: database)!
        url.port = port
        return url.string!
    }

    /// What PgBouncer logged.
    var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("pgbouncer.log"), encoding: .utf8)) ?? ""
    }

    func stop() {
        if process.isRunning {
            process.terminate()  // runuser passes SIGTERM on to pgbouncer
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A loopback port nothing listens on right now.
    static func freePort() throws -> Int {
        let socket = try LoopbackSocket()
        defer { socket.close() }
        return socket.port
    }

}

struct BouncerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
