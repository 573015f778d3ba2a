#!/bin/bash
# One option language: for every command, --help fits 80 columns and its
# usage line names exactly the options of the parser's table (printed by
# --list-options); a common option (-p/--pid, -d/--duration, ...) has the
# same letter, long name and argument everywhere; no letter has two long
# names; a bad option or value is one line plus the "Try" line (exit 2);
# --version gives memlens's, libbpf's and the kernel's versions. Then
# `writes -- CMD`: -d N gives N intervals, and Ctrl-C (SIGINT) reaches CMD
# itself and stops it (the stop latency is printed, not asserted).
set -u
. "$(dirname "$0")/../lib.bash"
M=${MEMLENS:?} W=${WORKLOADS:?}
PY=${PYTHON:-python3}
t_tmpdir cli-options

# the commands `memlens --help` lists; the agent only when memlens-agent is built
cmds=$("$M" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
list=""
for c in $cmds; do
	if [ "$c" = agent ] && ! "$M" agent --help >/dev/null 2>&1; then
		skip agent_options "memlens-agent is not built (scripts/packages/agent.txt)"
		continue
	fi
	list+=" $c"
done

$PY - "$M" "$(uname -r)" $list <<'PYEOF'
import re, subprocess, sys

M, release, cmds = sys.argv[1], sys.argv[2], sys.argv[3:]
COMMON = {  # long name: (letter, argument)
    "pid": ("p", "PID"), "duration": ("d", "SEC"), "interval": ("i", "MS"),
    "output": ("o", "FILE"), "json": ("-", "-"), "quiet": ("q", "-"),
    "verbose": ("v", "-"), "help": ("h", "-"), "version": ("V", "-"),
    "threshold": ("t", "RATIO"), "consecutive": ("c", "N"), "images-dir": ("D", "DIR"),
    "listen": ("l", "HOST:PORT"), "max-rounds": ("m", "N"), "round-interval": ("r", "SEC"),
    "stop-threshold": ("-", "MIB"), "top": ("T", "N"), "criu": ("-", "PATH"),
    "timeout": ("-", "SEC"), "criu-opt": ("-", "OPT"), "threads": ("-", "N"),
    "tcp": ("-", "POLICY"),
}

def run(*args):
    return subprocess.run([M, *args], capture_output=True, text=True, timeout=60)

def report(name, good, *detail):
    print(("ok - " if good else "not ok - ") + name)
    if not good:
        for d in detail:
            for l in str(d).splitlines()[:12]:
                print("#   " + l)

letters = {}  # letter -> {long name: [commands]}
longs = {}    # long name -> {(letter, arg): [commands]}
h = run("--help")
report("memlens_help_fits_80_columns",
       h.returncode == 0 and max(map(len, h.stdout.splitlines())) <= 80,
       *[l for l in h.stdout.splitlines() if len(l) > 80])
for cmd in cmds:
    h = run(cmd, "--help")
    lines = h.stdout.splitlines()
    wide = [f"{len(l)}: {l}" for l in lines if len(l) > 80]
    report(f"{cmd}_help_fits_80_columns", h.returncode == 0 and lines and not wide,
           f"exit {h.returncode}", *wide)
    t = run(cmd, "--list-options")
    table = [l.split(" ", 2) for l in t.stdout.splitlines()]
    opts = [(a, b, c.split(" ")[0]) for a, b, c in table if a not in ("--",) and b != "-"
            and not c.endswith(" hidden")]
    report(f"{cmd}_option_table", t.returncode == 0 and len(opts) >= 3, t.stdout, t.stderr)
    # the usage line: from "usage:" to the first empty line
    usage = []
    for l in lines:
        if usage and not l.strip():
            break
        if l.startswith("usage:") or usage:
            usage.append(l)
    usage = " ".join(usage)
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])(?![\w-])", usage))
    for g in re.findall(r"\[-([a-zA-Z]{2,})\]", usage):
        named |= {"-" + x for x in g}
    body = h.stdout[len(usage):]
    missing, stray = [], []
    known = set()
    for letter, name, arg in opts:
        forms = ({"-" + letter} if letter != "-" else set()) | {"--" + name}
        known |= forms
        if name in ("help", "version"):
            continue
        if not forms & named:
            missing.append(f"the usage line lacks {'/'.join(sorted(forms))}")
        if "--" + name not in body:
            missing.append(f"--help does not describe --{name}")
        letters.setdefault(letter, {}).setdefault(name, []).append(cmd)
        longs.setdefault(name, {}).setdefault((letter, arg), []).append(cmd)
    stray = [f"the usage line names {x}, which the table lacks" for x in sorted(named - known)]
    report(f"{cmd}_usage_matches_table", not missing and not stray, *(missing + stray), usage)
    # bad usage: one line and the Try line, exit 2, nothing on stdout
    try_line = f"Try 'memlens {cmd} --help'."
    for what, args in (("unknown_option", ["--no-such-option"]), ("unknown_letter", ["-Z"])):
        r = run(cmd, *args)
        err = r.stderr.splitlines()
        report(f"{cmd}_{what}_one_line", r.returncode == 2 and len(err) == 2 and
               err[0].startswith(f"memlens {cmd}: ") and err[1] == try_line and not r.stdout,
               f"exit {r.returncode}", r.stderr, r.stdout)
    with_arg = [o for o in opts if o[2] != "-" and o[1] not in ("help", "version")]
    if with_arg:
        r = run(cmd, "--" + with_arg[0][1])  # its argument is missing
        err = r.stderr.splitlines()
        report(f"{cmd}_missing_argument_one_line", r.returncode == 2 and len(err) == 2 and
               "needs an argument" in err[0] and err[1] == try_line,
               f"exit {r.returncode}", r.stderr)
    nums = [o for o in opts if o[1] in ("pid", "duration", "interval", "timeout", "top")]
    if nums:
        r = run(cmd, "--" + nums[0][1], "not-a-number")
        err = r.stderr.splitlines()
        report(f"{cmd}_bad_value_one_line", r.returncode == 2 and len(err) == 2 and
               "not-a-number" in err[0] and err[1] == try_line, f"exit {r.returncode}", r.stderr)
    v = run(cmd, "--version").stdout.splitlines()
    report(f"{cmd}_version", len(v) >= 3 and v[0].startswith("memlens ") and
           v[1].startswith("using libbpf") and v[2].startswith("kernel " + release), *v)

# common options: one letter, long name and argument name in every command
for name, (letter, arg) in COMMON.items():
    got = longs.get(name, {})
    bad = [f"--{name} is -{l} {a} in {', '.join(c)}" for (l, a), c in got.items()
           if (l, a) != (letter, arg)]
    report(f"common_option_{name}_same_everywhere", not bad, *bad)
bad = [f"-{l}: " + "; ".join(f"--{n} in {', '.join(c)}" for n, c in names.items())
       for l, names in letters.items() if l != "-" and len(names) > 1]
report("one_letter_one_long_name", not bad, *bad)
bad = [f"--{n}: " + "; ".join(f"-{l} {a} in {', '.join(c)}" for (l, a), c in forms.items())
       for n, forms in longs.items() if len({l for l, a in forms}) > 1]
report("one_long_name_one_letter", not bad, *bad)

v = run("--version").stdout.splitlines()
report("version_memlens_libbpf_kernel_features",
       len(v) >= 4 and re.match(r"memlens \d", v[0]) and
       re.match(r"using libbpf (v\d+\.\d+|: no)", v[1]) and v[2].startswith("kernel " + release)
       and any(l.startswith("features: ") for l in v), *v)
r = run()
report("no_command_one_line", r.returncode == 2 and r.stderr.splitlines() ==
       ["memlens: give a command", "Try 'memlens --help'."], r.stderr)
r = run("no-such-command")
report("unknown_command_one_line", r.returncode == 2 and len(r.stderr.splitlines()) == 2, r.stderr)
PYEOF

# --- writes -d N without -i: N intervals of 1 s; "1 interval" -------------
"$M" writes -d 2 --json -- "$W/memwrite" -m 4 >"$tmp/d2.json" 2>"$tmp/d2.err"
rc=$?
nint=$(grep -c '"type":"interval"' "$tmp/d2.json")
summ=$(grep -o '"intervals":[0-9]*' "$tmp/d2.json")
want='"intervals":2'
check writes_duration_2_is_2_intervals '[ $rc = 0 ] && [ "$nint" = 2 ] && [ "$summ" = "$want" ]' \
	"rc=$rc intervals printed: $nint, summary: $summ $(head -3 "$tmp/d2.err")"
"$M" writes -d 1 -- "$W/memwrite" -m 4 >"$tmp/d1.txt" 2>&1
grep -q "^summary: pid [0-9]*, 1 interval, stopped because the duration elapsed" "$tmp/d1.txt"
check_rc writes_one_interval_singular $? "$(grep summary "$tmp/d1.txt")"

# --- checkpoint: a profile too short to find a hot VMA is said so ---------
# (a live target, checked first, and a CRIU that is not there: nothing is dumped)
sleep 60 &
ck_target=$!
"$M" checkpoint -p "$ck_target" -D "$tmp/ck" -d 2 --criu /nonexistent/criu 2>"$tmp/ck.err" >/dev/null
kill "$ck_target"
grep -q "none can be found" "$tmp/ck.err" && grep -q -- "-d 4" "$tmp/ck.err"
check_rc checkpoint_short_profile_warned $? "$(cat "$tmp/ck.err")"

# --- SIGINT to `memlens writes -- CMD`: CMD gets the SIGINT itself --------
# CMD records the signal that ended it; the test waits for CMD's "ready"
# (the profiler is attached before CMD runs), sends SIGINT to memlens only.
$PY - "$M" "$tmp" <<'PYEOF'
import os, signal, subprocess, sys, time

M, tmp = sys.argv[1], sys.argv[2]
mark = os.path.join(tmp, "stopped-by")
target = ("import os, signal, sys, time\n"
          "def on(sig, _):\n"
          "    open(%r, 'w').write(signal.Signals(sig).name)\n"
          "    os._exit(0)\n"
          "signal.signal(signal.SIGINT, on)\n"
          "signal.signal(signal.SIGTERM, on)\n"
          "print('ready', flush=True)\n"
          "while True:\n"
          "    time.sleep(0.01)\n") % mark
p = subprocess.Popen([M, "writes", "-i", "100", "-o", os.path.join(tmp, "w.out"), "--",
                      sys.executable, "-c", target], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
line = p.stdout.readline()
if line.strip() != "ready":
    p.kill()
    print("not ok - writes_cmd_sigint_stops_cmd")
    print("#   CMD never said ready: %r %s" % (line, p.stderr.read()[:300]))
    sys.exit(0)
time.sleep(0.3)  # a few intervals under the profiler
t0 = time.monotonic()
p.send_signal(signal.SIGINT)
try:
    rc = p.wait(timeout=30)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
dt = time.monotonic() - t0
got = open(mark).read() if os.path.exists(mark) else "nothing (SIGKILL, or it never ran)"
print("# writes -- CMD: SIGINT to memlens -> exited in %.3f s (the aim: under 0.5 s); "
      "CMD ended by %s" % (dt, got))
good = rc == 0 and got == "SIGINT"
print(("ok - " if good else "not ok - ") + "writes_cmd_sigint_stops_cmd")
if not good:
    print("#   memlens exit %s, CMD ended by %s; %s" % (rc, got, p.stderr.read()[:300]))
summary = open(os.path.join(tmp, "w.out")).read()
good = "stopped because interrupted" in summary
print(("ok - " if good else "not ok - ") + "writes_cmd_sigint_summary")
PYEOF
