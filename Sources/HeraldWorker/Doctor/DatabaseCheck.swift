/// What `herald doctor` learned of the database (read by `DatabaseFacts.read`), judged without I/O:
/// `database.connect`, `database.schema` (the newest migration recorded against
/// `SchemaVersion.required`), `database.grants` (`PassGrants` and row-level security),
/// `database.search_path` (a warning when a role but the owner may create where herald's functions look
/// names up: `SearchPathCheck`) and
/// `database.listen` (a warning when `LISTEN` cannot work, as through a transaction pooler: passes do
/// not need it).
///
///     DatabaseCheck.checks(facts)   // ok   database.schema  migration 33 of 33
enum DatabaseCheck {
    static func checks(_ facts: DatabaseFacts) -> [DoctorCheck] {
        [
            DoctorCheck("database.connect", .ok,
                        "PostgreSQL \(facts.serverVersion), database \(facts.database), as role \(facts.role)"),
            schema(facts.appliedMigration, required: SchemaVersion.required,
                   hidden: facts.rowSecurity.contains("schema_migrations"), missingTables: facts.missingTables),
            grants(facts),
            SearchPathCheck.check(facts.schemaCreators, schemas: facts.functionSchemas),
            listen(facts.listen),
        ]
    }

    /// `hidden`: row-level security filters `schema_migrations` for the role, which then sees none.
    /// `missingTables`: the tables a pass touches that the database does not have.
    static func schema(_ applied: Int?, required: Int, hidden: Bool = false, missingTables: [String] = []) -> DoctorCheck {
        if missingTables.count == PassGrants.tables.count {
            return DoctorCheck("database.schema", .fail, "herald's schema is not there: none of the \(PassGrants.tables.count) tables a pass touches exists; run `herald migrate` against this database")
        }
        if applied == nil, !missingTables.isEmpty {
            let others = missingTables.filter { $0 != "schema_migrations" }
            return DoctorCheck("database.schema", .fail, "no schema_migrations, and tables a pass touches are missing (\(names(others))): run `herald migrate` against this database")
        }
        if hidden, applied == 0 {
            return DoctorCheck("database.schema", .fail, "the role sees no migration: row-level security hides schema_migrations' rows from it, and a pass would refuse the database (see database.grants)")
        }
        guard let applied else {
            return DoctorCheck("database.schema", .warn, "which migrations were applied cannot be read (no schema_migrations, or no select on it): a pass runs without knowing; run `herald migrate`, or grant select on it")
        }
        if applied < required {
            return DoctorCheck("database.schema", .fail, "migration \(applied) of \(required): the database is behind this release, and a pass would refuse it; run `herald migrate` with this release's sql/")
        }
        if applied > required {
            return DoctorCheck("database.schema", .warn, "migration \(applied), newer than this release's \(required): a pass runs against it; deploy the release that matches")
        }
        return DoctorCheck("database.schema", .ok, "migration \(applied) of \(required)")
    }

    static func grants(_ facts: DatabaseFacts) -> DoctorCheck {
        var problems: [String] = []
        if !facts.missingPrivileges.isEmpty {
            problems.append("lacks " + facts.missingPrivileges.joined(separator: ", "))
        }
        if !facts.missingExecute.isEmpty {
            problems.append("cannot execute " + facts.missingExecute.joined(separator: ", "))
        }
        if !facts.missingTables.isEmpty {
            problems.append("finds no table " + names(facts.missingTables, noun: "tables"))
        }
        if !facts.missingFunctions.isEmpty {
            problems.append("finds no function " + names(facts.missingFunctions, noun: "functions"))
        }
        if !facts.missingTables.isEmpty || !facts.missingFunctions.isEmpty {
            problems.append("they are missing: run `herald migrate`")
        }
        if !facts.rowSecurity.isEmpty {
            problems.append("sees the rows of " + names(facts.rowSecurity)
                            + " through row-level security only: connect as the tables' owner or a role with BYPASSRLS")
        }
        guard problems.isEmpty else {
            return DoctorCheck("database.grants", .fail, "role \(facts.role) " + problems.joined(separator: "; "))
        }
        return DoctorCheck("database.grants", .ok, "role \(facts.role) may read and write all \(PassGrants.tables.count) tables a pass touches, and call its functions")
    }

    /// Up to three names, then how many more.
    static func names(_ all: [String], noun: String = "tables") -> String {
        all.count <= 3 ? all.joined(separator: ", ") : all.prefix(3).joined(separator: ", ") + " and \(all.count - 3) more \(noun)"
    }

    static func listen(_ result: DatabaseFacts.Listen) -> DoctorCheck {
        switch result {
        case .works:
            return DoctorCheck("database.listen", .ok, "LISTEN works: a NOTIFY from another connection arrived")
        case .silent(let waited):
            return DoctorCheck("database.listen", .warn, "LISTEN is not possible: a NOTIFY from another connection did not arrive within \(ClockCheck.seconds(waited)) s, as through a transaction pooler (PgBouncer in transaction mode); passes do not need it")
        case .refused(let error):
            return DoctorCheck("database.listen", .warn, "LISTEN is not possible: \(error); passes do not need it")
        }
    }
}
