#!/bin/bash
# memlens check: each answer against what this kernel really has (its
# config, its version, CRIU's own check, a forced fentry tracer).
. tests/kernels/cases/lib.bash
"$MEMLENS" check --json >"$C_TMP/c.json" 2>"$C_TMP/c.err"
rc=$?
state() { jq_last "$C_TMP/c.json" "next((f['state'] for f in d['features'] if f['name'] == '$1'), 'absent')"; }
detail() { jq_last "$C_TMP/c.json" "next((f['detail'] for f in d['features'] if f['name'] == '$1'), '')"; }
echo "# $(jq_last "$C_TMP/c.json" "' '.join(f['name'] + '=' + f['state'] for f in d['features'])")"
# the core (PAGEMAP_SCAN, async write-protect: 6.7+) decides the exit status
if kernel_at_least 6 7; then want="0 True"; else want="5 False"; fi
[ "$rc $(jq_last "$C_TMP/c.json" "d['core_ok']")" = "$want" ] && ok "check_exit_and_core_ok_${want// /_}" ||
	notok "check_exit_and_core_ok_${want// /_}" "exit $rc, core_ok $(jq_last "$C_TMP/c.json" "d['core_ok']"): $(cat "$C_TMP/c.err")"
[ "$(state uffd_wp_async)" = "$([ "${want%% *}" = 0 ] && echo ok || echo missing)" ] &&
	ok uffd_wp_async_as_the_version_says ||
	notok uffd_wp_async_as_the_version_says "check says $(state uffd_wp_async): $(detail uffd_wp_async)"

# PAGEMAP_SCAN came in 6.7
kernel_at_least 6 7 && want=ok || want=missing
[ "$(state pagemap_scan)" = $want ] && ok "pagemap_scan_is_$want" ||
	notok "pagemap_scan_is_$want" "check says $(state pagemap_scan): $(detail pagemap_scan)"

# soft-dirty: the kernel's config, and CRIU's own check of the kernel
[ "$(kconfig MEM_SOFT_DIRTY)" = y ] && want=ok || want=missing
[ "$(state soft_dirty)" = $want ] && ok "soft_dirty_is_${want}_as_configured" ||
	notok "soft_dirty_is_${want}_as_configured" "check says $(state soft_dirty): $(detail soft_dirty)"
if [ -n "${MEMLENS_CRIU:-}" ]; then
	"$MEMLENS_CRIU" check --feature mem_dirty_track >/dev/null 2>&1 && cw=ok || cw=missing
	[ "$(state criu_pre_dump)" = $cw ] && [ $cw = $want ] && ok criu_pre_dump_agrees_with_criu ||
		notok criu_pre_dump_agrees_with_criu "criu says $cw, config says $want, check says $(state criu_pre_dump)"
else
	skip criu_pre_dump_agrees_with_criu "no CRIU built (scripts/ensure-criu.sh)"
fi

# fentry: what a forced fentry tracer says
"$MEMLENS" faults --mode fentry -d 0.1 >/dev/null 2>"$C_TMP/f.err"
case $? in 0) want=ok ;; 5) want=missing ;; *) want="unknown ($(cat "$C_TMP/f.err"))" ;; esac
[ "$(state fentry)" = "$want" ] && ok "fentry_is_$want" ||
	notok "fentry_is_$want" "faults --mode fentry: $want; check: $(state fentry): $(detail fentry)"

# leaks' uprobe links: uprobe_multi came in 6.6, uprobe sessions in 6.13;
# check says so, and leaks takes exactly what the kernel has, falling back
# from one to the next (exact: the links, else single uprobes; sampled: a
# session, else the links, else single uprobes)
kernel_at_least 6 6 && um=ok || um=missing
kernel_at_least 6 13 && us=ok || us=missing
[ "$(state uprobe_multi) $(state uprobe_session)" = "$um $us" ] &&
	ok "uprobe_multi_${um}_session_${us}_as_the_version_says" ||
	notok "uprobe_multi_${um}_session_${us}_as_the_version_says" \
		"check says uprobe_multi $(state uprobe_multi), uprobe_session $(state uprobe_session)"
"$MEMLENS" leaks --json -- /bin/true >"$C_TMP/le.json" 2>"$C_TMP/le.err"
"$MEMLENS" leaks --json --sample 512K --sampler uprobe -- /bin/true >"$C_TMP/ls.json" 2>"$C_TMP/ls.err"
want="$([ $um = ok ] && echo uprobe_multi || echo uprobe) $([ $us = ok ] && echo uprobe_session ||
	{ [ $um = ok ] && echo uprobe_multi || echo uprobe; })"
got="$(jq_last "$C_TMP/le.json" "d['mode']") $(jq_last "$C_TMP/ls.json" "d['mode']")"
[ "$got" = "$want" ] && ok "leaks_modes_${want// /_}" ||
	notok "leaks_modes_${want// /_}" "leaks, leaks --sample took $got: $(cat "$C_TMP/le.err" "$C_TMP/ls.err")"

# kprobes: the config, and the kprobe PMU
if [ "$(kconfig KPROBES)" = y ]; then
	[ -d /sys/bus/event_source/devices/kprobe ] && ! detail kprobe | grep -q '^no ' &&
		ok kprobe_present || notok kprobe_present "check: $(detail kprobe)"
else
	detail kprobe | grep -q '^no ' && ok kprobe_absent || notok kprobe_absent "check: $(detail kprobe)"
fi

# the guest mounts cgroup v2 and tracefs
detail memory_cgroup | grep -q 'cgroup v2' && ok memory_cgroup_v2 ||
	notok memory_cgroup_v2 "check: $(detail memory_cgroup)"
detail tracefs | grep -q 'mounted' && ! detail tracefs | grep -q 'not mounted' && ok tracefs_mounted ||
	notok tracefs_mounted "check: $(detail tracefs)"
[ "$(state btf)" = ok ] && [ -f /sys/kernel/btf/vmlinux ] && ok btf_present ||
	notok btf_present "check: $(state btf): $(detail btf)"
# preemption: as debugfs's sched/preempt says (the guest mounts debugfs)
pm=$(preempt_mode)
if [ -z "$pm" ]; then
	skip preemption_as_sched_preempt_says "no sched/preempt in this guest's debugfs; check says: $(detail preemption)"
else
	want=$(preemption_says "$pm")
	[ "$(state preemption)" = info ] && [ "$(detail preemption | cut -c1-${#want})" = "$want" ] &&
		ok "preemption_${pm}_as_sched_preempt_says" ||
		notok "preemption_${pm}_as_sched_preempt_says" "sched/preempt: $pm; check: $(detail preemption)"
fi
c_done
