import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import HeraldWorker
import Testing

/// What `herald run` and its neighbours tell an operator: a summary whose `ok` agrees with the exit
/// code, a dry run as one JSON document that says what it left out, the release and the schema it
/// needs, settings it does not know, a connection error's cause, and every stop signal.
@Suite struct PassVerdictTests {
    static let now = ISO8601.string(seedInstant)

    /// `ok` is true only when the pass exits 0, and `exit_code` is the code it exits with: a pass whose
    /// patterns phase fails exits 4 with `"ok": false`.
    @Test func okIsTrueOnlyWhenThePassExitsZero() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            defer { db.close() }
            let clean = try HeraldCLI.run(["run", "--now", Self.now, "--quiet"], env: ["DATABASE_URL": tdb.url])
            #expect(clean.status == 0, "\(clean.stderr)")
            let good = try JSONValue.parse(clean.stdout)
            #expect(good["ok"]?.boolValue == true && good["exit_code"]?.intValue == 0, "\(clean.stdout)")

            try db.execute("delete from pattern_scan_state")  // the patterns phase cannot run without it
            let degraded = try HeraldCLI.run(["run", "--now", Self.now, "--quiet"], env: ["DATABASE_URL": tdb.url])
            #expect(degraded.status == 4, "\(degraded.stderr)")
            let summary = try JSONValue.parse(degraded.stdout)
            #expect(summary["ok"]?.boolValue == false && summary["exit_code"]?.intValue == 4, "\(degraded.stdout)")
        }
    }

    /// A dry run prints exactly one JSON document: each due row's decision inside it, and the parts it
    /// did not run named (no send, no weather fetch for the forecasts). The row stays as it was.
    @Test func aDryRunPrintsOneDocumentNamingWhatItDidNotRun() throws {
        try withTestDatabase { tdb in
            let f = Fixtures(db: try tdb.connect())
            let id = try f.enqueue(to: try f.profile(), at: seedInstant)
            let r = try HeraldCLI.run(["run", "--dry-run", "--now", Self.now, "--quiet"], env: ["DATABASE_URL": tdb.url])
            #expect(r.status == 0, "\(r.stderr)")
            let summary = try JSONValue.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(summary["dry_run"]?.boolValue == true)
            let decisions = summary["decisions"]?.arrayValue ?? []
            #expect(decisions.map { $0["id"]?.stringValue } == [id.uuidString.lowercased()], "\(r.stdout)")
            #expect(decisions.first?["decision"]?.stringValue == "send", "\(r.stdout)")
            let notRun = Set((summary["not_run"]?.arrayValue ?? []).compactMap(\.stringValue))
            #expect(notRun.isSuperset(of: ["sends", "housekeeping", "forecasts.weather", "receipts"]), "\(notRun)")
            #expect(try f.row(id)["status"].string == "pending")
        }
    }

    /// `herald --version` prints the release and the schema migration it needs.
    @Test func versionNamesTheReleaseAndTheSchemaItNeeds() throws {
        let r = try HeraldCLI.run(["--version"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == Release.description + "\n")
        #expect(r.stdout.contains(Release.version) && r.stdout.contains("migration \(SchemaVersion.required)"), "\(r.stdout)")
    }

    /// A `HERALD_*` variable herald does not read is warned of by a pass, by name, as the doctor does.
    @Test func aPassWarnsOfAHeraldVariableItDoesNotRead() throws {
        try withTestDatabase { tdb in
            let r = try HeraldCLI.run(["run", "--only", "deliver", "--now", Self.now],
                                      env: ["DATABASE_URL": tdb.url, "HERALD_BACTH_SIZE": "200"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.split(separator: "\n").contains { $0.contains("HERALD_BACTH_SIZE") && $0.contains("not a setting herald reads") },
                    "\(r.stderr)")
        }
    }

    /// A connection that fails says why: an unknown database, an unknown role, nothing listening; each
    /// hint names it, from `herald run` (its log) and from `herald status`, instead of "set DATABASE_URL".
    @Test func aConnectionErrorsHintNamesWhatFailed() throws {
        var components = try #require(URLComponents(string: try TestDatabase.serverURL()))
        components.path = "/herald_no_such_database"
        let noDatabase = try #require(components.string)
        components.path = "/postgres"
        components.user = "herald_no_such_role"
        let noRole = try #require(components.string)
        components.user = "postgres"
        components.port = RefusingPort.port
        let refused = try #require(components.string)
        for (url, words) in [(noDatabase, "the database herald_no_such_database does not exist"),
                             (noRole, "the role herald_no_such_role does not exist"),
                             (refused, "nothing accepts connections at that host and port")] {
            for command in [["run", "--quiet"], ["status"]] {
                let r = try HeraldCLI.run(command, env: ["DATABASE_URL": url])
                #expect(r.status == 2, "\(command) \(url): \(r.stderr)")
                #expect(r.stderr.contains(words) && !r.stderr.contains("set DATABASE_URL"), "\(command) \(url): \(r.stderr)")
            }
        }
        let auth = #"connection to server at "db", port 5432 failed: FATAL:  password authentication failed for user "herald""#
        #expect(ConnectionHint.for(auth, urlSet: true).contains("refused the password for herald"))
        #expect(ConnectionHint.for("connection to server on socket \"/run/postgresql/.s.PGSQL.5432\" failed: No such file or directory",
                                   urlSet: false) == ConnectionHint.general)
    }

    /// `herald help run` names every signal the README's exit codes list.
    @Test func helpRunListsEverySignalTheReadmeLists() throws {
        let readme = try String(contentsOf: DeployTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        let signals = Set(readme.matches(of: /SIG[A-Z]+/).map { String($0.output) })
        #expect(signals.count >= 3, "\(signals)")
        let help = try HeraldCLI.run(["help", "run"])
        for signal in signals.sorted() { #expect(help.stdout.contains(signal), "\(signal) is not in `herald help run`") }
        #expect(Set(StopSignal.names) == signals)
    }
}
