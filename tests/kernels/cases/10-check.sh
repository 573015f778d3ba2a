#!/bin/bash
# memlens check in the guest: the host test (every probe cross-checked
# against the tool that uses the feature) plus the kernel's own config.
bash tests/integration/test_check.sh
