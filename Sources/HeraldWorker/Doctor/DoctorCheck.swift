/// One finding of `herald doctor`: which check, how it went, and what it saw. Its text never holds a
/// secret: a secret setting is described by where it came from, never by its value.
///
///     DoctorCheck("database.schema", .ok, "migration 33 of 33")
public struct DoctorCheck: Sendable, Equatable {
    /// How a check went. A warning is worth reading and does not fail the doctor; a failure does.
    public enum Status: String, Sendable, Equatable {
        case ok
        case warn
        case fail
    }

    /// What was checked, a dotted name: `settings.APNS_KEY_FILE`, `database.schema`, `provider.fcm`.
    public var name: String
    public var status: Status
    public var detail: String

    public init(_ name: String, _ status: Status, _ detail: String) {
        self.name = name
        self.status = status
        self.detail = detail
    }
}
