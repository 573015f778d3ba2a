#!/bin/bash
# memlens oom: a real OOM kill in a cgroup v2 with memory.max 64M and
# memory.swap.max 0 (the guest mounts cgroup2): victim pid and comm, anon
# rss as the kernel logged it, limit 64 MiB, scope cgroup, memory.events
# oom_kill +1, through fentry on oom_kill_process where the kernel allows.
. tests/kernels/cases/lib.bash
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && ok oom_guest_has_cgroup_v2 ||
	notok oom_guest_has_cgroup_v2 "/sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup)"
run_host_test test_oom.sh
