import Foundation
import HeraldCore
import HeraldPostgres
import Logging

/// The checks of the database before anything is claimed. A schema behind this binary is refused (see
/// `SchemaVersion`); one ahead of it, or one whose migrations cannot be read, is run against, with a
/// warning. A `--shard` the queue's partitions do not match is a configuration error; a statement that
/// fails while checking either is a database error.
struct Preflight {
    let db: PGConnection
    let logger: Logger

    /// Nil when the pass may go on; else its exit code, its error and the log line.
    func check(shard: Shard?) -> (ExitCode, String, Logger.Message)? {
        do {
            switch try SchemaVersion.check(db) {
            case nil:
                logger.warning("cannot read which migrations the database has (schema_migrations): run `herald migrate`, or grant select on it, so a pass can tell a schema behind its release",
                               metadata: ["herald_schema": "\(SchemaVersion.required)"])
            case let applied? where applied > SchemaVersion.required:
                logger.warning("the database's schema is newer than this herald: deploy the release that matches it",
                               metadata: ["schema": "\(applied)", "herald_schema": "\(SchemaVersion.required)"])
            default:
                break
            }
        } catch let error as SchemaBehind {
            return (.configuration, "\(error)", "configuration error")
        } catch {
            return (.database, "cannot read the database's schema version: \(error)", "cannot read the database's schema version")
        }
        guard let shard else { return nil }
        do {
            try QueueStore.checkShard(shard, db: db)
        } catch let error as ShardMismatch {
            return (.configuration, "\(error)", "configuration error")
        } catch {
            return (.database, "cannot read the queue's partitions: \(error)", "cannot read the queue's partitions")
        }
        return nil
    }
}
