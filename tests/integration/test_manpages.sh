#!/bin/bash
# The man pages (doc/man/*.8.rst, built by `make` with rst2man): one per
# command `memlens --help` lists, every long option that `memlens CMD
# --help` prints is in that command's page (its source and the rendered
# page), every page has the usual sections, renders with `man -l` without a
# warning, and cites nothing but memlens's own behaviour.
# The pages are built here, by the Makefile's own rule, into a scratch
# directory.
set -u
cd "$(dirname "$0")/../.." || exit 1
M=${MEMLENS:-$PWD/build/memlens}
. tests/lib.bash
t_tmpdir man-test

if ! command -v man >/dev/null; then
	skip manpages "no man command (install man-db, scripts/packages/docs.txt)"
	exit 0
fi
if ! make --no-print-directory -s BUILD="$tmp/build" man >"$tmp/make.log" 2>&1; then
	notok pages_build "make man failed: $(tail -n 5 "$tmp/make.log")"
	exit 1
fi
ok pages_build

# long options in a --help text: --word, not the "--" that ends options
long_opts() { grep -oE -- '(^|[^a-zA-Z0-9-])--[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u; }
# has_opt OPT FILE: OPT as a whole word in FILE
has_opt() { grep -qE -- "(^|[^a-zA-Z0-9-])$1([^a-zA-Z0-9-]|$)" "$2"; }
render() { MANWIDTH=200 LC_ALL=C.UTF-8 man -l "$1" 2>/dev/null | col -bx; }

cmds=$("$M" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}')
if [ "$(echo "$cmds" | wc -w)" -lt 10 ]; then
	notok commands_listed "memlens --help lists only: $cmds"
	exit 1
fi

check_page() {	# $1: page name, $2: file with the --help text
	local page=$1 help=$2 src=doc/man/$1.8.rst out=$tmp/build/man/$1.8
	local missing= o sec
	if [ ! -f "$src" ] || [ ! -f "$out" ]; then
		notok "page_$page" "no $src (or it was not built)"
		return
	fi
	render "$out" >"$tmp/$page.txt"
	for o in $(long_opts <"$help"); do
		has_opt "$o" "$src" && has_opt "$o" "$tmp/$page.txt" || missing="$missing $o"
	done
	[ -z "$missing" ] && ok "options_in_page_$page" ||
		notok "options_in_page_$page" "in '${page/-/ } --help' but not in $src:$missing"
	missing=
	for sec in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES "SEE ALSO"; do
		grep -qx "$sec" "$tmp/$page.txt" || missing="$missing '$sec'"
	done
	[ -z "$missing" ] && ok "sections_$page" || notok "sections_$page" "$src lacks$missing"
	# groff's own warnings (man --warnings: font, spacing, macro misuse)
	MANWIDTH=80 man --warnings -l "$out" 2>"$tmp/$page.warn" >/dev/null
	[ ! -s "$tmp/$page.warn" ] && ok "renders_$page" ||
		notok "renders_$page" "$(head -n 3 "$tmp/$page.warn")"
}

"$M" --help >"$tmp/memlens.help" 2>&1
check_page memlens "$tmp/memlens.help"
for c in $cmds; do
	if ! "$M" "$c" --help >"$tmp/$c.help" 2>&1; then
		notok "help_$c" "memlens $c --help failed: $(head -n 3 "$tmp/$c.help")"
		continue
	fi
	check_page "memlens-$c" "$tmp/$c.help"
done

# no page for a command that is not there any more
stale=
for f in doc/man/memlens-*.8.rst; do
	c=${f#doc/man/memlens-}; c=${c%.8.rst}
	echo "$cmds" | grep -qx -- "$c" || stale="$stale $f"
done
[ -z "$stale" ] && ok no_stale_pages || notok no_stale_pages "pages of no command:$stale"

# user-visible text describes behaviour, never internal documents
if grep -nE 'seed|§|[Ii]ssue [0-9]|DESIGN\.md|README|Fig\. ' doc/man/*.rst >"$tmp/refs"; then
	notok no_internal_references "$(head -n 3 "$tmp/refs")"
else
	ok no_internal_references
fi
