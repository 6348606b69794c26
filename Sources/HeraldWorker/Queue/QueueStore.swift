import Foundation
import HeraldCore
import HeraldPostgres

/// The queue's SQL: claim, context, record, housekeeping. Every value is a bound parameter; every
/// statement works on a whole batch; no statement here is ever run while a network request is in flight
/// inside the same transaction.
/// A claimed row and how many attempts it may use.
public struct Claimed: Sendable {
    public var item: QueueItem
    public var maxAttempts: Int
}

public struct QueueStore {
    public let db: PGConnection
    public let passId: String
    /// The partition a pinned pass (`--shard K/N`) works in; nil: the whole queue.
    public let shard: Shard?
    /// The pass's clock: its lease time (`PassClock.lease`) judges the leases this store reads and sets.
    public var clock: PassClock
    /// Runs inside the claim, once its candidates are locked and before they are updated: where a
    /// test does what an operator or another pass could do at that moment. Nil outside tests.
    var afterCandidates: (() throws -> Void)?

    public init(db: PGConnection, passId: String, shard: Shard? = nil, clock: PassClock = PassClock(now: nil)) {
        self.db = db
        self.passId = passId
        self.shard = shard
        self.clock = clock
    }

    /// The table this pass claims, reads and records in: the queue, or its shard's partition — so each
    /// statement of a pinned pass touches one partition (on Citus, one shard).
    var queue: SQL { SQL(unescaped: shard?.table ?? "notification_queue") }

    /// A housekeeping lock key of this pass's part of the queue: pinned passes of different shards do
    /// their partitions' housekeeping side by side.
    func lockKey(_ base: Int) -> Int { base + (shard.map { ($0.index + 1) << 8 } ?? 0) }

    /// Whether the database's queue has `shard.count` partitions; throws a readable error if not.
    public static func checkShard(_ shard: Shard, db: PGConnection) throws {
        let partitions = try db.query("select herald_queue_partitions() as n").first?["n"].int ?? 1
        guard partitions == shard.count else {
            throw ShardMismatch(shard: shard, partitions: partitions)
        }
    }

    /// Advisory lock keys: housekeeping that only one pass at a time should do.
    static let housekeepingLock = 0x6865_7261_6C64_01  // "herald" + 1
}

/// `--shard K/N` against a queue that does not have N partitions.
public struct ShardMismatch: Error, CustomStringConvertible {
    public let shard: Shard
    public let partitions: Int

    public var description: String {
        partitions == 1
            ? "--shard \(shard) needs a queue in \(shard.count) partitions, but it is one table: run `herald migrate --queue-partitions \(shard.count)` first"
            : "--shard \(shard) needs a queue in \(shard.count) partitions, but it has \(partitions): pass --shard K/\(partitions)"
    }
}
