#!/bin/bash
# A stand-in for memlens that harms its target on purpose, for the stress
# suite's self-test (tests/stress/selftest.sh): the suite must see it.
#   harmful_memlens.sh writes -p PID ...    (other arguments ignored)
# STRESS_HARM says how:
#   sig:NAME   kill(2) the target with SIGNAME (si_code SI_USER), 5 times
#              2 ms apart (a standard signal merges with one pending)
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
sig:*) for _ in 1 2 3 4 5; do kill -s "${STRESS_HARM#sig:}" "$pid" 2>/dev/null; sleep 0.002; done ;;
stopcont) kill -STOP "$pid"; sleep 0.01; kill -CONT "$pid" ;;
stop) kill -STOP "$pid" ;;
*) exit 2 ;;
esac
sleep 0.02
