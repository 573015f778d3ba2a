#!/bin/bash
# Servers: bytes with shared memory against the image files, the TCP policy
# (a real client on loopback, its connection kept or closed through a dump
# and a restore), the dump options a restore repeats; CRIU's refusals
# explained where this kernel makes CRIU refuse.
cd "$(dirname "$0")/../../.." || exit 1
exec bash tests/integration/test_criu_servers.sh
