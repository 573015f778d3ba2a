// SPDX-License-Identifier: MIT
/* pprof profile.proto writer (see pprof.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"

#ifdef MEMLENS_PPROF
#include <zlib.h>

#include "pprof_profile.pb-c.h"
#include "srcline.h"

bool mlt_pprof_supported(void)
{
	return true;
}

typedef MltPprof__Profile Profile;
typedef MltPprof__Sample Sample;
typedef MltPprof__Location Location;
typedef MltPprof__Line Line;
typedef MltPprof__Function Function;
typedef MltPprof__Mapping Mapping;
typedef MltPprof__ValueType ValueType;

/* string -> index, open addressing */
struct strmap {
	char **keys;
	size_t *vals;
	size_t cap, n;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static int strmap_grow(struct strmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 256;
	char **keys = calloc(cap, sizeof(*keys));
	size_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		for (j = hash(m->keys[i]) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1))
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

/* the value of @key; not there: *found = false and the slot to fill */
static size_t *strmap_slot(struct strmap *m, const char *key, bool *found)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && strmap_grow(m))
		return NULL;
	for (j = hash(key) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
		if (!strcmp(m->keys[j], key)) {
			*found = true;
			return &m->vals[j];
		}
	m->keys[j] = strdup(key);
	if (!m->keys[j])
		return NULL;
	m->n++;
	*found = false;
	return &m->vals[j];
}

static void strmap_free(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
}

/* a growing array of pointers */
#define PUSH(arr, n, cap, item)                                                                    \
	({                                                                                         \
		int _e = 0;                                                                        \
		if ((n) == (cap)) {                                                                \
			size_t _c = (cap) ? (cap)*2 : 64;                                          \
			void *_p = realloc((arr), _c * sizeof(*(arr)));                            \
			if (_p) {                                                                  \
				(arr) = _p;                                                        \
				(cap) = _c;                                                        \
			} else {                                                                   \
				_e = -ENOMEM;                                                      \
			}                                                                          \
		}                                                                                  \
		if (!_e)                                                                           \
			(arr)[(n)++] = (item);                                                     \
		_e;                                                                                \
	})

struct pprof {
	Profile *prof; /* protobuf-c frees it, and all it holds */
	struct symbolizer *sym;
	struct srcline_cache *lines;
	struct strmap strs, funcs, locs, maps, samples;
	size_t cap_str, cap_sample, cap_loc, cap_func, cap_map, cap_comment;
	double *sums; /* per sample, its values unrounded: nvalues each */
	size_t cap_sums;
	int nvalues;
	int failed; /* -errno of the first allocation that failed */
};

static int64_t str(struct pprof *p, const char *s)
{
	bool found;
	size_t *v = strmap_slot(&p->strs, s ? s : "", &found);
	char *copy;

	if (!v) {
		p->failed = -ENOMEM;
		return 0;
	}
	if (found)
		return (int64_t)*v;
	*v = p->prof->n_string_table;
	copy = strdup(s ? s : "");
	if (!copy || PUSH(p->prof->string_table, p->prof->n_string_table, p->cap_str, copy)) {
		free(copy);
		p->failed = -ENOMEM;
	}
	return (int64_t)*v;
}

struct pprof *mlt_pprof_new(struct symbolizer *sym, const struct pprof_type *types, int ntypes,
			    struct ml_err *err)
{
	struct pprof *p = calloc(1, sizeof(*p));

	if (!p) {
		ml_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	p->prof = calloc(1, sizeof(*p->prof));
	if (!p->prof) {
		free(p);
		ml_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	mlt_pprof__profile__init(p->prof);
	p->sym = sym;
	p->lines = mlt_srcline_new(sym->debug_dir);
	p->nvalues = ntypes;
	str(p, ""); /* index 0, as the format wants */
	p->prof->sample_type = calloc((size_t)ntypes, sizeof(*p->prof->sample_type));
	for (int i = 0; p->prof->sample_type && i < ntypes; i++) {
		ValueType *vt = calloc(1, sizeof(*vt));

		if (!vt)
			break;
		mlt_pprof__value_type__init(vt);
		vt->type = str(p, types[i].type);
		vt->unit = str(p, types[i].unit);
		p->prof->sample_type[p->prof->n_sample_type++] = vt;
	}
	if (p->prof->n_sample_type != (size_t)ntypes || !p->lines || p->failed) {
		mlt_pprof_free(p);
		ml_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	p->prof->default_sample_type = p->prof->sample_type[ntypes - 1]->type;
	return p;
}

static uint64_t mapping_for(struct pprof *p, const struct sym_info *si, bool funcs, bool lines,
			    bool inlines)
{
	char key[48];
	bool found;
	size_t *v;
	Mapping *m;

	snprintf(key, sizeof(key), "%llx", (unsigned long long)si->vma->start);
	v = strmap_slot(&p->maps, key, &found);
	if (!v)
		return p->failed = -ENOMEM, 0;
	if (!found) {
		m = calloc(1, sizeof(*m));
		if (!m || PUSH(p->prof->mapping, p->prof->n_mapping, p->cap_map, m)) {
			free(m);
			*v = 0;
			return p->failed = -ENOMEM, 0;
		}
		mlt_pprof__mapping__init(m);
		m->id = p->prof->n_mapping;
		m->memory_start = si->vma->start;
		m->memory_limit = si->vma->end;
		m->file_offset = si->vma->offset;
		m->filename = str(p, si->path);
		*v = m->id;
	}
	if (!*v)
		return 0;
	m = p->prof->mapping[*v - 1];
	m->has_functions |= funcs;
	m->has_filenames |= lines;
	m->has_line_numbers |= lines;
	m->has_inline_frames |= inlines;
	return *v;
}

static uint64_t function_for(struct pprof *p, const char *name, const char *sys, const char *file,
			     int start_line)
{
	char key[1200];
	bool found;
	size_t *v;
	Function *fn;

	snprintf(key, sizeof(key), "%s\x01%s\x01%s", name, sys ? sys : "", file ? file : "");
	v = strmap_slot(&p->funcs, key, &found);
	if (!v)
		return p->failed = -ENOMEM, 0;
	if (found)
		return *v;
	fn = calloc(1, sizeof(*fn));
	if (!fn || PUSH(p->prof->function, p->prof->n_function, p->cap_func, fn)) {
		free(fn);
		return p->failed = -ENOMEM, 0;
	}
	mlt_pprof__function__init(fn);
	fn->id = p->prof->n_function;
	fn->name = str(p, name);
	fn->system_name = str(p, sys ? sys : name);
	fn->filename = str(p, file);
	fn->start_line = start_line;
	*v = fn->id;
	return fn->id;
}

static int add_line(struct pprof *p, Location *l, uint64_t func, int line)
{
	Line *ln = calloc(1, sizeof(*ln));
	Line **v = realloc(l->line, (l->n_line + 1) * sizeof(*v));

	if (!ln || !v) {
		free(ln);
		if (v)
			l->line = v;
		return p->failed = -ENOMEM;
	}
	l->line = v;
	mlt_pprof__line__init(ln);
	ln->function_id = func;
	ln->line = line;
	l->line[l->n_line++] = ln;
	return 0;
}

/*
 * The function's source file, as a full path when the line table has one:
 * the declaration may name it relative to the compilation directory.
 */
static const char *source_file(const struct srcline_frame *fr)
{
	size_t a, b;

	if (!fr->func_file)
		return fr->file;
	if (fr->func_file[0] == '/' || !fr->file || fr->file[0] != '/')
		return fr->func_file;
	a = strlen(fr->file);
	b = strlen(fr->func_file);
	if (a > b && fr->file[a - b - 1] == '/' && !strcmp(fr->file + a - b, fr->func_file))
		return fr->file;
	return fr->func_file;
}

/*
 * @ip is a return address: its symbol and line are those of the call
 * instruction before it (ip - 1), which a call at the very end of a
 * function (to a noreturn one) leaves in the function that made it.
 */
static void describe(struct pprof *p, Location *l, uint64_t ip)
{
	struct srcline_frame fr[SRCLINE_MAX_INLINE];
	struct sym_info si;
	int nf = 0;

	if (!ip) {
		add_line(p, l, function_for(p, "[stack not recorded]", NULL, NULL, 0), 0);
		return;
	}
	mlt_symbolizer_info(p->sym, ip - 1, &si);
	if (!si.vma)
		return;
	if (si.open_path && si.have_vaddr)
		nf = mlt_srcline_lookup(p->lines, si.open_path, si.vaddr, fr, SRCLINE_MAX_INLINE);
	l->mapping_id = mapping_for(p, &si, si.sym || nf, nf > 0, nf > 1);
	for (int k = 0; k < nf; k++) {
		bool outer = k == nf - 1;
		const char *name = fr[k].func ? fr[k].func : outer && si.sym ? si.sym : "??";

		add_line(p, l,
			 function_for(p, name, outer && si.sym ? si.sym : name, source_file(&fr[k]),
				      fr[k].func_line),
			 fr[k].line);
	}
	if (!nf && si.sym)
		add_line(p, l, function_for(p, si.sym, si.sym, NULL, 0), 0);
}

static uint64_t location_for(struct pprof *p, uint64_t ip)
{
	char key[24];
	bool found;
	size_t *v;
	Location *l;

	snprintf(key, sizeof(key), "%llx", (unsigned long long)ip);
	v = strmap_slot(&p->locs, key, &found);
	if (!v)
		return p->failed = -ENOMEM, 0;
	if (found)
		return *v;
	l = calloc(1, sizeof(*l));
	if (!l || PUSH(p->prof->location, p->prof->n_location, p->cap_loc, l)) {
		free(l);
		return p->failed = -ENOMEM, 0;
	}
	mlt_pprof__location__init(l);
	l->id = p->prof->n_location;
	l->address = ip;
	*v = l->id;
	describe(p, l, ip);
	return l->id;
}

/* Stacks that are the same once cut (see mlt_pprof_add) are one sample. */
static Sample *sample_for(struct pprof *p, const uint64_t *ids, size_t n, size_t *index)
{
	char key[32 * 21 + 1];
	size_t used = 0, *v;
	bool found;
	Sample *s;

	for (size_t i = 0; i < n && used + 22 < sizeof(key); i++)
		used += (size_t)snprintf(key + used, sizeof(key) - used, "%llu,",
					 (unsigned long long)ids[i]);
	key[used] = 0;
	v = strmap_slot(&p->samples, key, &found);
	if (!v)
		return NULL;
	if (found) {
		*index = *v;
		return p->prof->sample[*v];
	}
	if ((p->prof->n_sample + 1) * (size_t)p->nvalues > p->cap_sums) {
		size_t cap = (p->prof->n_sample + 1) * (size_t)p->nvalues * 2;
		double *sums = realloc(p->sums, cap * sizeof(*sums));

		if (!sums)
			return NULL;
		p->sums = sums;
		p->cap_sums = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s || PUSH(p->prof->sample, p->prof->n_sample, p->cap_sample, s)) {
		free(s);
		return NULL;
	}
	*v = p->prof->n_sample - 1;
	*index = *v;
	for (int i = 0; i < p->nvalues; i++)
		p->sums[*v * (size_t)p->nvalues + (size_t)i] = 0;
	mlt_pprof__sample__init(s);
	s->location_id = malloc((n ? n : 1) * sizeof(*s->location_id));
	s->value = calloc((size_t)p->nvalues, sizeof(*s->value));
	if (!s->location_id || !s->value)
		return NULL;
	memcpy(s->location_id, ids, n * sizeof(*ids));
	s->n_location_id = n;
	s->n_value = (size_t)p->nvalues;
	return s;
}

int mlt_pprof_add(struct pprof *p, const uint64_t *ips, int n, const double *values)
{
	uint64_t ids[64];
	size_t nid = 0, k = 0;
	Sample *s;

	for (int f = 0; f < n && f < 64 && ips[f]; f++) {
		if (f && !mlt_symbolizer_is_code(p->sym, ips[f]))
			break; /* a frame-pointer walk ran into data */
		ids[nid++] = location_for(p, ips[f]);
	}
	if (!nid)
		ids[nid++] = location_for(p, 0);
	s = sample_for(p, ids, nid, &k);
	if (!s)
		return p->failed = -ENOMEM;
	for (int i = 0; i < p->nvalues; i++) {
		double *sum = &p->sums[k * (size_t)p->nvalues + (size_t)i];

		*sum += values[i];
		s->value[i] = *sum <= 0 ? 0 : (int64_t)llround(*sum);
	}
	return p->failed;
}

void mlt_pprof_comment(struct pprof *p, const char *text)
{
	int64_t i = str(p, text);
	int64_t *v = realloc(p->prof->comment, (p->prof->n_comment + 1) * sizeof(*v));

	if (!v) {
		p->failed = -ENOMEM;
		return;
	}
	p->prof->comment = v;
	v[p->prof->n_comment++] = i;
}

void mlt_pprof_times(struct pprof *p, int64_t time_ns, int64_t duration_ns)
{
	p->prof->time_nanos = time_ns;
	p->prof->duration_nanos = duration_ns;
}

void mlt_pprof_period(struct pprof *p, const struct pprof_type *type, int64_t period)
{
	ValueType *vt = p->prof->period_type ? p->prof->period_type : calloc(1, sizeof(*vt));

	if (!vt) {
		p->failed = -ENOMEM;
		return;
	}
	mlt_pprof__value_type__init(vt);
	vt->type = str(p, type->type);
	vt->unit = str(p, type->unit);
	p->prof->period_type = vt;
	p->prof->period = period;
}

/* gzip (RFC 1952) of @in */
static int gzip_write(const uint8_t *in, size_t n, FILE *f)
{
	z_stream z;
	uint8_t buf[65536];
	int zr;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)n;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR ||
		    fwrite(buf, 1, sizeof(buf) - z.avail_out, f) != sizeof(buf) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

int mlt_pprof_write(struct pprof *p, FILE *f)
{
	size_t n;
	uint8_t *buf;
	int e;

	if (p->failed)
		return p->failed;
	n = mlt_pprof__profile__get_packed_size(p->prof);
	buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	mlt_pprof__profile__pack(p->prof, buf);
	e = gzip_write(buf, n, f);
	free(buf);
	if (!e && fflush(f))
		e = -errno;
	return e;
}

void mlt_pprof_free(struct pprof *p)
{
	if (!p)
		return;
	/* everything was calloc'ed: protobuf-c frees it with the system allocator */
	mlt_pprof__profile__free_unpacked(p->prof, NULL);
	mlt_srcline_free(p->lines);
	free(p->sums);
	strmap_free(&p->strs);
	strmap_free(&p->funcs);
	strmap_free(&p->locs);
	strmap_free(&p->maps);
	strmap_free(&p->samples);
	free(p);
}

#else /* built without protobuf-c */

bool mlt_pprof_supported(void)
{
	return false;
}

struct pprof *mlt_pprof_new(struct symbolizer *sym, const struct pprof_type *types, int ntypes,
			    struct ml_err *err)
{
	(void)sym;
	(void)types;
	(void)ntypes;
	ml_err_set(err, ENOTSUP,
		   "this memlens was built without protobuf-c: install libprotobuf-c-dev and "
		   "protobuf-c-compiler and rebuild it for pprof output");
	return NULL;
}

int mlt_pprof_add(struct pprof *p, const uint64_t *ips, int n, const double *values)
{
	(void)p;
	(void)ips;
	(void)n;
	(void)values;
	return -ENOTSUP;
}

void mlt_pprof_comment(struct pprof *p, const char *text)
{
	(void)p;
	(void)text;
}

void mlt_pprof_times(struct pprof *p, int64_t time_ns, int64_t duration_ns)
{
	(void)p;
	(void)time_ns;
	(void)duration_ns;
}

void mlt_pprof_period(struct pprof *p, const struct pprof_type *type, int64_t period)
{
	(void)p;
	(void)type;
	(void)period;
}

int mlt_pprof_write(struct pprof *p, FILE *f)
{
	(void)p;
	(void)f;
	return -ENOTSUP;
}

void mlt_pprof_free(struct pprof *p)
{
	(void)p;
}
#endif
