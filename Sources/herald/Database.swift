import Foundation
import HeraldHTTP
import HeraldPostgres
import HeraldWorker

/// Opens the database the way every subcommand does: a `DATABASE_URL` libpq cannot read is exit code 1,
/// a database that cannot be reached exit code 2 with a hint.
func connect(_ settings: Settings) throws -> PGConnection {
    let url: String
    do {
        url = try settings.databaseURL() ?? ""
    } catch {
        BestEffortOutput.standardError("herald: \(error)\n")
        throw ExitNow(code: .configuration)
    }
    do {
        return try PGConnection(url)
    } catch {
        BestEffortOutput.standardError("""
            herald: cannot reach the database: \(error)
            herald: \(ConnectionHint.for("\(error)", urlSet: !url.isEmpty))

            """)
        throw ExitNow(code: .database)
    }
}

/// Runs a database step; a statement that fails is exit code 2.
func databaseStep<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let e as ExitNow {
        throw e
    } catch let e as PGError {
        BestEffortOutput.standardError("herald: database error: \(e)\n")
        throw ExitNow(code: .database)
    }
}
