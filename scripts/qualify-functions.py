#!/usr/bin/env python3
"""Writes the migration that makes every herald function resolve names in pg_catalog only.

    scripts/qualify-functions.py SERVER_URL [--output sql/NNN_name.sql] [--check]

SERVER_URL is any database of a PostgreSQL server herald may create databases on (scripts/pg.sh's URL).
The script creates a scratch database, applies sql/ up to the migration before the output's number, reads
every function herald defined in `public`, and writes the output migration: each function re-created with
`set search_path = pg_catalog, pg_temp`, its body naming herald's tables, views, types, sequences and
functions as public.<name>. The output depends only on the migrations before it, so running it again
gives the same file. `--check` writes nothing and exits 1 when the file differs from what it would write.

It fails, naming the function, on anything it cannot rewrite for certain: dynamic SQL or DDL (unless the
function is reviewed below), current_schema() or search_path in a body, a parameter, variable or
column named like one of herald's relations, a body not in SQL or PL/pgSQL.

PostgreSQL inlines an IMMUTABLE one-expression SQL helper into its caller, but not once it has a SET clause.
The helpers on a hot path (INLINE below) are written into their callers instead, wherever every argument is
a column, variable or constant, behind a comment naming the call, so that path costs what it did.
"""
import argparse, difflib, hashlib, json, os, re, subprocess, sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from function_rewrite import Catalog, Unrewritable, inline_form, inline_helpers, qualify  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = "pg_catalog, pg_temp"
HAND = os.path.join(ROOT, "scripts", "qualified-by-hand")
# Bodies with DDL or dynamic SQL, qualified by hand in scripts/qualified-by-hand/<name>.sql, pinned to the
# md5 of the body they replace: a changed body must be qualified by hand again.
BY_HAND = {
    "herald_audit_partitions": "83a80d2764fc5e6de6a9a14358be2ce7",
    "herald_partition_queue": "202b3ad78bd9cf492b7950584c035bdb",
}
# Dynamic SQL reviewed as resolving nothing through search_path: it formats only regclass values (printed
# schema-qualified when their schema is not on the path) and role names.
REVIEWED_DYNAMIC = {
    "herald_restrict_table": "996b075d204dfa10be54a9f6e4ad8178",
    "herald_audit_drop_before": "9f216d40678a1630641c36d204ac7df4",
    # Formats only regprocedure values; decides by pg_proc.proname, not by their text.
    "herald_grant_app_roles": "b9219e27192a2e863b645be2ddb38d1e",
}
# Helpers written into their callers, and why.
INLINE = {
    "herald_payload_text": "the queue's entry trigger calls it six times a row enqueued",
    "herald_ms": "the app's lists call it for every entry they return",
}


CATALOG = """
select json_build_object(
  'functions', (select json_agg(json_build_object(
      'name', p.proname, 'identity', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
      'kind', p.prokind, 'language', l.lanname, 'volatility', p.provolatile, 'strict', p.proisstrict,
      'definer', p.prosecdef, 'retset', p.proretset, 'standard_body', p.prosqlbody is not null,
      'argnames', p.proargnames, 'nargs', p.pronargs, 'ndefaults', p.pronargdefaults,
      'intypes', (select json_agg(format_type(t, null) order by o) from unnest(p.proargtypes::oid[]) with ordinality a(t, o)),
      'rettype', format_type(p.prorettype, null), 'source', p.prosrc,
      'definition', case when p.prokind = 'f' then pg_get_functiondef(p.oid) end,
      'extension', exists (select from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid
                                                    and d.deptype = 'e'))
    order by p.proname, pg_get_function_identity_arguments(p.oid))
    from pg_proc p join pg_language l on l.oid = p.prolang where p.pronamespace = 'public'::regnamespace),
  'relations', (select json_agg(c.relname order by c.relname) from pg_class c
                 where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S', 'c')),
  'types', (select json_agg(t.typname order by t.typname) from pg_type t
             where t.typnamespace = 'public'::regnamespace and t.typtype in ('d', 'e', 'r', 'm')),
  'columns', (select json_agg(distinct a.attname) from pg_attribute a join pg_class c on c.oid = a.attrelid
               where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f', 'c')
                 and a.attnum > 0 and not a.attisdropped))
"""


def psql(url, *commands, stdin=None):
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", url]
    for command in commands:
        args += ["-c", command]
    done = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise Unrewritable("psql: " + done.stderr.strip())
    return done.stdout


def database_url(server, name):
    """SERVER_URL with its database replaced: a URI (postgresql://…/db?…) or a conninfo (dbname=…)."""
    if "://" in server:
        m = re.match(r"([^/]*//[^/?]*)(/[^?]*)?(\?.*)?$", server)
        return m.group(1) + "/" + name + (m.group(3) or "")
    return server + " dbname=" + name


def migrations_before(number):
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "sql")) if re.fullmatch(r"\d+_.+\.sql", f))
    return [f for f in files if int(f.split("_")[0]) < number]


def read_catalog(server, number):
    """Applies sql/ before `number` to a scratch database (as `herald migrate` does) and reads it."""
    name = f"herald_qualify_{os.getpid()}"
    psql(server, f"drop database if exists {name}", f"create database {name}")
    try:
        url = database_url(server, name)
        psql(url, "create table schema_migrations (version integer primary key, name text not null, "
                  "checksum text not null, applied_at timestamptz not null default now())")
        for f in migrations_before(number):
            with open(os.path.join(ROOT, "sql", f), encoding="utf-8") as text:
                version, rest = f[:-4].split("_", 1)
                psql(url, text.read() + f"\n;insert into schema_migrations (version, name, checksum) "
                                        f"values ({int(version)}, '{rest}', '')")
        return json.loads(psql(url, f"set search_path = {PATH}", CATALOG)), url, name
    except BaseException:
        psql(server, f"drop database if exists {name} with (force)")
        raise


def by_hand(fn):
    with open(os.path.join(HAND, fn["name"] + ".sql"), encoding="utf-8") as f:
        return f.read()


def pinned(fn, table):
    digest = hashlib.md5(fn["source"].encode()).hexdigest()
    if table[fn["name"]] != digest:
        raise Unrewritable(f"{fn['identity']}: its body changed (md5 {digest}) since it was reviewed by hand: "
                           f"review it again (scripts/qualified-by-hand/) and pin the new md5 in this script")


def statement(fn, body):
    """pg_get_functiondef's CREATE OR REPLACE (read with search_path = pg_catalog: types qualified), with
    the new body and the search_path setting."""
    definition = fn["definition"]
    head, sep, _ = definition.partition("\nAS $")
    if not sep or fn["standard_body"]:
        raise Unrewritable(f"{fn['identity']}: not a function with a string body")
    lines = [line for line in head.split("\n") if not line.startswith(" SET search_path ")]
    tag = "$function$"
    while tag in body:
        tag = tag[:-1] + "_$"
    setting = " SET search_path TO " + ", ".join(f"'{p.strip()}'" for p in PATH.split(","))
    return "\n".join(lines + [setting, f"AS {tag}{body}{tag};\n"])


def generate(facts):
    catalog = Catalog(facts)
    bodies, statements = {}, []
    for fn in catalog.functions:
        if fn["kind"] != "f" or fn["language"] not in ("sql", "plpgsql"):
            raise Unrewritable(f"{fn['identity']}: a {fn['language']} {fn['kind']} is not rewritten by this script")
        if fn["name"] in BY_HAND:
            pinned(fn, BY_HAND)
            bodies[fn["identity"]] = by_hand(fn)
            continue
        if fn["name"] in REVIEWED_DYNAMIC:
            pinned(fn, REVIEWED_DYNAMIC)
        bodies[fn["identity"]] = qualify(fn, catalog, fn["source"], fn["name"] in REVIEWED_DYNAMIC)
    helpers = {}
    for name in INLINE:
        fn = next((f for f in catalog.functions if f["name"] == name), None)
        expression = inline_form(fn, bodies[fn["identity"]]) if fn else None
        if expression is None:
            raise Unrewritable(f"{name} is no longer an IMMUTABLE one-expression SQL function: take it out of INLINE")
        helpers[name] = (fn, expression)
    for fn in catalog.functions:
        body = bodies[fn["identity"]]
        if fn["name"] not in BY_HAND:
            body = inline_helpers(body, {k: v for k, v in helpers.items() if k != fn["name"]})
        statements.append(statement(fn, body))
    return statements, sorted(helpers)


HEADER = """\
-- Every herald function resolves names in pg_catalog only (`search_path = pg_catalog, pg_temp`) and names
-- herald's own tables, views, types, sequences and functions as public.<name>. A SECURITY DEFINER body
-- (and whatever it calls) runs as herald's owner; with `public` on its path, a role that may create in
-- public could put a better-matching function there (public.to_timestamp(numeric) beats the built-in's
-- double precision; an exact-typed overload beats `any`/polymorphic built-ins) and have it run as the owner.
--
-- GENERATED by scripts/qualify-functions.py from the functions of sql/{first}-{last}; do not edit by hand.
-- Until it is released, regenerate it whenever a migration numbered below it is added, then update its
-- line in Tests/HeraldWorkerTests/ReleasedMigrationTests.swift (that test prints the new checksum):
--   url=$(HERALD_PG_PORT=25499 scripts/pg.sh start)
--   scripts/qualify-functions.py "$url" --output {output}
--   HERALD_PG_PORT=25499 scripts/pg.sh stop
-- Its test (QualifiedFunctionTests) fails while this file differs from what the script writes.
--
-- PostgreSQL inlined these IMMUTABLE one-expression SQL helpers into their callers, which it does not do
-- for a function with a SET clause; they are written into their callers here instead (a comment names
-- each call): {helpers}.

"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("server_url")
    parser.add_argument("--output", default="sql/051_functions_resolve_in_catalog.sql")
    parser.add_argument("--check", action="store_true", help="exit 1 if the output file differs")
    options = parser.parse_args()
    output = options.output if os.path.isabs(options.output) else os.path.join(ROOT, options.output)
    number = int(os.path.basename(output).split("_")[0])
    facts, url, name = read_catalog(options.server_url, number)
    try:
        statements, helpers = generate(facts)
        before = migrations_before(number)
        text = HEADER.format(first=before[0][:3], last=before[-1][:3], helpers="; ".join(f"{h} ({INLINE[h]})" for h in helpers) or "none",
                             output=os.path.relpath(output, ROOT)) + "\n".join(statements)
        # Applied to the scratch database with only pg_catalog on the path, then rolled back: a SQL body
        # naming herald's objects unqualified, or a PL/pgSQL body that no longer parses, fails here.
        psql(url, stdin=f"begin;\nset local search_path = {PATH};\n{text}\nrollback;\n")
    finally:
        psql(options.server_url, f"drop database if exists {name} with (force)")
    current = open(output, encoding="utf-8").read() if os.path.exists(output) else ""
    if options.check:
        if current != text:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                       os.path.relpath(output, ROOT), "generated"))
            return 1
        return 0
    with open(output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{os.path.relpath(output, ROOT)}: {len(statements)} functions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Unrewritable as error:
        print(f"qualify-functions: {error}", file=sys.stderr)
        sys.exit(2)
