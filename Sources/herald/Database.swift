import Foundation
import HeraldPostgres
import HeraldWorker

/// Opens the database the way every subcommand does; a failure is exit code 2 with a hint.
func connect(_ settings: Settings) throws -> PGConnection {
    let url: String
    do {
        url = try settings.databaseURL() ?? ""
    } catch {
        FileHandle.standardError.write(Data("herald: \(error)\n".utf8))
        throw ExitNow(code: .configuration)
    }
    do {
        return try PGConnection(url)
    } catch {
        FileHandle.standardError.write(Data("""
            herald: cannot reach the database: \(error)
            herald: set DATABASE_URL (a postgresql:// URI or a libpq conninfo), or libpq's PG* variables

            """.utf8))
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
        FileHandle.standardError.write(Data("herald: database error: \(e)\n".utf8))
        throw ExitNow(code: .database)
    }
}
