import Foundation

/// The process's peak resident memory, from the kernel's high-water mark (`VmHWM` in
/// /proc/self/status). Reported in the summary and the metrics, so an operator sees what a batch size
/// costs. Nil where /proc is not available.
enum ProcessMemory {
    static func peakBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kb = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return kb.map { $0 * 1024 }
        }
        return nil
    }
}
