# Shared by the shell tests (sourced, not run): facts about /proc.

# kthread_pid: the pid of a kernel thread we can see (kthreadd is 2 in the
# initial PID namespace; none is visible inside another), or nothing.
kthread_pid() {
	local d s
	for d in /proc/[0-9]*; do
		s=$(cat "$d/stat" 2>/dev/null) || continue
		s=${s##*) }
		# fields after the comm: state ppid pgrp session tty tpgid flags
		set -- $s
		if (($7 & 0x200000)); then	# PF_KTHREAD
			echo "${d#/proc/}"
			return
		fi
	done
}
