#!/bin/bash
# memlens slab: net dentry objects vs /proc/slabinfo, with the kernel's own
# kmem_cache_alloc/free tracepoint prototypes (the host test, fewer files).
. tests/kernels/cases/lib.bash
run_host_test test_slab.sh SLAB_NFILES=4000 SLAB_DIR="${SCRATCH:-/var/tmp}"
