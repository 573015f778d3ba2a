# Sourced first, with COMMAND as its argument, by the cases whose command
# profiles the target's writes (checkpoint, agent, migrate); it also sets -u
# for the case. Before Linux 6.7 (no PAGEMAP_SCAN, no async write-protect)
# the case checks that COMMAND says so clearly and leaves its target running
# (write_tracking_unsupported), then ends; on later kernels it goes on.
set -u
case $KVER in [0-5].* | 6.[0-6].* | 6.[0-6]-*)
	. tests/kernels/cases/lib.bash
	write_tracking_unsupported "$1"
	c_done
	exit
	;;
esac
