import Foundation
import HeraldCore
import HeraldTestSupport
import HeraldWorker
import Testing

/// Output that cannot be written — a full disk (cron's `2>>herald.log`), a reader that went away —
/// never stops a pass: `herald` ignores SIGPIPE and drops what it cannot write.
@Suite struct UnwritableOutputTests {
    /// Which of the pass's outputs is broken.
    enum Broken: String, CaseIterable, CustomTestStringConvertible {
        /// stderr (the log) on a full disk.
        case standardError
        /// stdout (the summary) into a pipe whose reader has gone.
        case standardOutput
        /// The log adapter's file on a full disk: its write comes between a send and its record.
        case logAdapterFile

        var testDescription: String { rawValue }
    }

    /// The pass sends, records every row and exits 0, whichever output cannot be written.
    @Test(arguments: Broken.allCases)
    func aPassWhoseOutputCannotBeWrittenStillRecordsItsSends(_ broken: Broken) throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            var ids: [UUID] = []
            for _ in 0..<3 { ids.append(try f.enqueue(to: try f.profile(), channel: "webhook", kind: "reminder", at: seedInstant)) }
            let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
            defer { try? full.close() }
            let goneReader = Pipe()
            try goneReader.fileHandleForReading.close()

            var env = ["DATABASE_URL": tdb.url, "HERALD_LOG_LEVEL": "info", "HERALD_CHANNEL_WEBHOOK": "log"]
            if broken == .logAdapterFile { env["HERALD_LOG_ADAPTER_FILE"] = "/dev/full" }
            let p = try HeraldBinary.start(["run", "--now", ISO8601.string(seedInstant)], env: env,
                                           stdout: broken == .standardOutput ? goneReader : nil,
                                           stderr: broken == .standardError ? full : FileHandle.nullDevice)
            p.waitUntilExit()
            #expect(p.terminationReason == .exit, "killed by signal \(p.terminationStatus)")
            #expect(p.terminationStatus == 0)
            for id in ids { #expect(try f.row(id)["status"].string == "sent") }
        }
    }
}
