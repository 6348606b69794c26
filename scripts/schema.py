#!/usr/bin/env python3
"""Writes herald's schema as a fresh `herald migrate` leaves it, and where each object was last defined.

    scripts/schema.py SERVER_URL [--check] [--herald BIN] [--sql-dir DIR] [--schema FILE] [--index FILE]

SERVER_URL is any database of a PostgreSQL server herald may create databases on (scripts/pg.sh's URL);
`make schema` starts one and runs this. The script creates a scratch database prepared as Supabase prepares
one (scripts/supabase-like.sql, so that the grants to the app roles show), then applies the migrations one
at a time with `herald migrate` (BIN, default .build/debug/herald) and reads the schema with pg_dump after
each. It writes:

  docs/schema.sql        the schema after the last migration: pg_dump --schema-only --no-owner, without its
                         version lines and session settings, each object's header naming the migration that
                         last changed its definition;
  docs/schema-index.md   every table, view, type, sequence, function, trigger, policy and index, with the
                         migration that made it, the one that last changed it and the one that last set its
                         grants.

Left out: what scripts/supabase-like.sql made and no migration changed (Supabase's default privileges), and
the audit trail's monthly partitions (`<table>_YYYY_MM`), whose names are the months `herald migrate` ran
in. The output depends only on the migrations and PostgreSQL's major version: running it again gives the
same files. `--check` writes nothing and exits 1, saying to run `make schema`, when a file differs.
"""
import argparse, difflib, glob, hashlib, os, re, shutil, subprocess, sys, tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIGRATION = re.compile(r"(\d+)_.+\.sql")
HEADER = re.compile(r"^-- Name: (.*); Type: (.*); Schema: (.*); Owner: .*$")
# Monthly partitions of the audit trail: named by the month herald migrate (and later each pass) ran in.
MONTHLY = "public.*_[0-9][0-9][0-9][0-9]_[0-9][0-9]"
MIGRATOR = "herald migrate itself"
PREPARED = "scripts/supabase-like.sql"


class Failed(Exception):
    pass


def run(args, env=None, stdin=None):
    try:
        done = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env)
    except OSError as error:
        raise Failed(f"{args[0]}: {error.strerror}")
    if done.returncode != 0:
        raise Failed(f"{os.path.basename(args[0])}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def psql(url, *commands, file=None):
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", url]
    for command in commands:
        args += ["-c", command]
    if file:
        args += ["-f", file]
    return run(args)


def database_url(server, name):
    """SERVER_URL with its database replaced: a URI (postgresql://…/db?…) or a conninfo (dbname=…)."""
    if "://" in server:
        m = re.match(r"([^/]*//[^/?]*)(/[^?]*)?(\?.*)?$", server)
        return m.group(1) + "/" + name + (m.group(3) or "")
    return server + " dbname=" + name


def pg_dump_for(url):
    """The pg_dump of the server's major version (Debian installs each under /usr/lib/postgresql/N)."""
    major = int(psql(url, "show server_version_num").strip()) // 10000
    for path in [f"/usr/lib/postgresql/{major}/bin/pg_dump", shutil.which("pg_dump")]:
        if path and os.access(path, os.X_OK):
            return path, major
    raise Failed("pg_dump is not installed (run scripts/deps.sh)")


class Entry:
    """One object of pg_dump's output: its header's name, type and schema, and its statements."""

    def __init__(self, name, kind, schema, body):
        self.name, self.kind, self.schema, self.body = name, kind, schema, body
        self.digest = hashlib.md5(body.encode()).hexdigest()

    @property
    def key(self):
        return (self.kind, self.schema, self.name)


def dump(pg_dump, url):
    """The schema's objects in pg_dump's order (by kind, then name, dependencies first)."""
    text = run([pg_dump, "--schema-only", "--no-owner", "--exclude-table", MONTHLY, "-d", url])
    entries, current = [], None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = HEADER.match(lines[i])
        if m and i > 0 and lines[i - 1] == "--" and i + 1 < len(lines) and lines[i + 1] == "--":
            current = [m.group(1), m.group(2), m.group(3), []]
            entries.append(current)
            i += 2
            continue
        if current is not None:
            current[3].append(lines[i])
        i += 1
    out = []
    for name, kind, schema, body in entries:
        kept = [line for line in body[:-1] if not noise(line)] if body and body[-1] == "--" else \
               [line for line in body if not noise(line)]
        out.append(Entry(name, kind, schema, "\n".join(kept).strip("\n")))
    return out


def noise(line):
    """pg_dump's session settings, its version lines and its per-run restrict key."""
    return (line.startswith(("SET ", "SELECT pg_catalog.set_config(", "\\restrict", "\\unrestrict"))
            or line.startswith("-- Dumped ") or line in ("-- PostgreSQL database dump complete",
                                                         "-- PostgreSQL database dump"))


def migrations(sql_dir):
    files = sorted((int(MIGRATION.fullmatch(f).group(1)), f) for f in os.listdir(sql_dir) if MIGRATION.fullmatch(f))
    return [f for _, f in files]


class History:
    """For each object of pg_dump: the step that made it and the step that last changed its text."""

    def __init__(self, baseline):
        self.seen = {e.key: e.digest for e in baseline}
        self.made = {e.key: PREPARED for e in baseline}
        self.changed = {e.key: PREPARED for e in baseline}

    def step(self, entries, by, first):
        now = {e.key: e.digest for e in entries}
        for key, digest in now.items():
            label = MIGRATOR if first and owner(key) == "schema_migrations" and key not in self.seen else by
            if key not in self.seen:
                self.made[key] = label
            if self.seen.get(key) != digest:
                self.changed[key] = label
        for gone in set(self.seen) - set(now):
            self.made.pop(gone, None)
            self.changed.pop(gone, None)
        self.seen = now


def owner(key):
    """The table an entry belongs to ("device_tokens" of the constraint "device_tokens device_tokens_pkey")."""
    kind, _, name = key
    if kind in ("TABLE", "CONSTRAINT", "FK CONSTRAINT", "DEFAULT", "ROW SECURITY", "TRIGGER", "POLICY"):
        return name.split(" ")[0]
    if kind == "ACL" and name.startswith("TABLE "):
        return name[len("TABLE "):]
    return None


def migrate(herald, url, sql_dir, files, history, pg_dump):
    """Applies `files` one at a time with `herald migrate`, noting after each what its pg_dump shows."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DATABASE_URL": url}
    entries = []
    with tempfile.TemporaryDirectory(prefix="herald-schema-") as folder:
        for n, f in enumerate(files):
            shutil.copyfile(os.path.join(sql_dir, f), os.path.join(folder, f))
            run([herald, "migrate", "--quiet", "--sql-dir", folder], env=env)
            entries = dump(pg_dump, url)
            history.step(entries, f, first=n == 0)
    return entries


def label(step):
    return step if step in (MIGRATOR, PREPARED) else f"sql/{step}"


def schema_text(entries, history, files, major):
    out = [f"""-- herald's schema as a fresh `herald migrate` leaves it: the tables, indexes, functions, triggers,
-- policies and grants of sql/{files[0]} to sql/{files[-1]}, applied in order.
-- GENERATED by scripts/schema.py (`make schema`): never edit it by hand and never apply it (a database
-- runs the migrations). After adding a migration, run `make schema` again: `make test` fails until then.
--
-- Each object's header names the migration that last changed its definition; docs/schema-index.md lists
-- every object with the migration that made it and the one that last changed it. Read with pg_dump
-- {major} (--schema-only --no-owner) from a database prepared as Supabase prepares one ({PREPARED}),
-- so the grants to anon, authenticated and service_role show. Left out: pg_dump's version lines and
-- session settings, what {PREPARED} made that no migration changed, and the audit trail's monthly
-- partitions (<table>_YYYY_MM, named by the month herald migrate ran in).
"""]
    for e in entries:
        if history.changed[e.key] == PREPARED:
            continue
        out.append(f"--\n-- Name: {e.name}; Type: {e.kind}; Schema: {e.schema}\n"
                   f"-- Last defined in {label(history.changed[e.key])}\n--\n\n{e.body}\n")
    return "\n".join(out)


SECTIONS = ["Tables", "Views", "Types", "Sequences", "Functions", "Triggers", "Policies", "Indexes", "Schemas",
            "Other"]


GRANTED = {"Tables", "Views", "Types", "Sequences", "Functions", "Schemas"}
# pg_dump names a function by its argument types ("f(uuid, integer)"), and its grants and comment by its
# identity arguments, names included ("FUNCTION f(id uuid, days integer)"): this maps the second to the first.
FUNCTIONS = """
set search_path = '';
select p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
       p.proname || '(' || coalesce((select string_agg(format_type(t, null), ', ' order by o)
                                       from unnest(p.proargtypes::oid[]) with ordinality a(t, o)), '') || ')'
  from pg_catalog.pg_proc p
 where p.pronamespace <> 'pg_catalog'::regnamespace and p.pronamespace <> 'information_schema'::regnamespace
"""


def function_tags(url):
    rows = [line.split("|", 1) for line in psql(url, FUNCTIONS).splitlines() if "|" in line]
    return {identity: tag for identity, tag in rows}


def placed(e, views, functions):
    """Where an entry goes in the index: (section, object, whether it is the object's grants)."""
    kind, name = e.kind, e.name if e.schema in ("public", "-") else f"{e.schema}.{e.name}"
    if kind == "ACL" or kind == "COMMENT":
        what, _, rest = e.name.partition(" ")
        target = rest.split(".")[0] if what == "COLUMN" else functions.get(rest, rest) if what == "FUNCTION" else rest
        target = target if e.schema in ("public", "-") or what == "SCHEMA" else f"{e.schema}.{target}"
        section = {"TABLE": "Views" if rest in views else "Tables", "COLUMN": "Tables", "FUNCTION": "Functions",
                   "SEQUENCE": "Sequences", "SCHEMA": "Schemas", "TYPE": "Types"}.get(what, "Other")
        return section, target, kind == "ACL"
    if kind in ("TABLE", "TABLE ATTACH"):
        return "Tables", name, False
    if kind in ("CONSTRAINT", "FK CONSTRAINT", "DEFAULT", "ROW SECURITY"):
        return "Tables", name.split(" ")[0], False
    if kind in ("TRIGGER", "POLICY"):
        table, _, own = name.partition(" ")
        return ("Triggers" if kind == "TRIGGER" else "Policies"), f"{own} on {table}", False
    section = {"VIEW": "Views", "TYPE": "Types", "DOMAIN": "Types", "SEQUENCE": "Sequences",
               "SEQUENCE OWNED BY": "Sequences", "FUNCTION": "Functions", "PROCEDURE": "Functions",
               "INDEX": "Indexes", "INDEX ATTACH": "Indexes", "SCHEMA": "Schemas"}.get(kind, "Other")
    return section, name if section != "Other" else f"{kind} {name}", False


def index_text(entries, history, files, functions):
    rank = {PREPARED: -2, MIGRATOR: -1, **{f: n for n, f in enumerate(files)}}
    views = {e.name for e in entries if e.kind == "VIEW"}
    objects = {}
    for e in entries:
        if history.changed[e.key] == PREPARED:
            continue
        section, name, grants = placed(e, views, functions)
        row = objects.setdefault((section, name), {"made": [], "changed": [], "grants": []})
        if grants:
            row["grants"].append(history.changed[e.key])
        else:
            row["made"].append(history.made[e.key])
            row["changed"].append(history.changed[e.key])
    out = [f"""# Where each object of herald's schema was last defined

GENERATED by scripts/schema.py (`make schema`) from sql/{files[0]} to sql/{files[-1]}: do not edit by
hand. After adding a migration, run `make schema` again (`make test` fails until then). The definitions
themselves, as a fresh `herald migrate` leaves them, are in [schema.sql](schema.sql).

For each object: the migration that made it, the one that last changed its definition (for a table: its
columns, constraints, defaults or row-level security), and the one that last changed its grants (none: it
keeps PostgreSQL's default grants). A migration that re-creates an object exactly as it was does not count as
changing it.
"""]
    for section in SECTIONS:
        rows = sorted((name, row) for (s, name), row in objects.items() if s == section)
        if not rows:
            continue
        granted = section in GRANTED
        out.append(f"## {section}\n\n| object | made in | last defined in |" + (" grants last set in |" if granted else "")
                   + "\n| --- | --- | --- |" + (" --- |" if granted else ""))
        for name, row in rows:
            cells = [min(row["made"], key=rank.get, default=None), max(row["changed"], key=rank.get, default=None)]
            cells += [max(row["grants"], key=rank.get, default=None)] if granted else []
            out.append(f"| `{name}` | " + " | ".join(label(c) if c else "" for c in cells) + " |")
        out.append("")
    return "\n".join(out)


def generate(args):
    pg_dump, major = pg_dump_for(args.server)
    files = migrations(args.sql_dir)
    if not files:
        raise Failed(f"{args.sql_dir} holds no migration")
    name = f"herald_schema_{os.getpid()}"
    psql(args.server, f"drop database if exists {name}", f"create database {name}")
    try:
        url = database_url(args.server, name)
        psql(url, file=os.path.join(ROOT, PREPARED))
        history = History(dump(pg_dump, url))
        entries = migrate(args.herald, url, args.sql_dir, files, history, pg_dump)
        return schema_text(entries, history, files, major), index_text(entries, history, files, function_tags(url))
    finally:
        psql(args.server, f"drop database if exists {name} with (force)")


def default_herald():
    for config in ("debug", "release"):
        path = os.path.join(ROOT, ".build", config, "herald")
        if os.access(path, os.X_OK):
            return path
    return os.path.join(ROOT, ".build", "debug", "herald")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("server")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file differs")
    parser.add_argument("--herald", default=default_herald(), help="the herald binary that migrates")
    parser.add_argument("--sql-dir", default=os.path.join(ROOT, "sql"))
    parser.add_argument("--schema", default=os.path.join(ROOT, "docs", "schema.sql"))
    parser.add_argument("--index", default=os.path.join(ROOT, "docs", "schema-index.md"))
    args = parser.parse_args()
    try:
        made = generate(args)
    except Failed as failure:
        print(f"schema.py: {failure}", file=sys.stderr)
        return 2
    stale = 0
    for path, text in zip((args.schema, args.index), made):
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if old == text:
            continue
        if not args.check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"schema.py: wrote {os.path.relpath(path, ROOT)}")
            continue
        stale += 1
        diff = list(difflib.unified_diff(old.split("\n"), text.split("\n"), path, "what the migrations make", lineterm=""))
        print(f"{os.path.relpath(path, ROOT)} is not what the migrations make: run `make schema`, and commit it.")
        print("\n".join(diff[:60] + ([f"… {len(diff) - 60} more lines of difference"] if len(diff) > 60 else [])))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
