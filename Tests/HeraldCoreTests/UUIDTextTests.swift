import Foundation
import HeraldCore
import Testing

@Suite struct UUIDTextTests {
    /// The hand-written lower-case form is Foundation's, for any bytes.
    @Test func lowercasedIsFoundationsTextInLowerCase() {
        var ids = (0..<5000).map { _ in UUID() }
        ids += [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)),
                UUID(uuid: (0x0a, 0xb1, 0xc2, 0xd3, 0xe4, 0xf5, 0x06, 0x17, 0x28, 0x39, 0x4a, 0x5b, 0x6c, 0x7d, 0x8e, 0x9f))]
        for id in ids {
            #expect(id.lowercased == id.uuidString.lowercased())
            #expect(UUID(uuidString: id.lowercased) == id)
        }
    }
}
