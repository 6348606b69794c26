import Foundation
import HeraldPostgres
import Testing

/// `PGConnection.stream` and `PGRowStream`: rows one at a time, and whatever happens to the query
/// (an error, a throwing closure, a timeout, a stream dropped early), the connection is ready for
/// the next statement afterwards.
@Suite struct RowStreamTests {
    struct Stop: Error {}

    /// Asserts that `conn` runs statements again, outside any transaction.
    func expectUsable(_ conn: PGConnection, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(!conn.inTransaction, sourceLocation: sourceLocation)
        #expect(try conn.query("select 40 + \(2) as v")[0]["v"].int == 42, sourceLocation: sourceLocation)
        try conn.transaction { try $0.execute("select 1") }
    }

    @Test func manyRowsArriveInOrderWithTheirColumns() throws {
        let conn = try serverConnection()
        var next = 1, sum = 0
        let count = try conn.stream("""
            select g as n, md5(g::text) as h, case when g % 7 = 0 then null else g * 0.5 end as half
              from generate_series(1, \(200_000)) g
            """) { row in
            #expect(row.int(at: 0) == next)
            if next % 50_000 == 0 {
                #expect(row.columns == ["n", "h", "half"])
                #expect(row["h"].string?.count == 32)
                #expect(row["half"].double == Double(next) * 0.5)
            }
            if next % 7 == 0 { #expect(row["half"].isNull) }
            sum += row.int(at: 0) ?? 0
            next += 1
        }
        #expect(count == 200_000)
        #expect(sum == 200_000 * 200_001 / 2)
        try expectUsable(conn)
    }

    @Test func zeroRowsAndStatementsWithoutRows() throws {
        let conn = try serverConnection()
        var called = 0
        #expect(try conn.stream("select 1 as v where \(false)") { _ in called += 1 } == 0)
        #expect(try conn.stream("create temp table streamed (v int)") { _ in called += 1 } == 0)
        #expect(try conn.stream("insert into streamed select generate_series(1, 3)") { _ in called += 1 } == 0)
        var returned: Int?
        #expect(try conn.stream("insert into streamed values (\(4)) returning v") { row in
            returned = row["v"].int
            called += 1
        } == 1)
        #expect(returned == 4)
        #expect(called == 1)
        try expectUsable(conn)
    }

    /// Rows may outlive the closure: a kept row keeps its own result (the stream reuses a row's
    /// storage for the next one only when nothing else refers to it).
    @Test func keptRowsStayReadable() throws {
        let conn = try serverConnection()
        var kept: [PGRow] = []
        try conn.stream("select g, 'row ' || g as label from generate_series(1, 1000) g") { kept.append($0) }
        #expect(kept.count == 1000)
        #expect(kept[999]["label"].string == "row 1000")
        #expect(kept.map { $0.int(at: 0) ?? 0 } == Array(1...1000))

        // Every seventh row kept, the others dropped as read.
        var some: [PGRow] = []
        var seen = 0
        try conn.stream("select g, 'row ' || g as label from generate_series(1, 1000) g") { row in
            #expect(row.int(at: 0) == seen + 1)
            seen += 1
            if seen % 7 == 0 { some.append(row) }
        }
        #expect(some.map { $0["label"].string ?? "" } == stride(from: 7, through: 1000, by: 7).map { "row \($0)" })
    }

    @Test func boundParameters() throws {
        let conn = try serverConnection()
        let ids = (0..<5).map { _ in UUID() }
        var seen: [UUID] = []
        try conn.stream("select u from unnest(\(ids)::uuid[]) with ordinality x(u, i) where i > \(1) order by i") { row in
            if let u = row.uuid(at: 0) { seen.append(u) }
        }
        #expect(seen == Array(ids.dropFirst()))
    }

    /// The server fails the query after it has sent rows: the error is thrown, with its SQLSTATE,
    /// and the connection is ready.
    @Test func anErrorMidStream() throws {
        let conn = try serverConnection()
        var rows = 0
        let error = try #require(throws: PGError.self) {
            try conn.stream("select 1 / (\(150_000) - g) as v from generate_series(1, 200000) g") { _ in rows += 1 }
        }
        #expect(error.sqlState == "22012")
        #expect(!error.isConnectionFailure)
        #expect(rows < 150_000)
        try expectUsable(conn)
    }

    /// A closure that throws after a few rows of a query that would run for a very long time: the query
    /// is cancelled (draining it would take minutes), the closure's error comes out, and the connection
    /// is idle and ready, outside a transaction and inside one.
    @Test func aThrowingClosureCancelsTheQuery() throws {
        let conn = try serverConnection()
        let pid = try #require(try conn.query("select pg_backend_pid() as p")[0]["p"].int)
        var rows = 0
        #expect(throws: Stop.self) {
            try conn.stream("select generate_series(1, 2000000000) as g") { _ in
                rows += 1
                if rows == 10 { throw Stop() }
            }
        }
        #expect(rows == 10)
        try expectUsable(conn)
        let other = try serverConnection()
        #expect(try other.query("select state from pg_stat_activity where pid = \(pid)")[0]["state"].string == "idle")

        // In a transaction: the cancel aborts it, and `transaction` rolls it back.
        try conn.execute("create temp table kept (v int)")
        #expect(throws: Stop.self) {
            try conn.transaction { conn in
                try conn.execute("insert into kept values (1)")
                try conn.stream("select generate_series(1, 2000000000) as g") { _ in throw Stop() }
            }
        }
        #expect(try conn.query("select count(*) as n from kept")[0]["n"].int == 0)
        try expectUsable(conn)
    }

    /// The connection's timeouts apply to a streamed statement (in a transaction of its own, as
    /// `query` runs one), and stay out of the session.
    @Test func statementTimeoutEndsAStream() throws {
        let conn = try serverConnection()
        try conn.setTimeouts(statement: 200, lock: nil, idleInTransaction: nil)
        let error = try #require(throws: PGError.self) {
            try conn.stream("select pg_sleep(0.05), g from generate_series(1, 200) g") { _ in }
        }
        #expect(error.sqlState == PGError.queryCanceled)
        var setting: String?
        try conn.stream("select current_setting('statement_timeout') as t") { setting = $0["t"].string }
        #expect(setting == "200ms")
        try conn.setTimeouts(statement: 0, lock: nil, idleInTransaction: nil)
        try conn.executeScript("create temp table probe as select current_setting('statement_timeout') as t")
        #expect(try conn.query("select t from probe")[0][0].string == "0")
        try expectUsable(conn)
    }

    /// Another statement on the connection while its stream is being read is refused (libpq would
    /// otherwise drop the stream's remaining rows to run it), and the stream goes on to its end.
    @Test func anotherStatementDuringAStreamIsRefused() throws {
        let conn = try serverConnection()
        var refused = 0
        let count = try conn.stream("select generate_series(1, 100) as g") { row in
            if row.int(at: 0) == 50 {
                let error = try #require(throws: PGError.self) { try conn.query("select 1") }
                #expect(error.message.contains("streamed query"))
                refused += 1
            }
        }
        #expect(count == 100)
        #expect(refused == 1)
        try expectUsable(conn)
    }

    /// A `PGRowStream` read by hand and dropped before its end cancels its query.
    @Test func aStreamDroppedEarlyFreesTheConnection() throws {
        let conn = try serverConnection()
        do {
            let stream = try PGRowStream(conn, "select generate_series(1, 2000000000) as g")
            #expect(try stream.next()?.int(at: 0) == 1)
            #expect(try stream.next()?.int(at: 0) == 2)
            #expect(stream.count == 2)
        }
        try expectUsable(conn)
        let stream = try PGRowStream(conn, "select generate_series(1, 3) as g")
        var values: [Int] = []
        while let row = try stream.next() { values.append(row.int(at: 0) ?? 0) }
        #expect(values == [1, 2, 3])
        #expect(try stream.next() == nil)
        stream.cancel()  // after the end: nothing to do
        try expectUsable(conn)
    }

    /// The server ends the session mid-stream: a connection failure, not a hang or a trap.
    @Test func aConnectionLostMidStream() throws {
        let conn = try serverConnection()
        let pid = try #require(try conn.query("select pg_backend_pid() as p")[0]["p"].int)
        let other = try serverConnection()
        var rows = 0
        let error = try #require(throws: PGError.self) {
            try conn.stream("select generate_series(1, 2000000000) as g") { _ in
                rows += 1
                if rows == 5 { _ = try other.query("select pg_terminate_backend(\(pid))") }
            }
        }
        #expect(error.isConnectionFailure)
        #expect(!conn.isOpen)
        #expect(throws: PGError.self) { try conn.query("select 1") }
    }
}
