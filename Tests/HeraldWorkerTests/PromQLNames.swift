import Foundation

/// The metric names a PromQL expression reads, so that a test can hold the alert rules and the dashboard
/// to the metrics herald writes. Label matchers (`{…}`), ranges and subqueries (`[…]`), string literals
/// and the label lists of `by`, `without`, `on`, `ignoring`, `group_left` and `group_right` are removed
/// first; of the identifiers left, PromQL's keywords and the functions below are not metrics, and
/// Grafana's `$variables` are skipped. An identifier called like a function that is not in the list
/// is an error, so a new function in a rule is added here rather than mistaken for a metric.
///
///     try PromQLNames.metrics(in: #"sum by (provider) (rate(herald_sends_total{outcome="retry"}[5m]))"#)
///     // ["herald_sends_total"]
enum PromQLNames {
    struct UnknownFunction: Error, CustomStringConvertible {
        let name: String
        let expression: String
        var description: String { "'\(name)(' in \(expression) is not a PromQL function PromQLNames knows: add it to the list" }
    }

    /// PromQL's functions and aggregations that herald's rules and dashboard may call.
    static let functions: Set<String> = [
        "abs", "absent", "absent_over_time", "avg", "avg_over_time", "bottomk", "ceil", "changes", "clamp",
        "clamp_max", "clamp_min", "count", "count_over_time", "count_values", "delta", "deriv", "exp", "floor",
        "group", "histogram_quantile", "idelta", "increase", "irate", "label_join", "label_replace",
        "last_over_time", "max", "max_over_time", "min", "min_over_time", "predict_linear", "present_over_time",
        "quantile", "quantile_over_time", "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sqrt",
        "stddev", "stddev_over_time", "stdvar", "stdvar_over_time", "sum", "sum_over_time", "time", "timestamp",
        "topk", "vector",
    ]

    /// Words of the language that are not names: binary operators, modifiers and special numbers.
    static let keywords: Set<String> = [
        "and", "or", "unless", "atan2", "bool", "by", "without", "on", "ignoring", "group_left", "group_right",
        "offset", "inf", "nan",
    ]

    static func metrics(in expression: String) throws -> Set<String> {
        var text = expression
        // Strings first (they may hold braces or brackets), then matchers, ranges and grouping labels.
        for pattern in [#""(?:[^"\\]|\\.)*""#, #"'(?:[^'\\]|\\.)*'"#, "`[^`]*`", #"\{[^}]*\}"#, #"\[[^\]]*\]"#] {
            text = text.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        text = text.replacingOccurrences(of: #"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"#,
                                         with: " $1 ", options: .regularExpression)
        var names: Set<String> = []
        let chars = Array(text)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c.isNumber || c == "." {
                // A number or a duration (1e3, 0x1F, 5m): not a name.
                while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "." || chars[i] == "_" { i += 1 }
            } else if c.isLetter || c == "_" || c == ":" {
                let start = i
                while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == ":" { i += 1 }
                let word = String(chars[start..<i])
                let variable = start > 0 && chars[start - 1] == "$"
                var next = i
                while next < chars.count, chars[next].isWhitespace { next += 1 }
                let called = next < chars.count && chars[next] == "("
                if variable || keywords.contains(word.lowercased()) || functions.contains(word) { continue }
                if called { throw UnknownFunction(name: word, expression: expression) }
                names.insert(word)
            } else {
                i += 1
            }
        }
        return names
    }
}
