#!/bin/bash
# case-timeout: 4800
# The migration bench (bench/migrate.sh) on redis in the guest. It takes
# minutes, so it runs only when asked for: CASES=migrate-bench.
set -u
cd "$(dirname "$0")/../../.." || exit 1
if [[ "${memlens_cases:-}" != *migrate-bench* ]]; then
	echo "skip - migrate_bench_redis: runs only when asked for (CASES=migrate-bench tests/kernels/run.sh 6.12)"
	exit 0
fi
bash bench/migrate.sh redis

