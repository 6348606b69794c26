#!/usr/bin/env python3
"""Rewrites a test's hand-written disposable database into the scoped fixture:

        let tdb = try TestDatabase.create(ARGS)          try withTestDatabase(ARGS) { tdb in
        defer { tdb.drop() }                      →          …the rest of the block, indented…
        …the rest of the block…                          }

The rest of the enclosing block (up to its closing brace, one level out) moves into the closure, so
the database is dropped when the block ends, as the `defer` did, also when it throws. A block whose
end is not a lone closing brace is left as it is and named on stderr. `await` in the block makes the
call `try await`. Usage: scripts/scoped-test-database.py FILE...
"""
import re
import sys

START = re.compile(r'^(\s*)let (\w+) = try TestDatabase\.create\((.*)\)\s*$')


def convert_once(lines, path):
    for i, line in enumerate(lines):
        m = START.match(line)
        if not m or i + 1 >= len(lines):
            continue
        indent, name, args = m.group(1), m.group(2), m.group(3)
        if lines[i + 1].strip() != f'defer {{ {name}.drop() }}':
            continue
        width = len(indent)
        end = None
        for j in range(i + 2, len(lines)):
            text = lines[j]
            if text.strip() and len(text) - len(text.lstrip()) < width:
                end = j
                break
        if end is None or lines[end].rstrip() != ' ' * (width - 4) + '}':
            print(f'{path}:{i + 1}: left as it is (block end not found)', file=sys.stderr)
            lines[i] = lines[i].replace('TestDatabase.create(', 'TestDatabase.create(', 1) + '  // scoped-test-database: skip'
            return True
        body = lines[i + 2:end]
        awaits = any(re.search(r'\bawait\b', b) for b in body)
        call = 'try await withTestDatabase' if awaits else 'try withTestDatabase'
        head = f'{indent}{call}({args}) {{ {name} in' if args else f'{indent}{call} {{ {name} in'
        moved = [('    ' + b) if b.strip() else b for b in body]
        lines[i:end] = [head] + moved + [indent + '}']
        return True
    return False


for path in sys.argv[1:]:
    with open(path) as fh:
        lines = fh.read().split('\n')
    n = 0
    while convert_once(lines, path):
        n += 1
    text = '\n'.join(lines).replace('  // scoped-test-database: skip', '')
    with open(path, 'w') as fh:
        fh.write(text)
    if n:
        print(f'{path}: {n}')
