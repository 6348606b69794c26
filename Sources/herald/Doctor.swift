import ArgumentParser
import Foundation
import HeraldHTTP
import HeraldWorker

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a deployment without sending anything: settings, database, providers' credentials, CA file, clock.",
        discussion: """
            Prints one line per check (status, name, detail), or with --json an array of \
            {"check","status","detail"}; secrets are never printed. The verdict goes to stderr. \
            Exit codes: 0 every check passed (warnings do not fail), 1 a check failed (the first is named).
            """)

    @Flag(help: "Also make one read-only authenticated request to each provider that has one (Twilio, SendGrid, WhatsApp).")
    var online = false

    @Flag(help: "Print a JSON array of {check, status, detail} instead of lines.")
    var json = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        var flags: [String: String] = [:]
        if let level = common.logLevel { flags["HERALD_LOG_LEVEL"] = level }
        var options = DoctorOptions()
        options.online = online
        let report = HeraldWorker.Doctor.run(environment: ProcessInfo.processInfo.environment, flags: flags,
                                             options: options)
        printJSON(json ? report.jsonText : report.text)
        if report.exitCode != .ok || !common.quiet {
            BestEffortOutput.standardError(report.verdict + "\n")
        }
        if report.exitCode != .ok { throw ExitNow(code: report.exitCode) }
    }
}
