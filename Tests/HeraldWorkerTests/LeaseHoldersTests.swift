import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
@testable import HeraldWorker
import Testing

/// A claim leaves out the recipients whose rows another pass holds under a live lease, and reads them
/// only while another pass's note in `herald_lease_holders` lasts: each claim writes its pass's note
/// (the latest end of its leases) with its leases, and a drain that recorded every row it claimed
/// takes its note away. A pass alone on the queue reads nothing.
@Suite struct LeaseHoldersTests {
    /// The notes, by pass.
    static func notes(_ db: PGConnection) throws -> [String: Date] {
        var notes: [String: Date] = [:]
        for row in try db.query("select pass_id, until from herald_lease_holders") {
            if let pass = row["pass_id"].string, let until = row["until"].date { notes[pass] = until }
        }
        return notes
    }

    /// A claim notes until when its pass holds a lease: its rows' lease end. A pass's drain that
    /// recorded what it claimed leaves no note of its own; another pass's note stays.
    @Test func aClaimNotesItsLeasesAndADrainThatRecordedEverythingTakesItsNoteAway() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            #expect(try Self.notes(db).isEmpty)  // a new database: no pass of an earlier release to wait for
            let recipients = try (0..<3).map { _ in try f.profile() }
            try f.enqueueMany(3, to: recipients, channel: "in_app", at: seedInstant)

            let store = QueueStore(db: try tdb.connect(), passId: "pass-a")
            #expect(try store.claimRows(limit: 2, now: seedInstant, channels: [.inApp], leaseSeconds: 600).count == 2)
            let leaseEnd = try #require(try db.query("""
                select max(locked_until) as until from notification_queue where locked_by = 'pass-a'
                """).first?["until"].date)
            #expect(try Self.notes(db) == ["pass-a": leaseEnd])

            let (summary, code) = Worker(url: tdb.url).run(now: seedInstant.addingTimeInterval(60), batchSize: 10, drain: true)
            #expect(code == .ok && summary.sent == 1)
            #expect(try Self.notes(db) == ["pass-a": leaseEnd])
        }
    }

    /// While another pass's note lasts, a claim leaves out the recipient whose row that pass holds;
    /// with no note lasting past the claim's lease time, the claim reads no one's rows and takes the
    /// recipient's next row (as it would once that pass's lease ended).
    @Test func aClaimReadsTheRecipientsOthersHoldOnlyWhileAnotherPasssNoteLasts() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let f = Fixtures(db: db)
            let person = try f.profile()
            let first = try f.enqueue(to: person, at: seedInstant.addingTimeInterval(-2))
            let second = try f.enqueue(to: person, at: seedInstant.addingTimeInterval(-1))
            let other = QueueStore(db: try tdb.connect(), passId: "pass-other")
            let mine = QueueStore(db: try tdb.connect(), passId: "pass-mine")
            #expect(try other.claimRows(limit: 1, now: seedInstant, channels: [.inApp], leaseSeconds: 600).map(\.item.id) == [first])

            let held = try mine.claim(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 600)
            #expect(held.rows.isEmpty && held.contended)

            try db.execute("update herald_lease_holders set until = now() - interval '1 second' where pass_id = 'pass-other'")
            #expect(try mine.claimRows(limit: 10, now: seedInstant, channels: [.inApp], leaseSeconds: 600).map(\.item.id) == [second])
        }
    }
}
