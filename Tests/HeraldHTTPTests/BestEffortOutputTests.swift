import Foundation
import HeraldHTTP
import Testing

/// Writes that cannot fail the process: everything is written, or the rest is dropped.
@Suite struct BestEffortOutputTests {
    @Test func aFullDiskDropsTheLine() throws {
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        defer { try? full.close() }
        #expect(BestEffortOutput.append("a line\n", to: full.fileDescriptor) == false)
    }

    @Test func aClosedDescriptorDropsTheLine() {
        #expect(BestEffortOutput.append("a line\n", to: -1) == false)
    }

    @Test func everyByteReachesAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-out-\(UUID().uuidString)").path
        FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try #require(FileHandle(forWritingAtPath: path))
        let text = String(repeating: "zwölf ", count: 100_000)
        #expect(BestEffortOutput.append(text, to: file.fileDescriptor))
        try file.close()
        #expect(FileManager.default.contents(atPath: path) == Data(text.utf8))
    }
}
