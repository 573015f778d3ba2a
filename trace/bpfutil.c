// SPDX-License-Identifier: MIT
/* What the tracers' user sides share below the command line (bpfutil.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfutil.h"

static trace_log_fn log_fn;
/* the last line of the last verifier log libbpf printed (why a load failed) */
static char verifier_said[256];

static void keep_verifier_line(const char *msg)
{
	const char *end = strstr(msg, "-- END PROG LOAD LOG --"), *b;

	if (!strstr(msg, "-- BEGIN PROG LOAD LOG --") || !end)
		return;
	while (end > msg && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (b = end; b > msg && b[-1] != '\n';)
		b--;
	if (end > b)
		snprintf(verifier_said, sizeof(verifier_said), "%.*s", (int)(end - b), b);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char msg[16384];
	va_list cp;

	if (level == LIBBPF_WARN) {
		va_copy(cp, ap);
		vsnprintf(msg, sizeof(msg), fmt, cp);
		va_end(cp);
		keep_verifier_line(msg);
	}
	return log_fn ? log_fn((int)level, fmt, ap) : 0;
}

void mlt_trace_libbpf_log(trace_log_fn fn)
{
	log_fn = fn;
	libbpf_set_print(libbpf_print);
}

const char *mlt_trace_verifier_said(void)
{
	return verifier_said;
}

/* PROC_PID_INIT_INO: the initial PID namespace's inode number */
#define PIDNS_INIT_INO 0xEFFFFFFCU

bool mlt_trace_pidns(__u64 *dev, __u64 *ino)
{
	struct stat st;

	*dev = *ino = 0;
	if (stat("/proc/self/ns/pid", &st) < 0 || st.st_ino == PIDNS_INIT_INO)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

/* CAP_SYS_ADMIN, or CAP_BPF + CAP_PERFMON, in the effective set */
static bool may_load_bpf(void)
{
	unsigned long long eff = 0;
	char line[256];
	bool found = false;
	FILE *f;

	if (geteuid() == 0)
		return true;
	f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	return (eff >> 21 & 1) || ((eff >> 39 & 1) && (eff >> 38 & 1));
}

int mlt_trace_preflight(struct ml_err *err)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return ml_err_set(
			err, ENOTSUP,
			"this kernel exposes no BTF (/sys/kernel/btf/vmlinux is missing): "
			"the eBPF tracers need a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	if (!may_load_bpf())
		return ml_err_set(err, EPERM,
				  "loading eBPF programs needs root (CAP_BPF, CAP_PERFMON and "
				  "CAP_SYS_RESOURCE): run it with sudo");
	return 0;
}

int mlt_trace_bpf_error(struct ml_err *err, int e, const char *what)
{
	if (e > 0)
		e = -e;
	if ((e == -EACCES || e == -EINVAL) && verifier_said[0] && may_load_bpf()) {
		/* as root: the verifier, not a permission, refused it */
		e = ml_err_set(err, ENOTSUP,
			       "%s: the kernel's verifier refused the program: %s (this kernel's "
			       "types differ from the program's; memlens -v -v ... shows the "
			       "whole log)",
			       what, verifier_said);
		verifier_said[0] = 0;
		return e;
	}
	switch (-e) {
	case EPERM:
	case EACCES:
		/* "run as root" only to who is not: as root, say what else refuses */
		return ml_err_set(
			err, -e, "%s: %s (%s; memlens -v ... -v shows libbpf's log)", what,
			strerror(-e),
			geteuid() ? "run as root; a lockdown or "
				    "kernel.unprivileged_bpf_disabled setting can also refuse it"
				  : "memlens runs as root already: a kernel lockdown or a "
				    "security module refuses it");
	case ENOENT:
		if (access("/sys/kernel/tracing/events", F_OK) &&
		    access("/sys/kernel/debug/tracing/events", F_OK))
			return ml_err_set(err, ENOENT,
					  "%s: %s (tracefs is not mounted; mount it with: "
					  "mount -t tracefs nodev /sys/kernel/tracing)",
					  what, strerror(-e));
		return ml_err_set(err, ENOTSUP,
				  "%s: the kernel lacks the traced function or event (%s)", what,
				  strerror(-e));
	case EINVAL:
	case ENOTSUP:
	case E2BIG:
		return ml_err_set(err, ENOTSUP,
				  "%s: the kernel refused the program (%s); run with -v -v to see "
				  "the verifier's log",
				  what, strerror(-e));
	default:
		return ml_err_set(err, -e, "%s: %s", what, strerror(-e));
	}
}

/* the whole map in one pass of bpf_map_lookup_batch: 0, or -errno (not supported) */
static int dump_batch(int fd, size_t key_size, size_t row_size, size_t key_off, size_t val_off,
		      char **rows_out, size_t *n)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info), batch = 4096, got;
	unsigned char in[8], out[8];
	char *keys = NULL, *vals = NULL, *rows = NULL;
	size_t cap = 0, vsize;
	bool first = true;
	int e = 0;

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.key_size != key_size ||
	    info.type != BPF_MAP_TYPE_HASH)
		return -ENOTSUP;
	vsize = info.value_size;
	keys = malloc((size_t)batch * key_size);
	vals = malloc((size_t)batch * vsize);
	if (!keys || !vals) {
		e = -ENOMEM;
		goto out;
	}
	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, o);

		got = batch;
		e = bpf_map_lookup_batch(fd, first ? NULL : in, out, keys, vals, &got, &o);
		e = e < 0 ? -errno : 0;
		if (e && e != -ENOENT) {
			if (first && (e == -EINVAL || e == -ENOTSUP || e == -EOPNOTSUPP))
				goto out; /* the caller iterates key by key */
			if (e != -ENOSPC)
				goto out;
			batch *= 4; /* a bucket larger than the batch */
			char *k = realloc(keys, (size_t)batch * key_size);

			if (k)
				keys = k;
			char *v = k ? realloc(vals, (size_t)batch * vsize) : NULL;

			if (!v) {
				e = -ENOMEM;
				goto out;
			}
			vals = v;
			continue;
		}
		if (*n + got > cap) {
			size_t nc = cap ? cap * 2 : 1024;
			char *nr;

			while (nc < *n + got)
				nc *= 2;
			nr = realloc(rows, nc * row_size);
			if (!nr) {
				e = -ENOMEM;
				goto out;
			}
			rows = nr;
			cap = nc;
		}
		for (__u32 i = 0; i < got; i++) {
			char *row = rows + (*n + i) * row_size;

			memcpy(row + val_off, vals + (size_t)i * vsize, vsize);
			if (key_off != TRACE_NO_KEY)
				memcpy(row + key_off, keys + (size_t)i * key_size, key_size);
		}
		*n += got;
		if (e == -ENOENT) {
			e = 0;
			break;
		}
		memcpy(in, out, sizeof(in));
		first = false;
	}
out:
	free(keys);
	free(vals);
	if (e && !*n) {
		free(rows);
		rows = NULL;
	}
	*rows_out = rows;
	return e;
}

void *mlt_trace_map_dump(int fd, size_t key_size, size_t row_size, size_t key_off, size_t val_off,
			 size_t *n)
{
	unsigned char key[256], next[256];
	char *rows = NULL;
	void *prev = NULL;
	size_t cap = 0;
	int e;

	*n = 0;
	if (key_size > sizeof(key))
		return NULL;
	e = dump_batch(fd, key_size, row_size, key_off, val_off, &rows, n);
	if (!e || *n)
		return rows;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		if (*n == cap) {
			char *nr;

			cap = cap ? cap * 2 : 128;
			nr = realloc(rows, cap * row_size);
			if (!nr)
				break;
			rows = nr;
		}
		char *row = rows + *n * row_size;

		if (!bpf_map_lookup_elem(fd, next, row + val_off)) {
			if (key_off != TRACE_NO_KEY)
				memcpy(row + key_off, next, key_size);
			(*n)++;
		}
		memcpy(key, next, key_size);
		prev = key;
	}
	return rows;
}

uint64_t mlt_trace_recursion_misses(const struct bpf_object *obj)
{
	struct bpf_program *p;
	uint64_t sum = 0;

	bpf_object__for_each_program(p, obj)
	{
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			sum += info.recursion_misses;
	}
	return sum;
}
