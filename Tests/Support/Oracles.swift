import Foundation

/// The independent oracles of Tests/Oracles (Python, the system's tzdata): each prints its cases and
/// answers as JSON. Tests that run one are enabled only with `Tools.pythonWithZoneinfo`.
///
///     let data = try Oracles.run("weekly_reminder_oracle.py", ["--cases", "40"])
public enum Oracles {
    /// Runs `Tests/Oracles/<script>` with `arguments` and returns what it printed on stdout.
    public static func run(_ script: String, _ arguments: [String]) throws -> Data {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Oracles/\(script)").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", path] + arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw OracleFailed(description: "the oracle (python3 \(path)) exited \(p.terminationStatus): \(errText)")
        }
        return data
    }

    public struct OracleFailed: Error, CustomStringConvertible {
        public var description: String
    }

    /// A weekly reminder's case and the instants the oracle says it is due at (Unix seconds).
    public struct WeeklyCase: Decodable, Sendable, CustomStringConvertible {
        public var zone: String, weekday: Int, time: String, from: Int, to: Int
        public var occurrences: [Int]

        public var description: String { "\(zone) weekday \(weekday) at \(time), \(from)...\(to)" }
    }

    public struct WeeklyAnswers: Decodable, Sendable {
        public var seed: Int, tzdata: String
        public var cases: [WeeklyCase]
    }

    /// The weekly reminder oracle: `generated` cases from `seed`, and the `explicit` ones
    /// ("ZONE,WEEKDAY,HH:MM,FROM,TO").
    public static func weekly(seed: Int, generated: Int, explicit: [String] = []) throws -> WeeklyAnswers {
        let args = ["--seed", String(seed), "--cases", String(generated)] + explicit.flatMap { ["--case", $0] }
        return try JSONDecoder().decode(WeeklyAnswers.self, from: run("weekly_reminder_oracle.py", args))
    }
}
