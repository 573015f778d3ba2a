#!/bin/bash
# Fuzz one libFuzzer harness for SECONDS from its seeds; prints one test line.
#   tests/fuzz/run.sh build/fuzz/fuzz_report 3
# Seeds: tests/fuzz/corpus/<name without fuzz_>/ (and tests/report/ for
# fuzz_report); new inputs go to build/fuzz/corpus-<name>/, crashes to
# build/fuzz/crash-*.
set -u
bin=$1 secs=${2:-3}
name=${bin##*/}
dir=$(dirname "$bin")
cd "$(dirname "$0")/../.."
seeds=()
[ -d "tests/fuzz/corpus/${name#fuzz_}" ] && seeds+=("tests/fuzz/corpus/${name#fuzz_}")
[ "$name" = fuzz_report ] && seeds+=(tests/report)
mkdir -p "$dir/corpus-$name"
log=$dir/$name.log
"$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=1024 \
	-artifact_prefix="$dir/" "$dir/corpus-$name" "${seeds[@]}" >"$log" 2>&1
rc=$?
runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1)
if [ $rc -eq 0 ]; then
	echo "ok - $name: ${secs} s (${runs:-?})"
else
	echo "not ok - $name: exit $rc (log: $log)"
	grep -E 'ERROR|SUMMARY|artifact|Test unit' "$log" | head -10 | sed 's/^/#   /'
fi
[ $rc -eq 0 ]
