#!/bin/bash
# case-timeout: 1200
# A JVM (Debian's openjdk): workloads/java/HeapChurn.java, compiled here
# with javac, run as nobody: 2 threads rewrite 64 MiB of long arrays pass
# after pass (allocating as they go), 128 MiB written once and idle.
# checkpoint -> restore, and migrated to another network namespace with and
# without leaving its hot memory out (tests/kernels/cases/server_lib.bash);
# after each, the restored JVM stops its threads and checks every array
# against what its passes must have written, and prints its checksums.
# Opt-in: CASES=server.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/kernels/cases/server_lib.bash
command -v javac >/dev/null && command -v java >/dev/null ||
	{ skip server_jvm "no JDK (openjdk-17-jdk-headless: scripts/packages/optional/servers.txt)"; exit 0; }
server_begin jvm 224
mkdir -p "$tmp/java"
if ! javac -d "$tmp/java" workloads/java/HeapChurn.java >"$tmp/javac.log" 2>&1; then
	notok server_jvm "javac failed: $(tail -n 3 "$tmp/javac.log")"
	exit 0
fi
chmod -R a+rX "$tmp/java"
JN=0
srv_start() {
	JN=$((JN + 1))
	JOUT=$tmp/jvm$JN.out JCHECK=$tmp/jvm$JN.check
	setsid nsenter --net="$(ns_path "$1")" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		java -Xms384m -Xmx384m -XX:+UseSerialGC -XX:-UsePerfData -cp "$tmp/java" \
		HeapChurn 64 128 2 "$JCHECK" </dev/null >"$JOUT" 2>&1 &
	SP=$!
	wait_for_line "$JOUT" "heapchurn ready" 300 && return 0
	echo "# the JVM is not ready: $(tail -n 2 "$JOUT")"
	return 1
}
srv_load() { echo "# $(grep -m1 'heapchurn ready' "$JOUT"); $(ls /proc/$SP/task | wc -l) threads"; }
srv_check() {
	touch "$JCHECK"
	wait_for_line "$JOUT" "heapchurn: (checksums correct|WRONG)" 300
	VNOTE=$(grep '^heapchurn: ' "$JOUT" | tr '\n' ';' | cut -c1-400)
	grep -q "heapchurn: checksums correct" "$JOUT"
}
srv_clients() { CNOTE="no clients"; return 2; }
server_chain
exit 0
