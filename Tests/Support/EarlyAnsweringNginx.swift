import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx (`nginx-light`, which has HTTP/2) over TLS on a loopback port, whose locations answer
/// with `return`: nginx sends its whole answer as soon as it has the request's header fields, without
/// reading the body, then ends the stream with RST_STREAM (NO_ERROR) while the client is still sending
/// (RFC 9113 §8.1 allows it). Started and stopped by a test, as its own process.
///
///     let nginx = try EarlyAnsweringNginx(certificates: certificates)
///     defer { nginx.stop() }
///     // POST nginx.baseURL + "/ok"  → 200, empty body
///     // POST nginx.baseURL + "/bad" → 400 {"reason":"BadDeviceToken"}
///     nginx.requests   // one line per request nginx answered: "POST /ok 200 <apns-id>"
///
/// Locations:
/// - `/ok`, and APNs' `/3/device/<token>`: 200 with no body (APNs' `apns-id` echoed).
/// - `/bad`, and `/3/device/<token>` for a token starting with ``refusedTokenPrefix``: 400
///   `{"reason":"BadDeviceToken"}`.
/// - `/gone`: `return 444`, which ends the stream with an error code before any status.
/// - `/cut`: the answer of `upstream` (an HTTP/1.1 server on a loopback port), proxied: when the upstream
///   closes before its whole body, nginx resets the stream with INTERNAL_ERROR after the status.
///
/// `http2_body_preread_size` keeps its default (64 KB): below the client's initial window (65,535),
/// nginx refuses every stream whose data comes before its SETTINGS are acknowledged (REFUSED_STREAM), a
/// different fault from the one this server plays.
public final class EarlyAnsweringNginx: @unchecked Sendable {  // `process` is only stopped by its owner
    /// Where nginx is installed (scripts/deps.sh installs nginx-light), or nil.
    public static let binary: String? = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// True when nginx is installed: a test that needs it names this in `.enabled(if:)`.
    public static var installed: Bool { binary != nil }

    /// The start of a device token nginx refuses (hex digits, so that herald stores it as an APNs token).
    public static let refusedTokenPrefix = "bad0bad0bad0"

    public let port: Int
    public let directory: String
    private let process: Process

    /// "https://127.0.0.1:<port>".
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `keepaliveRequests`: the requests nginx answers on one connection before it ends it (GOAWAY, then
    /// close); nginx's default is 1,000.
    public init(certificates: TestCertificates, upstream: Int? = nil, keepaliveRequests: Int = 1000) throws {
        guard let binary = Self.binary else { throw Failure(description: "nginx is not installed (scripts/deps.sh)") }
        let socket = try LoopbackSocket()
        port = socket.port
        socket.close()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-nginx-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = (directory as NSString).appendingPathComponent("nginx.conf")
        try Self.configuration(port: port, directory: directory, certificates: certificates, upstream: upstream,
                               keepaliveRequests: keepaliveRequests).write(toFile: config, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["-p", directory, "-c", config, "-e", (directory as NSString).appendingPathComponent("error.log")]
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        let deadline = Date().addingTimeInterval(10)
        while !LoopbackPort.accepts(port) {
            guard Date() < deadline, p.isRunning else {
                let log = errorLog
                stop()
                throw Failure(description: "nginx did not start: \(log)")
            }
            usleep(20_000)
        }
    }

    /// One process, in the foreground, everything it writes in `directory`.
    static func configuration(port: Int, directory: String, certificates: TestCertificates, upstream: Int?,
                              keepaliveRequests: Int) -> String {
        let cut = upstream.map { "location /cut { proxy_pass http://127.0.0.1:\($0); }" } ?? ""
        return """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log info;
            events { worker_connections 4096; }
            http {
              log_format requests '$request_method $uri $status $http_apns_id $connection $connection_requests $http_apns_collapse_id';
              access_log \(directory)/access.log requests;
              client_body_temp_path \(directory)/body;
              proxy_temp_path \(directory)/proxy;
              fastcgi_temp_path \(directory)/fastcgi;
              uwsgi_temp_path \(directory)/uwsgi;
              scgi_temp_path \(directory)/scgi;
              server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(certificates.certFile);
                ssl_certificate_key \(certificates.keyFile);
                client_body_buffer_size 1k;
                keepalive_requests \(keepaliveRequests);
                add_header apns-id $http_apns_id always;
                location /ok { return 200; }
                location /3/device/ { return 200; }
                location /bad { default_type application/json; return 400 '{"reason":"BadDeviceToken"}'; }
                location /3/device/\(refusedTokenPrefix) { default_type application/json; return 400 '{"reason":"BadDeviceToken"}'; }
                location /gone { return 444; }
                \(cut)
              }
            }
            """
    }

    /// One line per request nginx answered, as it logged them: "<method> <path> <status> <apns-id or ->
    /// <connection> <request number on it> <apns-collapse-id or ->".
    /// nginx writes a request's line when it is done with it; `stop()` first to have them all.
    public var requests: [String] {
        let text = (try? String(contentsOfFile: (directory as NSString).appendingPathComponent("access.log"),
                                encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// What nginx logged of its own (start-up errors, closed streams).
    public var errorLog: String {
        (try? String(contentsOfFile: (directory as NSString).appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// Stops nginx (its logs stay until `remove()`). With SIGKILL: a child of Foundation's `Process`
    /// starts with every signal blocked, and nginx in one process never unblocks them, so SIGTERM would
    /// wait forever. Nothing is lost: nginx writes each request's log line as it finishes it.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Stops nginx and deletes its directory.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }
}
