import CLibPQ
import Foundation

/// Results and errors: a libpq result becomes a `PGResult` or a thrown `PGError`, its messages
/// scrubbed of passwords.
extension PGConnection {
    /// Turns a libpq result into a `PGResult` (which then owns it) or a thrown `PGError` (freeing it).
    func consume(_ result: OpaquePointer?, _ connection: OpaquePointer) throws -> PGResult {
        guard let result else {
            throw PGError(
                message: scrub(Self.trimmed(PQerrorMessage(connection)) ?? "no result from the server"),
                isConnectionFailure: PQstatus(connection) == CONNECTION_BAD)
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            return PGResult(owning: result)  // frees it when its last row is gone
        }
        defer { PQclear(result) }
        switch status {
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            throw PGError(message: "COPY is not supported by PGConnection", isConnectionFailure: false)
        default:
            func field(_ code: Character) -> String? {
                PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
            }
            let sqlState = field("C")
            let message = field("M")
                ?? Self.trimmed(PQresultErrorMessage(result))
                ?? Self.trimmed(PQerrorMessage(connection))
                ?? "unknown error"
            let lost = PQstatus(connection) == CONNECTION_BAD || (sqlState?.hasPrefix("08") ?? false)
            throw PGError(
                sqlState: sqlState, message: scrub(message), detail: field("D").map(scrub), hint: field("H"),
                constraint: field("n"), isConnectionFailure: lost)
        }
    }

    func scrub(_ message: String) -> String {
        Self.scrub(message, secrets)
    }

    /// `message` without `secrets`, nor any URI userinfo password or `password=` value it quotes.
    static func scrub(_ message: String, _ secrets: [String]) -> String {
        var message = message
        for secret in secrets where !secret.isEmpty {
            message = message.replacingOccurrences(of: secret, with: "***")
        }
        return ConninfoSecrets.scrub(message)
    }

    static func trimmed(_ text: UnsafePointer<CChar>?) -> String? {
        guard let text else { return nil }
        let string = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return string.isEmpty ? nil : string
    }
}
