import Foundation
import HeraldPostgres
import HeraldTestSupport
import Testing

/// Storage settings of the tables whose rows are updated in place by every pass (migrations 027, 029):
/// room on each page for a row's next version keeps the update on its page.
@Suite struct StorageTests {
    @Test func tablesUpdatedInPlaceLeaveRoomOnTheirPages() throws {
        try withTestDatabase { tdb in
            let db = try tdb.connect()
            let rows = try db.query("""
                select c.relname::text as t, o.option_value as ff from pg_class c
                  join pg_options_to_table(c.reloptions) o on o.option_name = 'fillfactor'
                 where c.relname in ('notification_queue', 'pattern_evaluations') and c.relnamespace = 'public'::regnamespace
                 order by 1
                """)
            #expect(rows.map { "\($0["t"].string ?? "?"):\($0["ff"].string ?? "?")" }
                    == ["notification_queue:45", "pattern_evaluations:50"])
        }
    }
}
