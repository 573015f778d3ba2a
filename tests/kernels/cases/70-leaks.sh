#!/bin/bash
# memlens leaks: exact leaked block counts through uprobes (the host test).
. tests/kernels/cases/lib.bash
run_host_test test_leaks.sh GIT_COMMITS=60
