/// This build of herald: its release and the schema it needs, as `herald --version` prints them.
///
///     herald --version   // herald 0.1.0 (needs schema migration 46: herald migrate with this release's sql/)
public enum Release {
    /// The release, raised when one is cut.
    public static let version = "0.1.0"

    /// The line `herald --version` prints.
    public static var description: String {
        "herald \(version) (needs schema migration \(SchemaVersion.required): herald migrate with this release's sql/)"
    }
}
