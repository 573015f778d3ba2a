#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libmemlens.so's exports, its version map and its public headers agree.

lib/libmemlens.map lists every symbol libmemlens.so exports, one by one
(no wildcard), under the version MEMLENS_1. This script reads three lists:

  the map:      the names in its "global:" section;
  the headers:  the ml_ functions declared in the library's public headers
                (include/memlens/*.h but those lib/README.md's part table
                gives to another part), static inline ones left out;
  the .so:      what `nm -D --defined-only` says it exports (with --so, or
                build/libmemlens.so), each with the version MEMLENS_1;

and fails (exit 1, one line per fault) when a symbol is in one and not in
another, or is exported without the version. It also keeps the list of
exported functions in doc/library.md (between the "exports:" markers) the
one the map gives: --write rewrites that list; without it a stale list fails.

The static archives next to the .so (or each --archive) are read too, with
`nm -g --defined-only`: a global symbol they define is a name a program
linking them can no longer use, so each must carry one of the archive's
prefixes: ml_ (public) or its private one (shared by its files), mli_ in
libmemlens.a, mlr_ in libmemlens-report.a, mlt_ in libmemlens-trace.a.
The ml_ ones are exactly its public API: libmemlens.a's are the names the
map lists; the other two's, the functions declared in the public headers
lib/README.md's part table gives to their part (report/, trace/). An ml_
global not in that list fails (it is private: rename it), and so does a
name of the list the archive does not define.

Every struct, enum and union tag the public headers (all of include/memlens/*.h)
define, or declare as an opaque type ("struct ml_profiler;"), starts with ml_
too: a tag is a name in the program's namespace as a function is.

So does every other name they give the program: a macro and an enum constant
start with ML_ (a function-like macro may be ml_), a typedef with ml_. Left
out: the include guards (MEMLENS_*_H) and a fallback for what an older system
header lacks ("#ifndef X" then "#define X"), which keeps the system's name.

usage: scripts/check-exports.py [--root DIR] [--so FILE] [--archive FILE]... [--write]
"""
import argparse
import os
import re
import subprocess
import sys

MAP = 'lib/libmemlens.map'
README = 'lib/README.md'
DOC = 'doc/library.md'
VERSION = 'MEMLENS_1'
DOC_BEGIN = '<!-- exports: begin (scripts/check-exports.py --write) -->'
DOC_END = '<!-- exports: end -->'
# the static archives read by default (next to the .so), and the prefixes of
# the global symbols each may define: ml_ (public), then its private one (any
# other archive: ml_ only)
ARCHIVES = ('libmemlens.a', 'libmemlens-report.a', 'libmemlens-trace.a')
PREFIXES = {
    'libmemlens.a': ('ml_', 'mli_'),
    'libmemlens-report.a': ('ml_', 'mlr_'),
    'libmemlens-trace.a': ('ml_', 'mlt_'),
}
# the archives whose ml_ symbols are exactly the functions their part's public
# headers declare, and that part's row in lib/README.md's part table
PUBLIC_OF = {'libmemlens-report.a': 'report', 'libmemlens-trace.a': 'trace'}
# the archive whose ml_ symbols are exactly the names the map lists
MAPPED = 'libmemlens.a'


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def read_map(root, faults):
    """The names of the map's global: section, in order."""
    with open(os.path.join(root, MAP)) as f:
        text = strip_comments(f.read())
    m = re.search(r'\b' + VERSION + r'\s*\{(.*)\}\s*;', text, flags=re.S)
    if not m:
        faults.append('%s: no "%s { ... };" node' % (MAP, VERSION))
        return []
    body = m.group(1)
    g = re.search(r'\bglobal\s*:(.*?)(?:\blocal\s*:|$)', body, flags=re.S)
    if not g:
        faults.append('%s: no "global:" section' % MAP)
        return []
    names = [n.strip() for n in g.group(1).split(';') if n.strip()]
    out = []
    for n in names:
        if not re.fullmatch(r'[A-Za-z_]\w*', n):
            faults.append('%s: "%s" is not one symbol name (list each symbol, no wildcard)'
                          % (MAP, n))
        elif n in out:
            faults.append('%s: %s is listed twice' % (MAP, n))
        else:
            out.append(n)
    loc = re.search(r'\blocal\s*:\s*\*\s*;', body)
    if not loc:
        faults.append('%s: no "local: *;" (everything not listed must stay local)' % MAP)
    return out


def part_headers(root):
    """{part: [its public headers]} of lib/README.md's part table but lib/."""
    parts, table = {}, None
    with open(os.path.join(root, README)) as f:
        for line in f:
            if not line.startswith('|'):
                table = None
                continue
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if cells[0] in ('folder', 'part'):
                table = cells[0]
                continue
            if table == 'part' and not set(line.strip()) <= set('|-: '):
                part = re.findall(r'`([^`]+)`', cells[0])
                if part and part[0].rstrip('/') != 'lib':
                    parts.setdefault(part[0].rstrip('/'), []).extend(
                        re.findall(r'`([^`]+\.h)`', cells[-1]))
    return parts


def lib_headers(root):
    """The library's public headers: include/memlens/*.h but those lib/README.md's
    part table gives to another part (report/'s report.h)."""
    others = {h for hs in part_headers(root).values() for h in hs}
    return sorted(h for h in os.listdir(os.path.join(root, 'include/memlens'))
                  if h.endswith('.h') and h not in others)


def declared(root, header):
    """The ml_ functions @header declares at file scope (not static, not in a macro)."""
    with open(os.path.join(root, 'include/memlens', header)) as f:
        text = strip_comments(f.read())
    # preprocessor lines, with their continuations
    text = re.sub(r'^\s*#(?:[^\n]*\\\n)*[^\n]*', ' ', text, flags=re.M)
    out, depth, stmt = [], 0, ''
    for tok in re.split(r'([{};])', text):
        if tok == '{':
            depth += 1
        elif tok == '}':
            depth -= 1
        elif tok == ';':
            stmt = ''
        if depth == 0 and tok not in '{};':
            stmt += tok
            if re.match(r'\s*(static|typedef)\b', stmt):
                continue
            # a name before "(": a function (a pointer's "(*ml_x)(" is not one)
            for m in re.finditer(r'(?<!\(\*)(?<!\( \*)\b(ml_\w+)\s*\(', tok):
                if m.group(1) not in out:
                    out.append(m.group(1))
        if tok in '{}' and depth == 0:
            stmt = ''
    return out


def public_tags(root, faults):
    """The number of struct/enum/union tags include/memlens/*.h define or declare
    (opaque) at any depth; a fault for each without ml_."""
    n = 0
    incdir = os.path.join(root, 'include/memlens')
    for h in sorted(os.listdir(incdir)):
        if not h.endswith('.h'):
            continue
        with open(os.path.join(incdir, h)) as f:
            text = strip_comments(f.read())
        # preprocessor lines, with their continuations (ML_OPTS's "struct TYPE")
        text = re.sub(r'^\s*#(?:[^\n]*\\\n)*[^\n]*', ' ', text, flags=re.M)
        seen = set()
        for m in re.finditer(r'\b(struct|enum|union)\s+([A-Za-z_]\w*)\s*([{;])', text):
            kind, tag, how = m.groups()
            if (kind, tag) in seen:
                continue
            seen.add((kind, tag))
            n += 1
            if not tag.startswith('ml_'):
                faults.append('memlens/%s %s %s %s, whose tag is not ml_*: a public tag is '
                              'ml_<name> (%s ml_%s)'
                              % (h, 'defines' if how == '{' else 'declares', kind, tag,
                                 kind, tag))
    return n


# a public header's include guard, and its fallbacks for what an older system
# header lacks ("#ifndef X" then "#define X", or "#if !defined(X)"): names
# the header does not own (the kernel's, libc's), so they keep theirs
GUARD = re.compile(r'MEMLENS_\w+_H')
FALLBACK = re.compile(r'^[ \t]*#[ \t]*(?:ifndef[ \t]+(\w+)|if[ \t]+!\s*defined\s*\(?\s*(\w+)\s*\)?)'
                      r'[ \t]*\n[ \t]*#[ \t]*define[ \t]+(\w+)\b', re.M)


def public_names(root, faults):
    """The number of macros, enum constants and typedefs include/memlens/*.h
    define; a fault for each without ML_ (a macro, an enum constant) or ml_
    (a typedef; a function-like macro may be ml_ too), the include guards and
    the #ifndef fallbacks for an old system header left out."""
    counts = {'macro': 0, 'enum constant': 0, 'typedef': 0}
    incdir = os.path.join(root, 'include/memlens')
    for h in sorted(os.listdir(incdir)):
        if not h.endswith('.h'):
            continue
        with open(os.path.join(incdir, h)) as f:
            text = strip_comments(f.read())
        fallback = {m.group(3) for m in FALLBACK.finditer(text)
                    if m.group(3) == (m.group(1) or m.group(2))}
        names = []
        for m in re.finditer(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)', text, flags=re.M):
            n = m.group(1)
            if GUARD.fullmatch(n) or n in fallback:
                continue
            names.append(('macro', n, n.startswith(('ML_', 'ml_')), 'ML_' + n))
        # the code, without the preprocessor lines (a macro's body is no enum)
        code = re.sub(r'^\s*#(?:[^\n]*\\\n)*[^\n]*', ' ', text, flags=re.M)
        for m in re.finditer(r'\benum\b\s*\w*\s*\{([^}]*)\}', code):
            depth, item, items = 0, '', []
            for c in m.group(1) + ',':
                if c in '([':
                    depth += 1
                elif c in ')]':
                    depth -= 1
                if c == ',' and depth == 0:
                    items.append(item)
                    item = ''
                else:
                    item += c
            for it in items:
                e = re.match(r'\s*([A-Za-z_]\w*)', it)
                if e:
                    n = e.group(1)
                    names.append(('enum constant', n, n.startswith('ML_'), 'ML_' + n))
        for m in re.finditer(r'\btypedef\b([^;{}]*);', code):
            t = re.search(r'\(\s*\*\s*(\w+)\s*\)\s*\(', m.group(1)) or \
                re.search(r'(\w+)\s*(?:\[[^\]]*\]\s*)*$', m.group(1))
            if t:
                n = t.group(1)
                names.append(('typedef', n, n.startswith('ml_'), 'ml_' + n))
        # a typedef of a struct body: "typedef struct ml_x { ... } name;"
        for m in re.finditer(r'\btypedef\s+(?:struct|enum|union)\b[^;{]*\{', code):
            depth, i = 0, m.end() - 1
            while i < len(code):
                depth += {'{': 1, '}': -1}.get(code[i], 0)
                i += 1
                if depth == 0:
                    break
            t = re.match(r'\s*(\w+)\s*;', code[i:])
            if t:
                n = t.group(1)
                names.append(('typedef', n, n.startswith('ml_'), 'ml_' + n))
        seen = set()
        for kind, n, prefixed, want in names:
            if (kind, n) in seen:
                continue
            seen.add((kind, n))
            counts[kind] += 1
            if not prefixed:
                faults.append('memlens/%s defines the %s %s, which is not %s*: a public name '
                              'is %s' % (h, kind, n, want[:3], want))
    return counts


def nm(args, path, faults):
    """nm @args @path's output; None (and a fault) when nm cannot read it."""
    try:
        return subprocess.run(['nm'] + args + [path], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        faults.append('%s: nm failed (%s); build it: make %s' % (path, e, path))
        return None


def exported(so, faults):
    """{name: version} of what @so exports."""
    out = nm(['-D', '--defined-only'], so, faults)
    if out is None:
        return None
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) != 3:
            continue
        name, _, ver = f[2].partition('@')
        ver = ver.lstrip('@')
        if name == VERSION and f[1] == 'A':
            continue
        syms[name] = ver
    return syms


def archive_globals(archive, faults):
    """[(object, name)] of the global symbols @archive defines."""
    out = nm(['-g', '--defined-only'], archive, faults)
    if out is None:
        return None
    syms, obj = [], '?'
    for line in out.splitlines():
        f = line.split()
        if len(f) == 1 and f[0].endswith(':'):
            obj = f[0][:-1]
        elif len(f) == 3:
            syms.append((obj, f[2]))
    return syms


def check_archive(root, archive, mapped, faults):
    """Every global @archive defines has its prefix; its ml_ ones are its
    public API: @mapped (the map's names) for libmemlens.a, the functions
    its part's public headers declare for the report and trace archives."""
    base = os.path.basename(archive)
    prefixes = PREFIXES.get(base, ('ml_',))
    syms = archive_globals(archive, faults)
    if syms is None:
        return 0
    for obj, n in syms:
        if not n.startswith(prefixes):
            faults.append('%s (%s) defines the global %s, which is not %s: make it static, '
                          'or name it so' % (archive, obj, n,
                                             ' or '.join(p + '*' for p in prefixes)))
    private = ' or '.join(p + '*' for p in prefixes if p != 'ml_')
    if base == MAPPED:
        listed = set(mapped)
        defined = {n for _, n in syms}
        for obj, n in syms:
            if n.startswith('ml_') and n not in listed:
                faults.append('%s (%s) defines %s, which %s does not list (a private name '
                              'is %s)' % (archive, obj, n, MAP, private))
        for n in mapped:
            if n not in defined:
                faults.append('%s lists %s, which %s does not define' % (MAP, n, archive))
    part = PUBLIC_OF.get(base)
    if part:
        decl = {}
        for h in part_headers(root).get(part, []):
            if os.path.exists(os.path.join(root, 'include/memlens', h)):
                for n in declared(root, h):
                    decl.setdefault(n, h)
        defined = {n for _, n in syms}
        for obj, n in syms:
            if n.startswith('ml_') and n not in decl:
                faults.append('%s (%s) defines %s, which no public header of %s/ declares '
                              '(a private name is %s)' % (archive, obj, n, part, private))
        for n in sorted(decl):
            if n not in defined:
                faults.append('memlens/%s declares %s, which %s does not define'
                              % (decl[n], n, archive))
    return len(syms)


def doc_list(groups):
    lines = [DOC_BEGIN]
    for h, names in groups:
        lines.append('* `memlens/%s`: %s' % (h, ', '.join('`%s()`' % n for n in names)))
    lines.append(DOC_END)
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    ap.add_argument('--so', help='the shared library (default: ROOT/build/libmemlens.so)')
    ap.add_argument('--archive', action='append',
                    help='a static archive whose globals to check (default: %s next to '
                    'the .so)' % ', '.join(ARCHIVES))
    ap.add_argument('--write', action='store_true',
                    help='rewrite the list of exported functions in ' + DOC)
    a = ap.parse_args()
    root = a.root
    so = a.so or os.path.join(root, 'build/libmemlens.so')
    faults = []

    mapped = read_map(root, faults)
    groups, public = [], {}
    for h in lib_headers(root):
        names = declared(root, h)
        for n in names:
            public.setdefault(n, h)
        if names:
            groups.append((h, sorted(n for n in names if public[n] == h)))
    for n in public:
        if n not in mapped:
            faults.append('%s: %s is declared in memlens/%s but not listed (it would not be '
                          'exported)' % (MAP, n, public[n]))
    for n in mapped:
        if n not in public:
            faults.append('%s: %s is listed but no public header of %s declares it'
                          % (MAP, n, README))
    syms = exported(so, faults)
    if syms is not None:
        for n in sorted(syms):
            if n not in mapped:
                faults.append('%s exports %s, which %s does not list' % (so, n, MAP))
            elif syms[n] != VERSION:
                faults.append('%s exports %s with the version "%s", not %s'
                              % (so, n, syms[n], VERSION))
        for n in mapped:
            if n not in syms:
                faults.append('%s lists %s, which %s does not export' % (MAP, n, so))

    ntags = public_tags(root, faults)
    names = public_names(root, faults)

    archives = a.archive or [os.path.join(os.path.dirname(so), n) for n in ARCHIVES]
    nglobals = sum(check_archive(root, ar, mapped, faults) for ar in archives)

    want = doc_list(sorted(groups))
    doc_path = os.path.join(root, DOC)
    with open(doc_path) as f:
        doc = f.read()
    i, j = doc.find(DOC_BEGIN), doc.find(DOC_END)
    if i < 0 or j < i:
        faults.append('%s: no list of exported functions between "%s" and "%s"'
                      % (DOC, DOC_BEGIN, DOC_END))
    else:
        have = doc[i:j + len(DOC_END)]
        if have != want:
            if a.write:
                with open(doc_path, 'w') as f:
                    f.write(doc[:i] + want + doc[j + len(DOC_END):])
                print('check-exports: %s: the list of exported functions rewritten' % DOC)
            else:
                faults.append('%s: the list of exported functions is not the one the public '
                              'headers give: run scripts/check-exports.py --write' % DOC)

    for f in faults:
        print(f, file=sys.stderr)
    if faults:
        print('check-exports: %d fault(s)' % len(faults), file=sys.stderr)
        return 1
    print('check-exports: %d symbols of %d public headers: %s, %s and %s agree; '
          'the %d globals of %d archives are prefixed, their ml_ ones public; '
          'the %d tags of the public headers are ml_*, their %d macros and %d enum '
          'constants ML_*, their %d typedefs ml_*'
          % (len(mapped), len(groups), MAP, os.path.relpath(so, root), DOC, nglobals,
             len(archives), ntags, names['macro'], names['enum constant'],
             names['typedef']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
