import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

@Suite struct TransactionTests {
    @Test func commitsAndRollsBackOnThrow() throws {
        let conn = try serverConnection()
        try conn.execute("create temp table t (id int)")
        let value = try conn.transaction { conn in
            try conn.execute("insert into t values (\(1))")
            return "done"
        }
        #expect(value == "done")
        #expect(throws: TestFailure.self) {
            try conn.transaction { conn in
                try conn.execute("insert into t values (\(2))")
                throw TestFailure()
            }
        }
        #expect(try conn.query("select id from t").map { $0["id"].int } == [1])
        #expect(!conn.isInTransaction)
        #expect(throws: PGError.self) { try conn.execute("savepoint outside") }  // only inside a transaction block
        try conn.transaction { conn in #expect(conn.isInTransaction) }
    }

    @Test func nestedTransactionsUseSavepoints() throws {
        let conn = try serverConnection()
        try conn.execute("create temp table t (id int)")
        try conn.transaction { conn in
            try conn.execute("insert into t values (\(1))")
            _ = try? conn.transaction { conn in
                try conn.execute("insert into t values (\(2))")
                throw TestFailure()
            }
            try conn.transaction { conn in try conn.execute("insert into t values (\(3))") }
        }
        #expect(try conn.query("select id from t order by id").map { $0["id"].int } == [1, 3])
    }

    @Test func aSwallowedSQLErrorRollsBack() throws {
        let conn = try serverConnection()
        try conn.execute("create temp table t (id int primary key)")
        let error = try #require(throws: PGError.self) {
            try conn.transaction { conn in
                try conn.execute("insert into t values (\(1))")
                _ = try? conn.execute("insert into t values (\(1))")  // fails; transaction aborted
            }
        }
        #expect(error.sqlState == "25P02")
        #expect(try conn.query("select count(*) as n from t")[0]["n"].int == 0)
    }
}
