import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Logging
import Testing

/// What never reaches the logs: payload text, credentials in URLs and headers; and the log adapter's
/// file is its owner's only.

/// Runs `herald` with `args` and `env`, and returns its stderr and exit status.
private func runHerald(_ args: [String], env: [String: String]) throws -> (stderr: String, status: Int32) {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-stderr-\(UUID().uuidString)").path
    FileManager.default.createFile(atPath: path, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let file = try #require(FileHandle(forWritingAtPath: path))
    let p = try HeraldBinary.start(args, env: env, stderr: file)
    p.waitUntilExit()
    try file.close()
    return (String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self), p.terminationStatus)
}

@Suite struct BadInputPrivacyTests {
    @Test func aPayloadThatIsNotAnObjectIsNotEchoed() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let good = try f.profile()
            let asString = try f.enqueue(to: good, payload: #""secret health detail""#, at: seedInstant)
            let asArray = try f.enqueue(to: good, payload: #"["secret health detail"]"#, at: seedInstant)

            let (stderr, status) = try runHerald(["run", "--now", ISO8601.string(seedInstant)],
                                                 env: ["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "info"])
            #expect(status == 0, "\(stderr)")
            #expect(stderr.contains("row failed permanently"), "the failure should still be logged: \(stderr)")
            #expect(!stderr.contains("secret health detail"), "\(stderr)")
            for (id, what) in [(asString, "a string of 22 bytes"), (asArray, "an array of 1 element")] {
                let row = try f.row(id)
                #expect(row["status"].string == "failed")
                let error = row["last_error"].string ?? ""
                #expect(error == "malformed payload: not a JSON object (\(what))")
                #expect(!error.contains("secret"))
            }
        }
    }
}

@Suite struct OutboxFileTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-outbox-\(UUID().uuidString).jsonl").path
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func aNewFileIsReadableByItsOwnerOnly() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try Outbox(path: path, logger: Logger(label: "test"))
        #expect(try Self.mode(path) == 0o600)
    }

    @Test func anExistingFileKeepsItsModeAndIsAppendedTo() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        FileManager.default.createFile(atPath: path, contents: Data("earlier line\n".utf8),
                                       attributes: [.posixPermissions: 0o644])
        let lines = CollectedLog()
        let logger = Logger(label: "test") { JSONLogHandler(label: $0, level: .info, stream: lines.stream) }
        _ = try Outbox(path: path, logger: logger)
        #expect(try Self.mode(path) == 0o644)
        #expect(lines.text.contains("\"level\":\"warning\""), "\(lines.text)")
        #expect(lines.text.contains("HERALD_LOG_ADAPTER_FILE"))
        #expect(String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) == "earlier line\n")
    }

    @Test func aPassWritesTheFileWithOwnerOnlyMode() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let path = Self.temporaryPath()
            defer { try? FileManager.default.removeItem(atPath: path) }
            let id = try f.enqueue(to: try f.profile(), channel: "webhook", kind: "reminder", at: seedInstant)
            let (summary, code) = Worker(url: tdb.url, settings: ["HERALD_CHANNEL_WEBHOOK": "log", "HERALD_LOG_ADAPTER_FILE": path])
                .run(now: seedInstant)
            #expect(code == .ok)
            #expect(summary.sent == 1)
            #expect(try f.row(id)["status"].string == "sent")
            #expect(try Self.mode(path) == 0o600)
            let text = String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
            #expect(text.contains(id.lowercased))
        }
    }
}

/// A webhook URL's userinfo and query never reach the log above debug, nor libcurl's verbose output.
@Suite struct WebhookURLRedactionTests {
    static let password = "hook-pa55-Q7"

    @Test func verboseTransfersAndLogsHideTheURLsCredentials() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let server = try FakeHTTPServer { _ in FakeResponse(status: 204) }
            defer { server.shutdown() }
            let id = try f.enqueue(to: try f.profile(), channel: "webhook", kind: "reminder", at: seedInstant)
            let url = server.baseURL.replacingOccurrences(of: "://", with: "://hook-user:\(Self.password)@")
                + "/hooks/herald?key=query-key-55"

            let (stderr, status) = try runHerald(
                ["run", "--now", ISO8601.string(seedInstant)],
                env: ["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "info", "HERALD_CURL_VERBOSE": "1",
                      "WEBHOOK_URL": url, "WEBHOOK_SECRET": WebhookDeliveryTests.secret])
            #expect(status == 0, "\(stderr)")
            #expect(try f.row(id)["status"].string == "sent")
            #expect(server.requests.first?.header("authorization")?.hasPrefix("Basic ") == true)
            // The verbose description is there, masked.
            #expect(stderr.contains("POST /hooks/herald?*** HTTP/"), "\(stderr)")
            #expect(stderr.range(of: "authorization: basic ***", options: .caseInsensitive) != nil, "\(stderr)")
            let basic = Data("hook-user:\(Self.password)".utf8).base64EncodedString()
            for secret in [Self.password, basic, "query-key-55", WebhookDeliveryTests.secret] {
                #expect(!stderr.contains(secret), "\(secret) reached stderr:\n\(stderr)")
            }
        }
    }

    @Test func aBadWebhookURLIsNotQuoted() throws {
        try withTestDatabase { (tdb) throws in
            let (summary, code) = Worker(url: tdb.url, settings: [
                "WEBHOOK_URL": "ftp://hook-user:\(Self.password)@hooks.example.com/x", "WEBHOOK_SECRET": WebhookDeliveryTests.secret,
            ]).run(now: seedInstant)
            #expect(code == .configuration)
            let error = summary.error ?? ""
            #expect(error.contains("WEBHOOK_URL"), "\(error)")
            #expect(!error.contains(Self.password), "\(error)")
        }
    }

    @Test func redactedDestinationsNeverShowUserinfo() {
        #expect(Redact.destination("https://hook-user:\(Self.password)@hooks.example.com/x?k=1") == "host:hooks.example.com")
        #expect(Redact.destination("ada@example.com") == "a…@example.com")
        #expect(Redact.destination("+15551234567") == "+1555…67")
    }
}

/// Log lines written by a `JSONLogHandler` into a temporary file.
final class CollectedLog: @unchecked Sendable {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-log-\(UUID().uuidString)").path
    let stream: LogStream

    init() {
        FileManager.default.createFile(atPath: path, contents: nil)
        stream = LogStream(FileHandle(forWritingAtPath: path)!)
    }

    var text: String { String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
