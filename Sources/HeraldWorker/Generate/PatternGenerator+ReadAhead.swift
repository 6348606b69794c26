import Foundation
import HeraldCore
import Logging

/// Reading ahead in the patterns phase: the chunks' metrics are read in segments, and the coming
/// segments are read and evaluated on connections of their own while the pass writes the current one.
extension PatternGenerator {
    /// The chunks of each metric read, as ranges of chunk indices: the first alone, then as many as
    /// `readUsers` users allow (at least one).
    ///
    ///     PatternGenerator.segments(10, chunkSize: 1000, readUsers: 3276)   // [0..<1, 1..<4, 4..<7, 7..<10]
    static func segments(_ chunks: Int, chunkSize: Int, readUsers: Int) -> [Range<Int>] {
        guard chunks > 0 else { return [] }
        let per = max(1, readUsers / max(1, chunkSize))
        return [0..<1] + stride(from: 1, to: chunks, by: per).map { $0..<min($0 + per, chunks) }
    }

    /// The reads in the order the phase makes them: `segments`, with the last chunk read on its own
    /// too. The pass starts writing after a read of one chunk and ends with the writes of one chunk;
    /// in between, each segment's writes overlap the next one's read.
    ///
    ///     PatternGenerator.readSegments(10, chunkSize: 1000, readUsers: 3276)   // [0..<1, 1..<4, 4..<7, 7..<9, 9..<10]
    static func readSegments(_ chunks: Int, chunkSize: Int, readUsers: Int) -> [Range<Int>] {
        var out = segments(chunks, chunkSize: chunkSize, readUsers: readUsers)
        if let last = out.last, last.count > 1 {
            out[out.count - 1] = last.lowerBound..<last.upperBound - 1
            out.append(last.upperBound - 1..<last.upperBound)
        }
        return out
    }

    /// The connections that read and evaluate the coming segments (`MetricPrefetcher`), taking turns:
    /// segment k is read by reader k mod n, once that reader's previous segment was taken. There are
    /// none with a single segment or no `readerURL`, nor after one failed: each chunk is then read on
    /// the pass's connection.
    ///
    ///     var ahead = ReadAhead(phase, segments: segments, chunks: chunks, scan: scan)
    ///     defer { ahead.close() }
    ///     ahead.startFirst()
    ///     let evaluations = ahead.take(0)   // segment 0's, or nil: read them on the pass's connection
    struct ReadAhead {
        private var readers: [MetricPrefetcher] = []
        private let segments: [Range<Int>]
        private let chunks: [[UUID]]
        private let scan: Scan
        private let logger: Logger

        init(_ phase: PatternGenerator, segments: [Range<Int>], chunks: [[UUID]], scan: Scan) {
            (self.segments, self.chunks, self.scan, logger) = (segments, chunks, scan, phase.logger)
            if segments.count > 1, let readerURL = phase.readerURL {
                readers = (0..<min(max(1, phase.readers), segments.count)).map {
                    MetricPrefetcher(url: readerURL, applicationName: "herald \(phase.passId) (metrics \($0 + 1))")
                }
            }
        }

        /// Starts each reader on its first segment.
        func startFirst() {
            for k in readers.indices { start(k) }
        }

        /// Segment `index`'s evaluations, and the reader that read them starts on its next segment. Nil
        /// without readers; a reader that fails ends them all, and the rest is read on the pass's connection.
        mutating func take(_ index: Int) -> PatternEvaluations? {
            guard !readers.isEmpty else { return nil }
            do {
                let evaluations = try readers[index % readers.count].take()
                start(index + readers.count)
                return evaluations
            } catch {
                logger.warning("a connection for metric reads failed; reading on the pass's connection",
                               metadata: ["error": .string("\(error)")])
                close()
                readers = []
                return nil
            }
        }

        /// Ends the readers' threads and closes their connections.
        func close() {
            readers.forEach { $0.close() }
        }

        /// Segment `k`, if there is one, to reader k mod n.
        private func start(_ k: Int) {
            guard !readers.isEmpty, k < segments.count else { return }
            readers[k % readers.count].start(users: chunks[segments[k]].flatMap { $0 }, latest: scan.latest,
                                             thresholds: scan.thresholds)
        }
    }
}
