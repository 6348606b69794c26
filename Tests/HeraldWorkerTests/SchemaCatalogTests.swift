import Foundation
import HeraldCore
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Two catalog checks that hold every migration to the schema's rules: each foreign key has an index
/// that serves it, and each table has row-level security.
@Suite struct SchemaCatalogTests {
    /// Foreign keys with no index whose leading columns are the key's: a delete of the parent scans the
    /// child table once per row (pruning the queue cascades to deliveries, events and receipts). A
    /// partial index counts when it only leaves out nulls, which a lookup by key never wants.
    static func unindexedForeignKeys(_ db: PGConnection) throws -> [String] {
        try db.query("""
            select c.conrelid::regclass::text || '.' || c.conname as fk
              from pg_constraint c
             where c.contype = 'f' and c.connamespace = 'public'::regnamespace
               and not exists (
                 select 1 from pg_index i
                  where i.indrelid = c.conrelid and i.indisvalid
                    and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] = c.conkey
                    and (i.indpred is null
                         or (cardinality(c.conkey) = 1
                             and pg_get_expr(i.indpred, i.indrelid) = format('(%I IS NOT NULL)',
                               (select a.attname from pg_attribute a
                                 where a.attrelid = c.conrelid and a.attnum = c.conkey[1])))))
             order by 1
            """).compactMap { $0["fk"].string }
    }

    @Test func everyForeignKeyHasAnIndex() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            // The queue's children (push_receipts, inbox) and the schema's other references; the audit trail has none (it outlives the queue).
            #expect(try db.query("select count(*) from pg_constraint where contype = 'f'").first?[0].int ?? 0 >= 4)
            #expect(try Self.unindexedForeignKeys(db) == [])
        }
    }

    /// Holds later migrations to the rule in 008's header: a new table must enable row-level security
    /// (`select herald_restrict_table('t')`), and must not force it on herald, the owner.
    @Test func everyTableHasRowLevelSecurity() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let rows = try db.query("""
                select relname, relrowsecurity, relforcerowsecurity from pg_class
                 where relnamespace = 'public'::regnamespace and relkind in ('r', 'p')
                """)
            #expect(rows.count >= 19)
            for row in rows {
                let name = row["relname"].string ?? "?"
                #expect(row["relrowsecurity"].bool == true, "\(name) has row-level security off")
                #expect(row["relforcerowsecurity"].bool == false, "\(name) forces row-level security on its owner")
            }
        }
    }
}
