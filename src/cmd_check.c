// SPDX-License-Identifier: MIT
/*
 * memlens check: what this machine offers memlens, each feature probed by
 * using it once on memlens's own memory, with the commands that need it
 * and what to do when it is missing.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cliutil.h"
#include "table.h"
#include "criu_cli.h"
#include "install_paths.h"
#include "opts.h"
#include "output.h"
#include "command.h"
#include "memlens/format_check.h"
#include "memlens/criu.h"
#include "memlens/features.h"
#include "trace/trace.h"

static const char about[] =
	"Probe what this machine offers memlens: PAGEMAP_SCAN, async write-protect\n"
	"userfaultfd, soft-dirty, kpageflags, ptrace, pidfd_getfd, the PID namespace,\n"
	"THP, swap; eBPF (BTF, tp_btf, fentry, ring buffers, uprobes); CRIU (version,\n"
	"`criu check`, pre-dump, the exclude options, sockets). Each probe uses the feature\n"
	"once on memlens's own memory; no other process is touched. Every missing\n"
	"feature is listed with the commands that need it and what to do.\n";

static const char footer[] =
	"Exit status: 0 the core (what writes needs) is here; 5 a core feature is\n"
	"missing (the output says which); 2 usage. snapshot runs either way: without\n"
	"PAGEMAP_SCAN it reads /proc/PID/pagemap.\n";

struct check_cli {
	const char *criu;
	bool no_criu;
	bool json;
};

static int parse_args(int argc, char **argv, struct check_cli *c)
{
	const char *out = NULL;
	struct cli_opt opts[] = {
		CLI_OPT_JSON(&c->json, "one JSON object on one line"),
		CLI_OPT_OUTPUT(&out,
			       "write what would go to stdout (text, or JSON with --json) to FILE"),
		CLI_OPT_CRIU(&c->criu, "the CRIU to check (default: as `memlens checkpoint` finds "
				       "it)"),
		{ .name = "no-criu",
		  .kind = CLI_FLAG,
		  .target = &c->no_criu,
		  .help = "do not look for CRIU (it runs `criu check`, ~0.5 s)" },
		CLI_OPT_END,
	};
	struct cli_spec spec = { .cmd = "check", .about = about, .footer = footer, .opts = opts };
	int first, r = cli_parse(&spec, argc, argv, &first);

	return r ? r : out_option("check", out);
}

/*
 * Since Linux 6.16 SO_PASSCRED and SO_PASSSEC exist only on unix and
 * netlink sockets, and CRIU before 4.2 asks every socket for them: its
 * dump of a process with a TCP or UDP socket fails.
 */
static void probe_criu_sockets(struct ml_feature_list *l, const char *version)
{
	static const char used[] =
		"checkpoint, migrate, agent of a process with a TCP or UDP socket";
	int kmaj = 0, kmin = 0, cmaj = 0, cmin = 0;
	struct utsname u;

	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &kmaj, &kmin) != 2 ||
	    sscanf(version, "%d.%d", &cmaj, &cmin) != 2)
		return;
	if (kmaj * 1000 + kmin < 6016 || cmaj * 1000 + cmin >= 4002)
		ml_feature_add(l, "criu", "criu_sockets", ML_FEATURE_OK, used, NULL,
			       "CRIU %s can dump TCP and UDP sockets on Linux %d.%d", version, kmaj,
			       kmin);
	else
		ml_feature_add(l, "criu", "criu_sockets", ML_FEATURE_MISSING, used,
			       "give CRIU 4.2 or newer with --criu PATH or MEMLENS_CRIU, or "
			       "checkpoint on a kernel before 6.16",
			       "CRIU %s cannot dump a TCP or UDP socket on this kernel: since "
			       "Linux 6.16 only unix and netlink sockets have SO_PASSCRED, which "
			       "CRIU before 4.2 asks every socket for",
			       version);
}

static void probe_criu(struct ml_feature_list *l, const char *explicit_path)
{
	static const char used[] = "checkpoint, restore, agent (dumps)";
	struct ml_err err = { 0 };
	ML_RESULT(ml_criu_caps, caps);
	char path[4096], opts[128];

	if (criu_cli_locate(explicit_path, path, sizeof(path), &err)) {
		ml_feature_add(
			l, "criu", "criu", ML_FEATURE_MISSING, used,
			"install CRIU 4.1 or newer (Debian's criu from trixie on; leaving hot "
			"pages out needs 4.1.1 built with memlens's patches, " MEMLENS_DATADIR
			"/criu-patches, which scripts/ensure-criu.sh of the source tree builds in "
			"minutes), or give one with --criu PATH / MEMLENS_CRIU",
			"%s", err.msg);
		return;
	}
	if (ml_criu_probe(path, &caps, &err) || !caps.works) {
		const char *tree = criu_cli_build_criu();
		static char fix[PATH_MAX * 3 + 128]; /* the list keeps the pointer */

		/* a CRIU on PATH comes first: say so when the source tree's own one is there */
		if (tree && strcmp(tree, path))
			snprintf(fix, sizeof(fix),
				 "use the CRIU this build found, %s: pass --criu %s or set "
				 "MEMLENS_CRIU=%s (the one on PATH comes first)",
				 tree, tree, tree);
		else
			snprintf(fix, sizeof(fix), "%s",
				 "use CRIU 4.1 or newer (scripts/ensure-criu.sh builds 4.1.1)");
		ml_feature_add(l, "criu", "criu", ML_FEATURE_MISSING, used, fix,
			       "%s %s fails `criu check`: %s", path, caps.version,
			       err.msg[0] ? err.msg : caps.check_msg);
		return;
	}
	ml_feature_add(l, "criu", "criu", ML_FEATURE_OK, used, NULL,
		       "CRIU %s at %s; `criu check` passes", caps.version, path);
	if (caps.mem_dirty_track)
		ml_feature_add(l, "criu", "criu_pre_dump", ML_FEATURE_OK,
			       "checkpoint --pre-dump, migrate", NULL,
			       "`criu check --feature mem_dirty_track` passes");
	else
		ml_feature_add(l, "criu", "criu_pre_dump", ML_FEATURE_MISSING,
			       "checkpoint --pre-dump, migrate",
			       "needs soft-dirty in the kernel (see soft_dirty); take full dumps "
			       "meanwhile (migrate does one stop-and-copy dump)",
			       "`criu check --feature mem_dirty_track` fails");
	probe_criu_sockets(l, caps.version);
	ml_criu_caps_options(&caps, opts, sizeof(opts));
	/* exclusion happens in pre-dumps only: say so where there are none */
	const char *here = caps.mem_dirty_track
				   ? ""
				   : "; but this kernel has no soft-dirty (criu_pre_dump): no "
				     "pre-dumps here, so nothing is left out";
	if (caps.page_granular)
		ml_feature_add(l, "criu", "criu_exclude", ML_FEATURE_OK,
			       "checkpoint --pre-dump, migrate, agent (hot-memory exclusion)", NULL,
			       "page granularity: pre-dumps leave hot pages out one by one, per "
			       "process; a dump writes every VMA (%s)%s",
			       opts, here);
	else if (ml_criu_can_exclude(&caps))
		ml_feature_add(
			l, "criu", "criu_exclude", ML_FEATURE_OK,
			"checkpoint --pre-dump, migrate, agent (hot-memory exclusion)",
			caps.no_parent_range
				? "VMA granularity (the older CRIU fork of 4.0): every VMA a hot "
				  "range touches is left out whole, from every process of the "
				  "tree; CRIU 4.1.1 built with memlens's patches leaves out pages"
				: "without --no-parent-range a pre-dump whose parent left "
				  "memory out is taken without that parent",
			"VMA granularity: pre-dumps leave hot VMAs out whole; a dump writes "
			"every VMA; this CRIU accepts: %s%s",
			opts, here);
	else
		ml_feature_add(
			l, "criu", "criu_exclude", ML_FEATURE_MISSING,
			"checkpoint, migrate, agent (hot-VMA exclusion)",
			"the CRIU 4.1.1 that scripts/ensure-criu.sh builds with memlens's "
			"patches (" MEMLENS_DATADIR
			"/criu-patches) leaves out pages; the older CRIU fork of 4.0 with the "
			"exclude options, whole VMAs; give one with --criu PATH or MEMLENS_CRIU "
			"(upstream CRIU has none)",
			"this CRIU accepts neither exclude option (%s): nothing is left out of "
			"any dump or pre-dump",
			opts);
}

static const char *state_name(enum ml_feature_state s)
{
	return s == ML_FEATURE_OK ? "ok" : s == ML_FEATURE_MISSING ? "missing" : "info";
}

static void print_json(const struct ml_feature_list *l, const struct utsname *u, bool core_ok)
{
	struct ml_check_rec rec = { .kernel = u->release,
				    .arch = u->machine,
				    .root = geteuid() == 0,
				    .core_ok = core_ok,
				    .features = l->items,
				    .nfeatures = l->n };
	struct ml_jw w;

	ml_jw_init(&w, stdout);
	ml_fmt_check(&w, &rec);
}

static void print_human(const struct ml_feature_list *l, const struct utsname *u, bool core_ok)
{
	const char *group = "";
	int width = table_width(stdout);

	printf("memlens check: Linux %s %s, %s\n", u->release, u->machine,
	       geteuid() == 0 ? "running as root" : "not root (some probes need root)");
	for (size_t i = 0; i < l->n; i++) {
		const struct ml_feature *f = &l->items[i];

		if (strcmp(group, f->group)) {
			group = f->group;
			printf("\n%s\n", group);
		}
		/* the name column widens for a long name; the text wraps under itself */
		table_wrap(stdout, width, 27, "  %-8s %-15s %s",
			   f->state == ML_FEATURE_MISSING ? "MISSING" : state_name(f->state),
			   f->name, f->detail);
		if (f->state != ML_FEATURE_INFO)
			table_wrap(stdout, width, 27, "  %-8s %-15s used by: %s", "", "",
				   f->used_by);
		if (f->fix)
			table_wrap(stdout, width, 27, "  %-8s %-15s fix: %s", "", "", f->fix);
	}
	fputc('\n', stdout);
	table_wrap(stdout, width, 0, "%s",
		   core_ok ? "memlens writes and snapshot can run here."
			   : "memlens writes cannot run here: a core feature (marked core in "
			     "--json) is missing, see above. memlens snapshot can (without "
			     "PAGEMAP_SCAN it reads /proc/PID/pagemap: same counts, slower).");
}

static int cmd_check(int argc, char **argv)
{
	static struct ml_feature_list l; /* ~27 KiB */
	struct check_cli c = { 0 };
	struct utsname u;
	bool core_ok = true;
	int rc;

	rc = parse_args(argc, argv, &c);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	uname(&u);
	ml_features_probe_memory(&l);
	mlt_trace_probe_features(&l);
	if (!c.no_criu)
		probe_criu(&l, c.criu);
	for (size_t i = 0; i < l.n; i++)
		if (l.items[i].core && l.items[i].state == ML_FEATURE_MISSING)
			core_ok = false;
	if (c.json)
		print_json(&l, &u, core_ok);
	else
		print_human(&l, &u, core_ok);
	return core_ok ? EXIT_OK : EXIT_NOFEATURE;
}

MEMLENS_COMMAND(check, "check", 5, "what this machine supports: kernel features, eBPF, CRIU",
		cmd_check);
