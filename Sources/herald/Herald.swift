import ArgumentParser
import Foundation
import HeraldHTTP
import HeraldWorker
import Logging

/// `herald`: the notification worker. cron runs `herald run` every five minutes; each run is one pass.
@main
struct Herald: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A notification worker for health and wellness apps, driven by PostgreSQL.",
        discussion: """
            Each `herald run` is one pass: it claims due rows from notification_queue, decides per row from \
            the recipient's preferences, sends through the configured channels, records the outcome and exits.
            The database is configured by DATABASE_URL (or libpq's PG* variables); channels by their \
            variables (see docs/configuration.md); `herald doctor` checks them all, sending nothing. Exit codes: 0 done, 1 configuration error, 2 database error, 3 interrupted, 4 degraded.
            """,
        version: Release.description,
        subcommands: [Run.self, Migrate.self, Status.self, Explain.self, Enqueue.self,
                      Retry.self, Cancel.self, Reschedule.self, Unlock.self, Pause.self, Resume.self,
                      Doctor.self])

    /// Parses and runs; every error ends with the right exit code and a message that says what to do.
    static func main() {
        // A reader that went away (`herald run | head`) makes a write fail with EPIPE, which
        // `BestEffortOutput` drops, instead of killing the pass between a send and its record.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let exit as ExitNow {
            Foundation.exit(exit.code.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            BestEffortOutput.standardError("herald: " + fullMessage(for: error) + "\n")
            // A bad flag is a configuration error: exit 1, before any row is touched.
            Foundation.exit(HeraldWorker.ExitCode.configuration.rawValue)
        }
    }
}

/// Ends the process with a herald exit code after the command has printed what it had to say.
struct ExitNow: Error {
    var code: HeraldWorker.ExitCode
}

/// Options every subcommand shares.
struct CommonOptions: ParsableArguments {
    @Flag(name: .long, help: "Log only warnings and errors.")
    var quiet = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error (default: HERALD_LOG_LEVEL or info).")
    var logLevel: String?

    /// Sets up logging and reads the settings; a problem with either is a configuration error (exit 1).
    func start() throws -> (Settings, Logger) {
        do {
            let settings = try Settings.load()
            return (settings, try logger(settings))
        } catch {
            BestEffortOutput.standardError("herald: \(error)\n")
            throw ExitNow(code: .configuration)
        }
    }

    private func logger(_ settings: Settings) throws -> Logger {
        let name = logLevel ?? settings["HERALD_LOG_LEVEL"] ?? (quiet ? "warning" : "info")
        guard let level = Logger.Level(rawValue: name.lowercased()) else {
            throw ConfigError("log level must be one of trace, debug, info, notice, warning, error; got '\(name)'")
        }
        let effective = quiet && level < .warning ? .warning : level
        LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: effective) }
        return Logger(label: "herald")
    }
}

/// Writes a line to stdout unbuffered, so the summary is out before the process exits with a code;
/// a stdout that cannot take it (a closed pipe, a full disk) does not change the exit code.
func printJSON(_ text: String) {
    BestEffortOutput.standardOutput(text + "\n")
}
