#!/bin/bash
# The sidecar Pod of test_pod.sh with Debian's redis-server as the
# application container (its image made by scripts/app-image.sh): see there.
APP=redis exec bash "$(dirname "$0")/test_pod.sh"
