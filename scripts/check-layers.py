#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layer rules of lib/README.md, checked against the #include lines.

lib/README.md has two tables: lib/'s folders, each depending only on those
above it, and the parts of the tree (lib/, report/, trace/, common/, src/,
agent/), each naming the parts it may include (the whole of lib/, or some
of its folders: lib/common/), through lib/'s public headers only: a part
outside lib/ including a header of a lib/ folder breaks the rules. Both name the public headers
(include/memlens/) each folder or part owns. This script resolves every
`#include "..."` of those folders as the compiler does (the including
file's folder, then -Iinclude, then -Icommon) and prints each include that
goes up lib's table or across to a part its row does not name, as
FILE:LINE, what it includes and the rule, and each weak symbol (a
dependency no include shows); it exits 1 when there is one.

usage: scripts/check-layers.py [--root DIR] [-v]
"""
import argparse
import os
import re
import sys

README = 'lib/README.md'
# the folders whose sources are checked, and the compiler's -I paths
PARTS_CHECKED = ('lib', 'report', 'trace', 'common', 'src', 'agent')
INCLUDE_DIRS = ('include', 'common')
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# a weak symbol is a dependency no include shows (how common/ once called
# into src/trace/): a callback the caller registers says it instead
WEAK_RE = re.compile(r'__attribute__\s*\(\(\s*weak\b|^\s*#\s*pragma\s+weak\b')


class Rules:
    def __init__(self):
        self.folders = []  # lib's folders, the base first
        self.parts = {}  # part -> the parts it may include
        self.owner = {}  # public header name -> ('lib', folder) or (part, None)
        self.errors = []  # the tables' own faults


def cells(line):
    return [c.strip() for c in line.strip().strip('|').split('|')]


def names(cell):
    return re.findall(r'`([^`]+)`', cell)


def read_tables(root):
    """The two tables of lib/README.md, by their header rows."""
    r = Rules()
    path = os.path.join(root, README)
    with open(path) as f:
        lines = f.read().split('\n')
    table = None
    for no, line in enumerate(lines, 1):
        if not line.startswith('|'):
            table = None
            continue
        c = cells(line)
        if c[0] == 'folder':
            table = 'lib'
            continue
        if c[0] == 'part':
            table = 'parts'
            continue
        if table is None or set(line) <= set('|-: '):
            continue
        n = names(c[0])
        if not n:
            continue
        name = n[0].rstrip('/')
        headers = names(c[-1])
        if table == 'lib':
            r.folders.append(name)
            owner = ('lib', name)
        else:
            r.parts[name] = [p.rstrip('/') for p in names(c[2])] if len(c) > 3 else []
            owner = (name, None)
        for h in headers:
            if h in r.owner:
                r.errors.append('%s:%d: %s is named by two rows' % (README, no, h))
            r.owner[h] = owner
    if not r.folders or not r.parts:
        r.errors.append('%s: the folder table or the part table is missing' % README)
    return r


def sources(root, part):
    for d, subdirs, files in os.walk(os.path.join(root, part)):
        subdirs.sort()
        for f in sorted(files):
            if f.endswith(('.c', '.h')):
                yield os.path.relpath(os.path.join(d, f), root)


def resolve(root, src, inc):
    """The tree path `#include "inc"` in src finds, or None (a generated header)."""
    for d in [os.path.dirname(src)] + list(INCLUDE_DIRS):
        p = os.path.normpath(os.path.join(d, inc))
        if not p.startswith('..') and os.path.isfile(os.path.join(root, p)):
            return p
    return None


def where(rules, path):
    """(part, lib folder or None) that owns the tree path, or None if unknown."""
    parts = path.split('/')
    if parts[0] == 'include' and len(parts) == 3 and parts[1] == 'memlens':
        return rules.owner.get(parts[2], ('include', None))
    if parts[0] == 'lib':
        return ('lib', parts[1] if len(parts) > 2 else None)
    return (parts[0], None)


def check_one(rules, frm, to, dst=''):
    """None when a file of `frm` may include `dst`, one of `to`, else the rule it breaks."""
    (fp, ff), (tp, tf) = frm, to
    if tp == 'include':
        return 'every public header is named in a row of %s' % README
    if fp == 'lib' and tp == 'lib':
        if ff == tf or tf is None:
            return None
        if ff not in rules.folders or tf not in rules.folders:
            return 'every folder of lib/ has a row in %s' % README
        if rules.folders.index(tf) > rules.folders.index(ff):
            return ('lib/%s/ may include only the folders above it in %s (%s), not lib/%s/'
                    % (ff, README, ' '.join(rules.folders[:rules.folders.index(ff)]) or
                       'none', tf))
        return None
    if fp == tp:
        return None
    if tp == 'lib' and dst.startswith('lib/'):
        return ('%s/ reaches the library through its public headers (include/memlens/) '
                'only, not a header of lib/%s/ (%s)' % (fp, tf, README))
    allowed = rules.parts.get(fp)
    if allowed is None:
        return '%s/ has no row in the part table of %s' % (fp, README)
    # a row may name the whole library (lib/) or some of its folders (lib/common/)
    target = 'lib/' + tf if tp == 'lib' and tf else tp
    if tp not in allowed and target not in allowed:
        return '%s/ may include %s, not %s/ (%s)' % (
            fp, ' '.join(a + '/' for a in allowed) or 'only itself', target, README)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    ap.add_argument('-v', '--verbose', action='store_true',
                    help='also print the include graph between parts and folders')
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    rules = read_tables(root)
    bad = list(rules.errors)
    edges = {}
    checked = 0

    for folder in sorted(os.listdir(os.path.join(root, 'lib'))):
        if os.path.isdir(os.path.join(root, 'lib', folder)) and folder not in rules.folders:
            bad.append('lib/%s/: a folder with no row in the folder table of %s'
                       % (folder, README))
    files = [p for part in PARTS_CHECKED for p in sources(root, part)]
    files += [p for p in sources(root, 'include/memlens')]
    for src in files:
        frm = where(rules, src)
        if frm[0] == 'include':
            bad.append('%s: a public header named in no row of %s' % (src, README))
            continue
        with open(os.path.join(root, src), errors='replace') as f:
            for no, line in enumerate(f, 1):
                if WEAK_RE.search(line):
                    bad.append('%s:%d: a weak symbol: a dependency the include graph does not '
                               'show (let the caller register a callback instead)' % (src, no))
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                dst = resolve(root, src, m.group(1))
                if dst is None:
                    continue
                checked += 1
                to = where(rules, dst)
                key = ('/'.join(x for x in frm if x), '/'.join(x for x in to if x))
                edges[key] = edges.get(key, 0) + 1
                rule = check_one(rules, frm, to, dst)
                if rule:
                    bad.append('%s:%d: includes %s: %s' % (src, no, dst, rule))
    if a.verbose:
        for (f, t), n in sorted(edges.items()):
            if f != t:
                print('# %-14s -> %-14s %d' % (f, t, n))
    for b in bad:
        print(b)
    print('check-layers: %d includes of %d files checked, %d against the rules of %s'
          % (checked, len(files), len(bad), README))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
