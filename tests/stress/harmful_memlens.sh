#!/bin/bash
# A stand-in for memlens that harms its target on purpose, for the stress
# suite's self-test (tests/stress/selftest.sh): the suite must see it.
#   harmful_memlens.sh writes -p PID ...    (other arguments ignored)
# STRESS_HARM says how:
#   sig:NAME   kill(2) the target with SIGNAME (si_code SI_USER), 5 times,
#              each while no SIGNAME is pending (it would merge with it)
#   stopcont   SIGSTOP, then SIGCONT (a job-control stop: epoll_wait EINTRs)
#   stop       SIGSTOP, and leave it stopped
set -u
pid=
while [ $# -gt 0 ]; do
	[ "$1" = -p ] && pid=$2
	shift
done
[ -n "$pid" ] || exit 2
case ${STRESS_HARM:?} in
sig:*)
	# A standard signal sent while one of its kind is pending merges with
	# it and is lost: a target descheduled on a loaded machine always has
	# its 1 ms SIGALRM pending. So the first goes at once (the kill-random
	# cases kill memlens within ms of its start), and 4 more each while the
	# target has none pending (ShdPnd of /proc/PID/status), within ~4 s.
	s=${STRESS_HARM#sig:}
	kill -s "$s" "$pid" 2>/dev/null
	bit=$((1 << ($(kill -l "$s") - 1)))
	sent=1
	for ((i = 0; i < 2000 && sent < 5; i++)); do
		sleep 0.002
		pnd=
		while read -r k v; do [ "$k" = ShdPnd: ] && pnd=$v && break; done \
			<"/proc/$pid/status" 2>/dev/null
		[ -n "$pnd" ] || break
		if (((16#$pnd & bit) == 0)); then
			kill -s "$s" "$pid" 2>/dev/null || break
			sent=$((sent + 1))
		fi
	done
	;;
stopcont) kill -STOP "$pid"; sleep 0.01; kill -CONT "$pid" ;;
stop) kill -STOP "$pid" ;;
*) exit 2 ;;
esac
sleep 0.02
