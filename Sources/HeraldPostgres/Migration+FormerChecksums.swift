extension Migration {
    /// Applied migrations whose comments were reworded, by version: the checksum the file has now, and
    /// the ones its text had before. The SQL is the same, so a database that recorded a former checksum
    /// has applied exactly what the file says now. A former checksum is accepted only while the file has
    /// the current one: any other change to the file, to its SQL above all, is refused as before.
    ///
    /// Rewording a migration's comments again: its current checksum joins the former ones, and the new
    /// one becomes current. Entries stay for good, since the migrator leaves `schema_migrations` as it
    /// is. A change to the SQL itself is a new migration, never an entry here.
    public static let formerChecksums: [Int: FormerChecksums] = [
        // Comments reworded (history words out, pointers into docs/); the SQL is the same.
        8: FormerChecksums(current: "1494a0322b5c9cd6", former: ["1306a0c7a84cf224"]),
        10: FormerChecksums(current: "bd71660b3dfac555", former: ["9cbce560b630a0f8"]),
        12: FormerChecksums(current: "b535ee6e72270002", former: ["7758acc5f629295d"]),
        13: FormerChecksums(current: "40fb2ab7c64108b1", former: ["85faf2e8e8932f61"]),
        14: FormerChecksums(current: "7de538298a828a01", former: ["1348f1adaf9ce0af"]),
        15: FormerChecksums(current: "620522d2aa3dfbc3", former: ["1241c0fa1363b2ca"]),
        16: FormerChecksums(current: "640b6b4f4b25bb32", former: ["96633ac8dd5a3d0a"]),
        17: FormerChecksums(current: "501b9e524dd95779", former: ["631dd7305506ffcf"]),
        21: FormerChecksums(current: "9d92837227c94389", former: ["57af423e3c61a863"]),
        22: FormerChecksums(current: "540c11b7801ca30b", former: ["263c90d4ab11e8e1"]),
        23: FormerChecksums(current: "94000bb87c3a165a", former: ["c4cf7c054a7a3d2a"]),
        26: FormerChecksums(current: "b90d77e383c2e7ae", former: ["5a1eaea03acc44b4"]),
        27: FormerChecksums(current: "8d4b35cc201c92e3", former: ["5b6e1a3c934a0c75"]),
        28: FormerChecksums(current: "1dd13f83b0d92664", former: ["293acdff9bb598f8"]),
        29: FormerChecksums(current: "1e2b32030600fe52", former: ["0beb24fac6f1a74e"]),
    ]
}

/// The checksums a migration's file had before comment-only edits, and the one it has since.
public struct FormerChecksums: Sendable, Equatable {
    /// The file's checksum now; the former ones count only while it has this one.
    public var current: String
    public var former: Set<String>

    public init(current: String, former: Set<String>) {
        self.current = current
        self.former = former
    }
}
