// SPDX-License-Identifier: MIT
/*
 * The agent's Prometheus metrics: counters updated by the handlers and the
 * profiler thread, rendered in the text exposition format 0.0.4 and served
 * on /metrics by libmicrohttpd.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "metrics.h"
#include "status.h"

#define MAX_METHODS 16
#define MAX_ERROR_KINDS 24

static const double scan_buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				       0.05,   0.1,   0.25,   0.5,   1,	   2.5 };
#define NSCAN (sizeof(scan_buckets) / sizeof(scan_buckets[0]))
static const double ckpt_buckets[] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120 };
#define NCKPT (sizeof(ckpt_buckets) / sizeof(ckpt_buckets[0]))
static const char *const ckpt_names[CKPT_NKINDS] = { "pre_dump", "dump", "restore", "page_server" };

struct histo {
	uint64_t bucket[16];
	uint64_t count;
	double sum;
};

static struct {
	pthread_mutex_t lock;
	uint64_t rpcs[MAX_METHODS][RPC_NCODES];
	const char *methods[MAX_METHODS]; /* the name of each method counted */
	struct {
		char kind[32];
		uint64_t n;
	} errors[MAX_ERROR_KINDS];
	bool profiling;
	int pid;
	int target; /* found, not profiled: metrics_target() */
	int64_t dirty_pages, dirty_bytes, cumulative_dirty_bytes;
	double dirty_rate, avg_rate;
	int total_vmas, tracked_vmas, hot_vmas;
	uint64_t intervals;
	uint64_t ticks_over; /* intervals whose tick took longer than the interval */
	double overhead, fault_s; /* the last interval's tracking cost, one fault's */
	bool fault_measured;
	struct histo scan;
	double injection_s;
	uint64_t injections;
	uint64_t ckpt_ok[CKPT_NKINDS], ckpt_fail[CKPT_NKINDS];
	struct histo ckpt[CKPT_NKINDS];
	struct MHD_Daemon *mhd;
} m = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void histo_add(struct histo *h, const double *b, size_t nb, double v)
{
	for (size_t i = 0; i < nb; i++)
		if (v <= b[i])
			h->bucket[i]++;
	h->count++;
	h->sum += v;
}

void metrics_rpc(int method, const char *name, int code)
{
	if (method < 0 || method >= MAX_METHODS || !name || code < 0 || code >= RPC_NCODES)
		return;
	pthread_mutex_lock(&m.lock);
	m.methods[method] = name;
	m.rpcs[method][code]++;
	pthread_mutex_unlock(&m.lock);
}

void metrics_error(const char *kind)
{
	pthread_mutex_lock(&m.lock);
	for (int i = 0; i < MAX_ERROR_KINDS; i++) {
		if (!m.errors[i].kind[0])
			snprintf(m.errors[i].kind, sizeof(m.errors[i].kind), "%s", kind);
		if (!strcmp(m.errors[i].kind, kind)) {
			m.errors[i].n++;
			break;
		}
	}
	pthread_mutex_unlock(&m.lock);
}

void metrics_sample(const struct ml_profiler_sample *s)
{
	pthread_mutex_lock(&m.lock);
	m.dirty_pages = s->dirty.dirty_pages;
	m.dirty_bytes = s->dirty.dirty_bytes;
	m.dirty_rate = s->dirty.dirty_rate_pages_per_sec;
	m.cumulative_dirty_bytes = s->dirty.cumulative_dirty_bytes;
	m.avg_rate = s->dirty.avg_dirty_rate;
	m.total_vmas = s->total_vmas;
	m.tracked_vmas = s->tracked_vmas;
	m.hot_vmas = s->hot_vmas;
	m.overhead = s->sampling.cost;
	m.fault_s = (double)s->sampling.fault_ns / 1e9;
	m.fault_measured = s->sampling.fault_ns_measured;
	m.intervals++;
	m.ticks_over += s->tick_over_interval;
	histo_add(&m.scan, scan_buckets, NSCAN, (double)s->tick_ns / 1e9);
	pthread_mutex_unlock(&m.lock);
}

void metrics_target(pid_t pid)
{
	pthread_mutex_lock(&m.lock);
	m.target = (int)pid;
	pthread_mutex_unlock(&m.lock);
}

void metrics_profiling(bool on, pid_t pid)
{
	pthread_mutex_lock(&m.lock);
	m.profiling = on;
	m.pid = on ? (int)pid : 0;
	pthread_mutex_unlock(&m.lock);
}

void metrics_injection(uint64_t ns)
{
	pthread_mutex_lock(&m.lock);
	m.injection_s = (double)ns / 1e9;
	m.injections++;
	pthread_mutex_unlock(&m.lock);
}

void metrics_checkpoint(enum ckpt_kind kind, bool ok, uint64_t ms)
{
	pthread_mutex_lock(&m.lock);
	if (ok)
		m.ckpt_ok[kind]++;
	else
		m.ckpt_fail[kind]++;
	histo_add(&m.ckpt[kind], ckpt_buckets, NCKPT, (double)ms / 1e3);
	pthread_mutex_unlock(&m.lock);
}

struct out {
	char *buf;
	size_t len, cap;
	bool oom;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < o->cap - o->len)
			break;
		char *nb = realloc(o->buf, o->cap * 2 + (size_t)n);

		if (!nb) {
			o->oom = true;
			return;
		}
		o->buf = nb;
		o->cap = o->cap * 2 + (size_t)n;
	}
	o->len += (size_t)n;
}

static void head(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP memlens_agent_%s %s\n# TYPE memlens_agent_%s %s\n", name, help, name, type);
}

static void histo_put(struct out *o, const char *name, const char *labels, const struct histo *h,
		      const double *b, size_t nb)
{
	const char *sep = *labels ? "," : "";

	for (size_t i = 0; i < nb; i++)
		put(o, "memlens_agent_%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, b[i],
		    (unsigned long long)h->bucket[i]);
	put(o, "memlens_agent_%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
	    (unsigned long long)h->count);
	put(o, "memlens_agent_%s_sum%s%s%s %.9g\n", name, *labels ? "{" : "", labels,
	    *labels ? "}" : "", h->sum);
	put(o, "memlens_agent_%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels,
	    *labels ? "}" : "", (unsigned long long)h->count);
}

static void render_profile(struct out *o)
{
	head(o, "profiling", "gauge", "1 while the write profiler scans a target");
	put(o, "memlens_agent_profiling %d\n", m.profiling);
	head(o, "target_pid", "gauge",
	     "pid of the target: the profiled process, else the one found; 0 when none");
	put(o, "memlens_agent_target_pid %d\n", m.profiling && m.pid ? m.pid : m.target);
	head(o, "dirty_pages", "gauge", "pages written in the last interval");
	put(o, "memlens_agent_dirty_pages %lld\n", (long long)m.dirty_pages);
	head(o, "dirty_bytes", "gauge", "bytes written in the last interval");
	put(o, "memlens_agent_dirty_bytes %lld\n", (long long)m.dirty_bytes);
	head(o, "dirty_rate_pages_per_second", "gauge", "pages written per second, last interval");
	put(o, "memlens_agent_dirty_rate_pages_per_second %.6g\n", m.dirty_rate);
	head(o, "cumulative_dirty_bytes", "gauge",
	     "bytes written since profiling started or the last checkpoint");
	put(o, "memlens_agent_cumulative_dirty_bytes %lld\n", (long long)m.cumulative_dirty_bytes);
	head(o, "avg_dirty_rate_bytes_per_second", "gauge",
	     "cumulative_dirty_bytes / elapsed seconds");
	put(o, "memlens_agent_avg_dirty_rate_bytes_per_second %.6g\n", m.avg_rate);
	head(o, "vmas", "gauge", "VMAs of the target (all, tracked, hot)");
	put(o, "memlens_agent_vmas{state=\"all\"} %d\n", m.total_vmas);
	put(o, "memlens_agent_vmas{state=\"tracked\"} %d\n", m.tracked_vmas);
	put(o, "memlens_agent_vmas{state=\"hot\"} %d\n", m.hot_vmas);
	head(o, "hot_vmas", "gauge", "VMAs classified hot in the last interval");
	put(o, "memlens_agent_hot_vmas %d\n", m.hot_vmas);
	head(o, "tracking_overhead_ratio", "gauge",
	     "CPU the tracked write faults cost the target in the last interval, a share of one "
	     "CPU (counted when sampling or bounded, else 0)");
	put(o, "memlens_agent_tracking_overhead_ratio %.9g\n", m.overhead);
	head(o, "write_fault_cost_seconds", "gauge",
	     "CPU one tracked write fault costs the target, as the overhead counts it (0: none "
	     "counted)");
	put(o, "memlens_agent_write_fault_cost_seconds %.9g\n", m.fault_s);
	head(o, "write_fault_cost_measured", "gauge",
	     "1 when write_fault_cost_seconds was measured on this machine, 0 when assumed");
	put(o, "memlens_agent_write_fault_cost_measured %d\n", m.fault_measured);
	head(o, "intervals_total", "counter", "profiling intervals scanned");
	put(o, "memlens_agent_intervals_total %llu\n", (unsigned long long)m.intervals);
	head(o, "ticks_over_interval_total", "counter",
	     "intervals whose tick took longer than the interval: the interval was not kept");
	put(o, "memlens_agent_ticks_over_interval_total %llu\n", (unsigned long long)m.ticks_over);
	head(o, "scan_duration_seconds", "histogram",
	     "cost of one interval: maps, registration and PAGEMAP_SCAN");
	histo_put(o, "scan_duration_seconds", "", &m.scan, scan_buckets, NSCAN);
	head(o, "injection_duration_seconds", "gauge",
	     "how long the target was stopped for the last userfaultfd injection");
	put(o, "memlens_agent_injection_duration_seconds %.9g\n", m.injection_s);
	head(o, "injections_total", "counter", "userfaultfd injections (StartProfiling)");
	put(o, "memlens_agent_injections_total %llu\n", (unsigned long long)m.injections);
}

static void render_rest(struct out *o)
{
	char lab[64];

	head(o, "checkpoints_total", "counter", "CRIU operations by kind and result");
	for (int k = 0; k < CKPT_NKINDS; k++) {
		put(o, "memlens_agent_checkpoints_total{kind=\"%s\",result=\"ok\"} %llu\n",
		    ckpt_names[k], (unsigned long long)m.ckpt_ok[k]);
		put(o, "memlens_agent_checkpoints_total{kind=\"%s\",result=\"error\"} %llu\n",
		    ckpt_names[k], (unsigned long long)m.ckpt_fail[k]);
	}
	head(o, "checkpoint_duration_seconds", "histogram", "CRIU operation durations by kind");
	for (int k = 0; k < CKPT_NKINDS; k++) {
		snprintf(lab, sizeof(lab), "kind=\"%s\"", ckpt_names[k]);
		histo_put(o, "checkpoint_duration_seconds", lab, &m.ckpt[k], ckpt_buckets, NCKPT);
	}
	head(o, "rpcs_total", "counter", "gRPC calls answered, by method and status code");
	for (size_t i = 0; i < MAX_METHODS; i++)
		for (int c = 0; c < RPC_NCODES; c++)
			if (m.rpcs[i][c])
				put(o, "memlens_agent_rpcs_total{method=\"%s\",code=\"%s\"} %llu\n",
				    m.methods[i], rpc_code_name(c),
				    (unsigned long long)m.rpcs[i][c]);
	head(o, "errors_total", "counter", "errors by kind (gRPC status names, target_exited)");
	for (int i = 0; i < MAX_ERROR_KINDS && m.errors[i].kind[0]; i++)
		put(o, "memlens_agent_errors_total{kind=\"%s\"} %llu\n", m.errors[i].kind,
		    (unsigned long long)m.errors[i].n);
}

char *metrics_render(size_t *len)
{
	struct out o = { malloc(8192), 0, 8192, false };

	if (!o.buf)
		return NULL;
	pthread_mutex_lock(&m.lock);
	render_profile(&o);
	render_rest(&o);
	pthread_mutex_unlock(&m.lock);
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **state)
{
	static const char notfound[] = "only /metrics is served here\n";
	struct MHD_Response *resp;
	enum MHD_Result r;
	unsigned int code = MHD_HTTP_OK;
	char *body;
	size_t len = 0;

	(void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_NO;
	if (strcmp(url, "/metrics")) {
		resp = MHD_create_response_from_buffer(sizeof(notfound) - 1, (void *)notfound,
						       MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	} else {
		body = metrics_render(&len);
		if (!body)
			return MHD_NO;
		resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	r = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static int split_hostport(const char *hp, char *host, size_t hl, char *port, size_t pl)
{
	const char *colon = strrchr(hp, ':');
	const char *h = hp;
	size_t n;

	if (!colon || !colon[1] || strlen(colon + 1) >= pl)
		return -EINVAL;
	n = (size_t)(colon - hp);
	if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']') {
		h = hp + 1;
		n -= 2;
	}
	if (n >= hl)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	snprintf(port, pl, "%s", colon + 1);
	return 0;
}

int metrics_serve(const char *hostport, struct ml_err *err)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char host[256], port[16];
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	int r;

	if (split_hostport(hostport, host, sizeof(host), port, sizeof(port)))
		return ml_err_set(err, EINVAL,
				  "--metrics wants HOST:PORT (e.g. 127.0.0.1:9464), not '%s'",
				  hostport);
	r = getaddrinfo(*host ? host : NULL, port, &hints, &ai);
	if (r)
		return ml_err_set(err, EINVAL, "--metrics %s: %s", hostport, gai_strerror(r));
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	m.mhd = MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR,
				 ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, 64U,
				 MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!m.mhd)
		return ml_err_set(err, EADDRINUSE,
				  "cannot serve metrics on %s: the address is in use or not local",
				  hostport);
	return 0;
}

void metrics_stop(void)
{
	if (m.mhd)
		MHD_stop_daemon(m.mhd);
	m.mhd = NULL;
}
