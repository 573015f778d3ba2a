#!/bin/bash
# memlens leaks --sample -- CMD with the preloaded sampler (the host test):
# its two markers probed by uprobe_multi links or, before Linux 6.6,
# perf-event uprobes; the sampler's frames dropped from the stacks whether
# or not the kernel adds the return address at a function's entry (6.13+).
. tests/kernels/cases/lib.bash
run_host_test test_leaks_preload.sh
