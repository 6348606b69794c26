import Foundation

/// A throw-away certificate authority and a server certificate for "localhost" and 127.0.0.1, made at
/// run time with the `openssl` command in a new temporary directory. No key material is committed.
///
///     let certificates = try TestCertificates.make()
///     defer { certificates.remove() }
///     let server = try FakeHTTPServer(tls: certificates) { _ in .json(200, "{}") }
///     // the client trusts certificates.caFile (HERALD_CA_FILE)
public struct TestCertificates: Sendable {
    /// The CA certificate (PEM) a client must trust.
    public let caFile: String
    /// The server certificate (PEM), signed by the CA, subjectAltName DNS:localhost, IP:127.0.0.1.
    public let certFile: String
    /// The server's private key (PEM, PKCS#8).
    public let keyFile: String
    /// The directory holding all of them.
    public let directory: String

    public enum Failure: Error, CustomStringConvertible {
        case openssl(arguments: [String], status: Int32, output: String)
        public var description: String {
            switch self {
            case .openssl(let arguments, let status, let output):
                "openssl \(arguments.joined(separator: " ")) exited with \(status): \(output)"
            }
        }
    }

    /// Makes a new CA and server certificate (P-256 keys, valid for two days).
    public static func make() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-certs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = { (name: String) in (directory as NSString).appendingPathComponent(name) }
        let certificates = TestCertificates(caFile: path("ca.pem"), certFile: path("server.pem"),
                                            keyFile: path("server.key"), directory: directory)
        do {
            try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-keyout", path("ca.key"), "-out", certificates.caFile, "-days", "2",
                         "-subj", "/CN=herald test CA",
                         "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                         "-keyout", certificates.keyFile, "-out", path("server.csr"), "-subj", "/CN=localhost"])
            try Data("""
                subjectAltName = DNS:localhost, IP:127.0.0.1
                basicConstraints = critical, CA:FALSE
                keyUsage = critical, digitalSignature, keyEncipherment
                extendedKeyUsage = serverAuth

                """.utf8).write(to: URL(fileURLWithPath: path("server.ext")))
            try openssl(["x509", "-req", "-in", path("server.csr"), "-CA", certificates.caFile,
                         "-CAkey", path("ca.key"), "-CAcreateserial", "-out", certificates.certFile,
                         "-days", "2", "-extfile", path("server.ext")])
        } catch {
            certificates.remove()
            throw error
        }
        return certificates
    }

    /// Deletes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure.openssl(arguments: arguments, status: process.terminationStatus, output: text)
        }
    }
}
