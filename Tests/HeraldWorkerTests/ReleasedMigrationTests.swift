import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// A migration a database has applied is never edited: the migrator refuses to go on from a database
/// whose recorded checksum differs from the file's (`MigratorError.checksumMismatch`), so an edit
/// strands every deployment that applied the file. A change to the SQL is a new migration; a
/// comment-only rewording keeps the old checksum in `Migration.formerChecksums`.
@Suite struct ReleasedMigrationTests {
    /// Each migration's checksum as released. A new migration adds its line; no line ever changes.
    static let released: [Int: String] = [
        1: "a1eed27a1534ee4b", 2: "5dc2ea5bb39ed565", 3: "504ce3f6d0fe3283", 4: "8dda1ade14dda7e0",
        5: "a1059f43bc8d31f5", 6: "ad8b3e7a8f2615da", 7: "ab90ebf165118cb3", 8: "1494a0322b5c9cd6",
        9: "98335064bf6fbaf6", 10: "bd71660b3dfac555", 11: "e9b47df7a805ee1d", 12: "b535ee6e72270002",
        13: "40fb2ab7c64108b1", 14: "7de538298a828a01", 15: "620522d2aa3dfbc3", 16: "640b6b4f4b25bb32",
        17: "501b9e524dd95779", 20: "fb613276f36c2421", 21: "9d92837227c94389", 22: "540c11b7801ca30b",
        23: "94000bb87c3a165a", 25: "0423fa331fba0b2c", 26: "b90d77e383c2e7ae", 27: "8d4b35cc201c92e3",
        28: "1dd13f83b0d92664", 29: "1e2b32030600fe52", 30: "de2d0a4ac04b81d9", 31: "9589cf3ada81a98c",
        32: "4ebb39af799056ef", 33: "aded3774ebe34e6e", 34: "916d3fc7c26b8612", 35: "0f91612fac370b4f",
        36: "bf93ec4890b7c8ac", 37: "cc6e0281b47ea8af", 38: "1f55e9576f71d6f7", 39: "1c11196c067ee7fd",
        40: "42762034534d166a", 41: "b0a796a2392a2e32", 42: "eaa433b95e6ebbdc", 43: "1a89d3e25f6a63a6",
        44: "02a734f71dca9a20", 45: "cc801cbce94fb1f0", 46: "872ae6eb6d46872d", 47: "54ad2f196d3158f8",
        48: "74cb93ef4ff6fc3c", 50: "b29d6181a1f77436", 51: "a4a3eb64e3f0e5e3", 52: "09469cca31e2ebe1",
        53: "bf8c6822fe9a628f", 56: "a3b01131cdcd1275", 57: "eae4044c2136993d", 58: "ce0bf2600aedf8ac",
        59: "b0c2f5e260ce4f6b", 60: "56ac6adfdc0d7938", 61: "a1c965390107cf84", 62: "08647f9a2ba85765", 63: "f96be62c1ebf164d",
        64: "83cf4e9979b90551", 65: "9d59b09ba3d8c573", 66: "d3d529b5b93cde4d", 67: "40e2c8480121d20b", 68: "fc85dc507fc4dc9f", 69: "1fe6b41ab5f09d94",
        70: "514618e2d3eef9cb", 71: "114f92b9523c63c3", 72: "2ed99ff6666e5c5a",
        73: "43ee4150bbc9651b", 74: "2c4ef2b69fad88b1", 75: "3ac75fe8a9981f97",
        76: "8abc6d458e4a4879", 77: "afe3a10d4e9459f0", 78: "b9dd2d10ab0b6919", 79: "a5d2e451019246da", 80: "d55c672fddb53e62"
    ]

    @Test func everyMigrationHasTheChecksumItWasReleasedWith() throws {
        let migrator = try Migrator(directory: TestDatabase.migrationsDirectory)
        for migration in migrator.migrations {
            #expect(Self.released[migration.version] == migration.checksum,
                    "\(migration.description) was edited after its release, or is new and not listed here")
        }
        #expect(migrator.migrations.count == Self.released.count, "a released migration was removed")
    }
}
