#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes a seccomp profile that is podman's default one (containers-common's
/usr/share/containers/seccomp.json) with userfaultfd() allowed: what the
application container needs for memlens's agent to profile it (the agent
injects userfaultfd() into it). Usage:

    seccomp-userfaultfd.py OUT.json [DEFAULT.json]

Put OUT.json where the Pod's Localhost profile names it
(deploy/kubernetes/memlens-agent-sidecar.yaml: default-with-userfaultfd.json
in kubelet's seccomp directory, or podman kube play --seccomp-profile-root).
"""
import json
import sys

if len(sys.argv) not in (2, 3):
    sys.exit("usage: seccomp-userfaultfd.py OUT.json [DEFAULT.json]")
src = sys.argv[2] if len(sys.argv) == 3 else "/usr/share/containers/seccomp.json"
try:
    profile = json.load(open(src))
except (OSError, ValueError) as e:
    sys.exit("seccomp-userfaultfd.py: cannot read the default profile %s: %s "
             "(install golang-github-containers-common, or name another)" % (src, e))
for rule in profile.get("syscalls", []):
    if "userfaultfd" in rule.get("names", []) and rule.get("action") != "SCMP_ACT_ALLOW":
        rule["names"].remove("userfaultfd")
profile["syscalls"] = [r for r in profile.get("syscalls", []) if r.get("names")]
profile["syscalls"].append({"names": ["userfaultfd"], "action": "SCMP_ACT_ALLOW"})
with open(sys.argv[1], "w") as f:
    json.dump(profile, f, indent=1)
    f.write("\n")
