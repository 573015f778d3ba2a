// SPDX-License-Identifier: MIT
/* leaks --sample -- CMD with the preloaded sampler: trace/preload.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "preload.h"

#if defined(__x86_64__)
#define OWN_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define OWN_MACHINE EM_AARCH64
#else
#define OWN_MACHINE EM_NONE /* unknown: the machine is not compared */
#endif

static int is_exec_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK);
}

int mlt_preload_which(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p, *end;

	if (!cmd || !*cmd)
		return -ENOENT;
	if (strchr(cmd, '/')) {
		if ((size_t)snprintf(out, len, "%s", cmd) >= len)
			return -ENAMETOOLONG;
		return is_exec_file(out) ? 0 : -ENOENT;
	}
	if (!path)
		path = "/bin:/usr/bin";
	for (p = path;; p = end + 1) {
		size_t n;

		end = strchrnul(p, ':');
		n = (size_t)(end - p);
		/* an empty entry is the current directory */
		if ((size_t)snprintf(out, len, "%.*s%s%s", (int)n, n ? p : ".", "/", cmd) < len &&
		    is_exec_file(out))
			return 0;
		if (!*end)
			break;
	}
	return -ENOENT;
}

/* ELF: does it name a program interpreter (PT_INTERP)? 1, 0, or -1 (not ELF of ours) */
static int elf_has_interp(int fd, char *why, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return snprintf(why, len, "not an ELF file"), -1;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    (OWN_MACHINE != EM_NONE && eh.e_machine != OWN_MACHINE))
		return snprintf(why, len, "an ELF file of another class or machine than memlens's"),
		       -2;
	if (eh.e_phentsize != sizeof(ph) || eh.e_phnum > 4096)
		return snprintf(why, len, "an ELF file with no readable program headers"), -1;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return snprintf(why, len, "an ELF file cut short"), -1;
		if (ph.p_type == PT_INTERP)
			return 1;
	}
	snprintf(why, len, "statically linked");
	return 0;
}

static enum mlt_exec_kind kind_of(const char *path, int depth, char *elf, char *why, size_t len)
{
	char head[256], interp[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return MLT_EXEC_UNKNOWN;
	}
	if (st.st_mode & (S_ISUID | S_ISGID) || fgetxattr(fd, "security.capability", NULL, 0) > 0) {
		close(fd);
		snprintf(why, len,
			 "%s is set-user-ID, set-group-ID or has file capabilities: the "
			 "dynamic loader ignores LD_PRELOAD there",
			 path);
		return MLT_EXEC_SECURE;
	}
	n = pread(fd, head, sizeof(head) - 1, 0);
	if (n > 2 && head[0] == '#' && head[1] == '!' && depth == 0) {
		char *p = head + 2, *e;

		close(fd);
		head[n] = 0;
		p += strspn(p, " \t");
		e = p + strcspn(p, " \t\n");
		*e = 0;
		if (!*p || (size_t)snprintf(interp, sizeof(interp), "%s", p) >= sizeof(interp)) {
			snprintf(why, len, "%s: a script without an interpreter", path);
			return MLT_EXEC_UNKNOWN;
		}
		return kind_of(interp, 1, elf, why, len);
	}
	r = elf_has_interp(fd, interp, sizeof(interp));
	close(fd);
	if (elf)
		snprintf(elf, PATH_MAX, "%s", path);
	if (r == 1)
		return MLT_EXEC_DYNAMIC;
	snprintf(why, len, "%s: %s", path, interp);
	return r == 0 ? MLT_EXEC_STATIC : r == -2 ? MLT_EXEC_FOREIGN : MLT_EXEC_UNKNOWN;
}

enum mlt_exec_kind mlt_preload_exec_kind(const char *cmd, char *elf, char *why, size_t len)
{
	char path[PATH_MAX];

	if (mlt_preload_which(cmd, path, sizeof(path))) {
		snprintf(why, len, "%s: not found on PATH", cmd ? cmd : "");
		return MLT_EXEC_UNKNOWN;
	}
	return kind_of(path, 0, elf, why, len);
}

int mlt_preload_env(const char *old, const char *so, char *out, size_t len)
{
	size_t a = strlen(so), b = old ? strlen(old) : 0, need = a + (b ? 1 + b : 0) + 1;

	if (need > len)
		return -ENAMETOOLONG;
	memcpy(out, so, a);
	if (b) {
		out[a] = ' ';
		memcpy(out + a + 1, old, b);
	}
	out[need - 1] = 0;
	return 0;
}

int mlt_preload_find(const char *exe_dir, const char *installed_dir, char *out, size_t len)
{
	const char *dirs[2] = { exe_dir, installed_dir };
	char p[PATH_MAX], real[PATH_MAX];

	for (int i = 0; i < 2; i++) {
		if (!dirs[i] || !*dirs[i] ||
		    (size_t)snprintf(p, sizeof(p), "%s/%s", dirs[i], MLT_SAMPLER_SO) >= sizeof(p))
			continue;
		if (access(p, R_OK) || !realpath(p, real))
			continue;
		if ((size_t)snprintf(out, len, "%s", real) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	return -ENOENT;
}

int mlt_preload_image_end(const char *path, uint64_t *end)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = -ENOEXEC;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	*end = 0;
	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(ph) && eh.e_phnum <= 4096)
		for (unsigned int i = 0; i < eh.e_phnum; i++) {
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    (ssize_t)sizeof(ph))
				break;
			if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > *end)
				*end = ph.p_vaddr + ph.p_memsz;
		}
	close(fd);
	if (*end)
		e = 0;
	return e;
}

int mlt_preload_from_environ(const char *env, size_t len, char *so, size_t solen, uint64_t *rate)
{
	static const char pre[] = "LD_PRELOAD=", rk[] = MLT_SAMPLER_ENV "=";
	bool have_so = false, have_rate = false;

	for (size_t i = 0; i < len;) {
		const char *e = env + i;
		size_t n = strnlen(e, len - i);

		if (n > sizeof(rk) - 1 && !strncmp(e, rk, sizeof(rk) - 1)) {
			char *end;
			unsigned long long v = strtoull(e + sizeof(rk) - 1, &end, 10);

			have_rate = (size_t)(end - e) == n && v > 0;
			*rate = v;
		} else if (n > sizeof(pre) - 1 && !strncmp(e, pre, sizeof(pre) - 1)) {
			/* its words, separated by spaces or colons */
			const char *w = e + sizeof(pre) - 1, *stop = e + n;

			while (w < stop && !have_so) {
				size_t wl = strcspn(w, " :\t"), sl = strlen(MLT_SAMPLER_SO);

				if (w + wl > stop)
					wl = (size_t)(stop - w);
				if (wl >= sl && !memcmp(w + wl - sl, MLT_SAMPLER_SO, sl) &&
				    (wl == sl || w[wl - sl - 1] == '/') && wl < solen) {
					memcpy(so, w, wl);
					so[wl] = 0;
					have_so = true;
				}
				w += wl + 1;
			}
		}
		i += n + 1;
	}
	return have_so && have_rate ? 0 : -ENOENT;
}
