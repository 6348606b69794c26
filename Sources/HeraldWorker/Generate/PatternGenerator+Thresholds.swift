import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The thresholds the patterns phase evaluates: the rows of `pattern_thresholds` of its version.
extension PatternGenerator {
    /// The configured thresholds whose metric is a numeric column of wearable_daily_metrics.
    func thresholds() throws -> [PatternThreshold] {
        // The catalog itself, not information_schema's views: those cost a pass with nothing to do
        // 2–4 ms on their own.
        let columns = Set(try db.query("""
            select a.attname::text as column_name from pg_attribute a
             where a.attrelid = to_regclass('wearable_daily_metrics') and a.attnum > 0 and not a.attisdropped
               and a.atttypid = any(array['numeric', 'integer', 'bigint', 'smallint', 'real', 'double precision']::regtype[])
            """).compactMap { $0["column_name"].string })
        var out: [PatternThreshold] = []
        for row in try db.query("""
            select metric_type, pattern_type, deviation_percent::float8 as t, min_abs_change::float8 as m
              from pattern_thresholds where version = \(thresholdsVersion) and enabled order by metric_type, pattern_type
            """) {
            guard let metric = row["metric_type"].string, let pattern = row["pattern_type"].string.flatMap(PatternType.init) else { continue }
            guard columns.contains(metric) else {
                logger.warning("pattern threshold names a metric that is not a numeric column of wearable_daily_metrics; skipped",
                               metadata: ["metric": .string(metric), "version": .string(thresholdsVersion)])
                continue
            }
            out.append(PatternThreshold(metric: metric, pattern: pattern, deviationPercent: row["t"].double ?? 20,
                                        minAbsChange: row["m"].double ?? 0))
        }
        return out
    }

    /// Throws `UnknownThresholdsVersion` when no row of `pattern_thresholds`, enabled or not, has
    /// `thresholdsVersion`: a typo in HERALD_THRESHOLDS_VERSION would otherwise stop every pattern
    /// alert with a mere warning. (A version whose rows are all disabled is a choice, not a slip.)
    func checkVersionExists() throws {
        guard try db.query("select 1 as one from pattern_thresholds where version = \(thresholdsVersion) limit 1").isEmpty
        else { return }
        let known = try db.query("select distinct version from pattern_thresholds order by version limit 11")
            .compactMap { $0["version"].string }
        throw UnknownThresholdsVersion(version: thresholdsVersion, known: known)
    }

    /// The metrics the thresholds read, each once, sorted.
    static func metrics(of thresholds: [PatternThreshold]) -> [String] {
        Array(Set(thresholds.map(\.metric))).sorted()
    }
}

/// HERALD_THRESHOLDS_VERSION names a version no row of `pattern_thresholds` has: the patterns phase
/// fails (`phase_errors`, exit 4) and delivery goes on.
struct UnknownThresholdsVersion: Error, CustomStringConvertible {
    let version: String
    /// The versions the table has (at most 11 were read: 10 are named).
    let known: [String]

    var description: String {
        let names = known.prefix(10).map { "'\($0.prefix(40))'" }.joined(separator: ", ")
        let more = known.count > 10 ? ", …" : ""
        return "HERALD_THRESHOLDS_VERSION is '\(version.prefix(40))', which no row of pattern_thresholds has "
            + (known.isEmpty ? "(the table is empty)" : "(its versions: \(names)\(more))")
            + ": no pattern is evaluated until it names one of them"
    }
}
