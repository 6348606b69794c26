import CCurl
import Foundation

/// A temporary PEM file holding the system's trusted CAs plus an extra CA, for CURLOPT_CAINFO
/// (which replaces the default bundle, so the extra CA must be added to the system's, not set alone).
/// Owns the file and deletes it exactly once, in `deinit`.
///
///     let bundle = try CABundleFile(extraCAFile: "/etc/herald/test-ca.pem")
///     try easy.set(CURLOPT_CAINFO, bundle.path)
final class CABundleFile {
    /// Where the combined bundle is.
    let path: String

    /// Reads `extraCAFile` (throws if unreadable or not PEM) and writes it after the system bundle.
    init(extraCAFile: String) throws(TransportSetupError) {
        let extra = try Self.readExtraCA(extraCAFile)
        var bundle = Data()
        if let system = Self.systemBundlePath().flatMap({ FileManager.default.contents(atPath: $0) }) {
            bundle.append(system)
            bundle.append(Data("\n".utf8))
        }
        bundle.append(extra)
        bundle.append(Data("\n".utf8))
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-ca-\(getpid())-\(UUID().uuidString).pem")
        do {
            try bundle.write(to: file)
        } catch {
            throw .unreadableCAFile(path: extraCAFile, reason: "cannot write combined bundle \(file.path): \(error)")
        }
        path = file.path
    }

    deinit {
        unlink(path)
    }

    /// The extra CA file's bytes: throws unless it is readable and holds a PEM certificate.
    static func readExtraCA(_ extraCAFile: String) throws(TransportSetupError) -> Data {
        guard let extra = FileManager.default.contents(atPath: extraCAFile) else {
            let reason = FileManager.default.fileExists(atPath: extraCAFile) ? "not readable" : "no such file"
            throw .unreadableCAFile(path: extraCAFile, reason: reason)
        }
        guard String(decoding: extra, as: UTF8.self).contains(certificateMarker) else {
            throw .unreadableCAFile(path: extraCAFile, reason: "no PEM certificate in it")
        }
        return extra
    }

    static let certificateMarker = "-----BEGIN CERTIFICATE-----"

    /// The CA bundle libcurl uses by default (CURLINFO_CAINFO), else the usual Linux locations.
    static func systemBundlePath() -> String? {
        var candidates: [String] = []
        if let easy = try? CurlEasyHandle(), let builtIn = easy.info(string: CURLINFO_CAINFO) {
            candidates.append(builtIn)
        }
        candidates += ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
        return candidates.first { FileManager.default.isReadableFile(atPath: $0) }
    }
}

extension TransportOptions {
    /// Checks an extra CA file as a transport would take it (`HERALD_CA_FILE`) and returns how many
    /// PEM certificates it holds; throws `unreadableCAFile` for the same reasons `HTTPTransport` would.
    ///
    ///     let count = try TransportOptions.checkCAFile("/etc/herald/ca.pem")   // 1
    public static func checkCAFile(_ path: String) throws(TransportSetupError) -> Int {
        let text = String(decoding: try CABundleFile.readExtraCA(path), as: UTF8.self)
        return text.components(separatedBy: CABundleFile.certificateMarker).count - 1
    }

    /// The system's CA bundle that every transport trusts, nil when none is found.
    public static var systemCABundle: String? { CABundleFile.systemBundlePath() }
}
