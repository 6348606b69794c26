"""The rewrite behind scripts/qualify-functions.py: a small SQL and PL/pgSQL lexer, the qualification of
herald's names in a function body, and the writing of an inlinable helper into its callers."""
import re

# Built-ins whose text arguments name a relation: a literal there naming one of herald's is qualified (as is
# one cast to regclass).
RELATION_ARGUMENT = {"to_regclass", "nextval", "currval", "setval", "pg_get_serial_sequence",
                     "has_table_privilege", "has_sequence_privilege", "pg_relation_size", "pg_total_relation_size"}
DDL = {"create", "alter", "drop", "grant", "revoke", "comment", "reindex", "cluster", "truncate"}
FORBIDDEN = {"current_schema", "current_schemas", "search_path"}


class Unrewritable(Exception):
    pass


TOKEN = re.compile(r"""
   (?P<ws>\s+)
 | (?P<comment>--[^\n]*)
 | (?P<estring>[Ee]'(?:[^'\\]|\\.|'')*')
 | (?P<string>[BbXxNn]?'(?:[^']|'')*')
 | (?P<dollar>\$(?P<tag>[A-Za-z_][A-Za-z0-9_]*)?\$)
 | (?P<param>\$\d+)
 | (?P<qident>"(?:[^"]|"")*")
 | (?P<ident>[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*)
 | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
 | (?P<cast>::)
 | (?P<op>.)
""", re.X | re.S)


def lex(text):
    """[(kind, text)]: whitespace, comments, literals and dollar quotes are single tokens."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("/*", i):
            depth, j = 0, i
            while j < len(text):
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                    if depth == 0:
                        break
                else:
                    j += 1
            if depth:
                raise Unrewritable("unterminated comment")
            out.append(("comment", text[i:j]))
            i = j
            continue
        m = TOKEN.match(text, i)
        kind = m.lastgroup if m.lastgroup != "tag" else "dollar"
        if kind == "dollar":
            end = text.find(m.group(0), m.end())
            if end < 0:
                raise Unrewritable("unterminated dollar quote " + m.group(0))
            out.append(("string", text[i:end + len(m.group(0))]))
            i = end + len(m.group(0))
            continue
        if kind == "op" and m.group(0) == "'":
            raise Unrewritable("unterminated string literal")
        out.append(("string" if kind == "estring" else kind, m.group(0)))
        i = m.end()
    return out


def significant(tokens):
    return [i for i, (k, _) in enumerate(tokens) if k not in ("ws", "comment")]


def name_of(token):
    kind, text = token
    if kind == "ident":
        return text.lower()
    if kind == "qident":
        return text[1:-1].replace('""', '"')
    return None


def literal_value(text):
    if text[0] in "'" and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    return None


def quote_ident(name):
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'


class Catalog:
    def __init__(self, facts):
        self.functions = [f for f in facts["functions"] if not f["extension"]]
        self.function_names = {f["name"] for f in facts["functions"]}
        self.relations = set(facts["relations"]) | set(facts["types"] or [])
        self.columns = set(facts["columns"] or [])
        # Functions whose text argument names a relation: the built-ins above, and herald's taking a regclass.
        self.relation_argument = RELATION_ARGUMENT | {f["name"] for f in facts["functions"] if "regclass" in (f["intypes"] or [])}
        both = self.relations & self.function_names
        if both:
            raise Unrewritable("names both a relation and a function: " + ", ".join(sorted(both)))


def declared_names(tokens, sig):
    """PL/pgSQL variables: the first name of each declaration, and FOR loop variables."""
    names, declaring, start = set(), False, True
    for n, i in enumerate(sig):
        word = name_of(tokens[i])
        if word == "declare":
            declaring, start = True, True
            continue
        if word == "begin":
            declaring = False
        if declaring and start and word:
            names.add(word)
        start = tokens[i][1] == ";"
        if word in ("for", "foreach") and n + 1 < len(sig) and name_of(tokens[sig[n + 1]]):
            names.add(name_of(tokens[sig[n + 1]]))
    return names


def qualify(fn, catalog, body, reviewed=False):
    """The body with herald's names qualified; raises Unrewritable on what it cannot decide. `reviewed`: its
    dynamic SQL was read by a person and names nothing through search_path."""
    tokens = lex(body)
    sig = significant(tokens)
    words = [name_of(tokens[i]) if tokens[i][0] == "ident" else None for i in sig]
    where = fn["identity"]
    for n, word in enumerate(words):
        if word in FORBIDDEN:
            raise Unrewritable(f"{where}: the body reads {word}, which follows search_path")
        if word == "execute" and not (n + 1 < len(words) and words[n + 1] in ("function", "procedure")):
            if not reviewed:
                raise Unrewritable(f"{where}: dynamic SQL (EXECUTE) may name relations in strings")
        if word in DDL and not reviewed and not (n > 0 and tokens[sig[n - 1]][1] == "."):
            raise Unrewritable(f"{where}: DDL ({word}) names objects the rewrite cannot tell apart")
    local = {a for a in (fn["argnames"] or []) if a} | (declared_names(tokens, sig) if fn["language"] == "plpgsql" else set())
    clash = local & (catalog.relations | catalog.function_names)
    if clash:
        raise Unrewritable(f"{where}: parameter or variable named like herald's {', '.join(sorted(clash))}")
    out = [t for _, t in tokens]
    for n, i in enumerate(sig):
        kind, text = tokens[i]
        before = tokens[sig[n - 1]][1] if n > 0 else ""
        after = tokens[sig[n + 1]][1] if n + 1 < len(sig) else ""
        if kind == "string":
            value = literal_value(text)
            called = enclosing_call(tokens, sig, n)
            if value in catalog.relations and (
                    after == "::" and n + 2 < len(sig) and name_of(tokens[sig[n + 2]]) == "regclass"
                    or called and name_of(called) in catalog.relation_argument):
                out[i] = "'public." + quote_ident(value).replace("'", "''") + "'"
            continue
        name = name_of(tokens[i])
        if name is None or before == "." or (kind == "ident" and after == "=>"):
            continue
        if name in catalog.function_names and after == "(":
            out[i] = "public." + text
        elif name in catalog.relations:
            if after == "." and not rowtype_reference(tokens, sig, n):
                continue
            if before.lower() == "as" or before == "<" or name in catalog.columns:
                raise Unrewritable(f"{where}: {text} may be an alias, label or column here, not the relation")
            if after.lower() == "as" and n + 2 < len(sig) and tokens[sig[n + 2]][1] == "(":
                raise Unrewritable(f"{where}: a WITH query named {text} hides the relation")
            out[i] = "public." + text
    return "".join(out)


def enclosing_call(tokens, sig, n):
    """The name of the function whose argument list holds sig[n], if any."""
    depth = 0
    for m in range(n - 1, 0, -1):
        text = tokens[sig[m]][1] if tokens[sig[m]][0] == "op" else ""
        if text == ")":
            depth += 1
        elif text == "(":
            if depth == 0:
                return tokens[sig[m - 1]]
            depth -= 1
    return None


def rowtype_reference(tokens, sig, n):
    """`relation.column%type`: the relation is qualified too."""
    rest = [tokens[i][1].lower() for i in sig[n + 1:n + 5]]
    return len(rest) == 4 and rest[0] == "." and rest[2] == "%" and rest[3] in ("type", "rowtype")


def inline_form(fn, body):
    """For an IMMUTABLE one-expression SQL helper, its expression; else None."""
    if (fn["language"] != "sql" or fn["volatility"] != "i" or fn["strict"] or fn["definer"] or fn["retset"]
            or fn["ndefaults"] or not fn["argnames"] or len(fn["argnames"]) != fn["nargs"]):
        return None
    tokens = lex(body.strip().rstrip(";"))
    sig = significant(tokens)
    if not sig or name_of(tokens[sig[0]]) != "select":
        return None
    depth = 0
    for i in sig[1:]:
        kind, text = tokens[i]
        depth += text in "([" and kind == "op"
        depth -= text in ")]" and kind == "op"
        word = name_of(tokens[i]) if kind == "ident" else None
        if word == "select" or kind == "param" or (kind, text) == ("op", ".") or (depth == 0 and (text in ",;" or word in
                                                 ("from", "where", "group", "order", "limit", "union"))):
            return None
    return tokens[sig[0] + 1:]


def call_arguments(tokens, sig, n):
    """The arguments (token index ranges) of the call whose `(` is at sig[n], and the index of its `)`."""
    args, depth, start = [], 0, sig[n] + 1
    for i in sig[n:]:
        text = tokens[i][1] if tokens[i][0] == "op" else ""
        if text in "([" and text:
            depth += 1
        elif text in ")]" and text:
            depth -= 1
            if depth == 0:
                args.append((start, i))
                return args, i
        elif text == "," and depth == 1:
            args.append((start, i))
            start = i + 1
    raise Unrewritable("unbalanced parentheses")


def simple(tokens):
    """A constant, a parameter, or a (qualified) column or variable: cheap to write more than once."""
    sig = [t for t in tokens if t[0] not in ("ws", "comment")]
    if not sig or any("*/" in t or "/*" in t for _, t in tokens):
        return False
    if len(sig) == 1:
        return sig[0][0] in ("string", "number", "param", "ident", "qident")
    return len(sig) % 2 == 1 and all(t[0] in ("ident", "qident") if k % 2 == 0 else t == ("op", ".")
                                     for k, t in enumerate(sig))


def typed(expression, type_name):
    """`(expression)::type`, or the expression itself when it is one parenthesised group cast to that type."""
    suffix = "::" + type_name
    if expression.startswith("(") and expression.endswith(suffix):
        group, depth = lex(expression[:-len(suffix)]), 0
        for k, token in enumerate(group):
            depth += token == ("op", "(")
            depth -= token == ("op", ")")
            if depth == 0:
                if k == len(group) - 1:
                    return expression
                break
    return f"({expression})::{type_name}"


def inline_helpers(body, helpers):
    """Writes calls of the inlinable helpers with simple arguments as the helper's expression."""
    tokens = lex(body)
    sig = significant(tokens)
    out, skip_to = [], -1
    for n, i in enumerate(sig):
        if i <= skip_to:
            continue
        helper = helpers.get(name_of(tokens[i])) if tokens[i][0] == "ident" else None
        if not (helper and n >= 2 and tokens[sig[n - 1]][1] == "." and name_of(tokens[sig[n - 2]]) == "public"
                and n + 1 < len(sig) and tokens[sig[n + 1]][1] == "("):
            continue
        args, close = call_arguments(tokens, sig, n + 1)
        fn, expression = helper
        parts = [tokens[a:b] for a, b in args]
        if len(parts) != fn["nargs"] or not all(simple(p) for p in parts):
            continue
        values = {name: "(" + "".join(t for _, t in p).strip() + ")::" + ty
                  for name, p, ty in zip(fn["argnames"], parts, fn["intypes"])}
        text = "".join(values[name_of(t)] if t[0] in ("ident", "qident") and name_of(t) in values else t[1]
                       for t in expression)
        call = "".join(t for _, t in tokens[sig[n - 2]:close + 1])
        out.append((sig[n - 2], close, f"/* {call} */ ({typed(text.strip(), fn['rettype'])})"))
        skip_to = close
    for start, end, text in reversed(out):
        tokens[start:end + 1] = [("expanded", text)]
    return "".join(t for _, t in tokens)
