import Foundation

/// What to do about a database connection that failed, read from libpq's message: an unknown database
/// or role, a refused password, nothing listening, a host name that does not resolve, a server whose
/// pg_hba.conf admits no such connection. Anything else, or no `DATABASE_URL` at all, gets the general
/// hint. `herald run`, `herald doctor` and the other commands print it beside the error.
///
///     ConnectionHint.for("… FATAL:  database \"app\" does not exist", urlSet: true)
///     // "the database app does not exist on that server: create it, or correct the database name in DATABASE_URL"
public enum ConnectionHint {
    /// The hint when nothing more precise is known.
    public static let general = "set DATABASE_URL (a postgresql:// URI or a libpq conninfo), or libpq's PG* variables"

    public static func `for`(_ message: String, urlSet: Bool) -> String {
        if let name = quoted(message, before: "\" does not exist", after: "database \"") {
            return "the database \(name) does not exist on that server: create it (createdb \(name)), or correct the database name in DATABASE_URL"
        }
        if let name = quoted(message, before: "\" does not exist", after: "role \"") {
            return "the role \(name) does not exist on that server: create it, or correct the user in DATABASE_URL"
        }
        if message.contains("password authentication failed") || message.contains("no password supplied") {
            let user = quoted(message, before: "\"", after: "for user \"").map { " for \($0)" } ?? ""
            return "the server refused the password\(user): correct it in DATABASE_URL, its _FILE, PGPASSWORD or ~/.pgpass"
        }
        if message.contains("Connection refused") {
            return "nothing accepts connections at that host and port: start PostgreSQL there, or correct the host and port in DATABASE_URL"
        }
        if message.contains("could not translate host name") {
            return "the host name does not resolve: correct the host in DATABASE_URL"
        }
        if message.contains("no pg_hba.conf entry") {
            return "the server's pg_hba.conf admits no connection from this host as this user to this database: add an entry there, or connect as another user"
        }
        if message.contains("timeout expired") {
            return "the server did not answer in time: check the host, port and firewall, or raise connect_timeout in DATABASE_URL"
        }
        return urlSet ? "check DATABASE_URL (a postgresql:// URI or a libpq conninfo) and that the server accepts this connection" : general
    }

    /// The text between `after` and the next `before` in `message`.
    static func quoted(_ message: String, before: String, after: String) -> String? {
        guard let start = message.range(of: after) else { return nil }
        let rest = message[start.upperBound...]
        guard let end = rest.range(of: before) else { return nil }
        let name = String(rest[..<end.lowerBound])
        return name.isEmpty || name.contains("\"") ? nil : name
    }
}
