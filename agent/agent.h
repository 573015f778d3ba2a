/* SPDX-License-Identifier: MIT */
/*
 * memlens agent: the gRPC CRIUAgent service. One process,
 * one target: the profiler and the CRIU session live in struct agent;
 * the gRPC server (server.c) runs the handlers (rpc_*.c) on a few worker
 * threads; metrics.c counts and serves /metrics.
 */
#ifndef MEMLENS_AGENT_H
#define MEMLENS_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "criu_cli.h"
#include "memlens/criu.h"
#include "memlens/err.h"
#include "memlens/profiler.h"
#include "metrics.h"
#include "status.h"

/* What a handler answers: a packed message, or a status with a message. */
struct rpc_reply {
	int code;
	char msg[1024];
	uint8_t *body; /* malloc'ed, packed response (code == RPC_OK) */
	size_t len;
};

int rpc_fail(struct rpc_reply *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct agent;

typedef void (*rpc_handler)(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline_ns,
			    struct rpc_reply *out);

struct rpc_method {
	const char *path; /* "/agent.CRIUAgent/Name" */
	const char *name;
	rpc_handler fn;
};

/* Every method the service has, NULL-terminated; and lookup by path. */
extern const struct rpc_method rpc_methods[];
const struct rpc_method *rpc_method_find(const char *path, size_t len);
int rpc_method_index(const struct rpc_method *m);
size_t rpc_method_count(void);

/* ---- target discovery (target.c) ---- */

struct target_spec {
	pid_t pid; /* --target-pid, 0: not given */
	const char *comm; /* --target-comm, NULL: not given */
};

/*
 * The target: @spec's pid, the oldest process named @spec->comm, or the
 * oldest process that is neither us, nor an ancestor, nor a descendant of
 * us, nor a kernel thread, nor a pod's infrastructure process ("pause",
 * podman's "catatonit"). -ESRCH when none.
 */
int target_find(const struct target_spec *spec, pid_t *out, struct ml_err *err);
/* @path's first @len - 1 bytes, NUL-terminated, into @buf: 0 or a negative errno */
int agent_read_small(const char *path, char *buf, size_t len);

/* ---- the agent state (agent.c) ---- */

struct agent_config {
	struct target_spec target;
	const char *criu_path; /* NULL: $MEMLENS_CRIU or criu on $PATH */
	const char *images_root; /* images_dir of requests must be under it */
	unsigned int criu_timeout_ms;
	struct criu_cli_opts criu_opts; /* --criu-opt: more options for every dump/restore */
	enum ml_criu_tcp tcp; /* --tcp: established TCP connections, every dump and restore */
};

struct agent {
	struct agent_config cfg;
	pthread_rwlock_t lock; /* the profiler pointer and checkpoint state */
	struct ml_profiler *prof;
	pid_t restored_pid; /* set by Restore: the next target */
	char last_error[1024];
	uint64_t start_ns;
	int64_t checkpoints;
	bool criu_probed;
	int criu_rc; /* criu_locate/criu_probe result */
	struct ml_err criu_err;
	struct ml_criu_caps caps;
	struct ml_criu_session *session;
	pthread_mutex_t criu_lock; /* probing and the session */
	/* the target as last found (agent_discover), for GetStatus and the log */
	pthread_mutex_t found_lock;
	pid_t found_pid; /* 0: none found (yet) */
	char found_comm[16];
	char found_how[96]; /* how it was chosen: "--comm redis-server", ... */
	bool missing_said; /* the "not running yet" warning was printed */
	bool can_profile; /* PAGEMAP_SCAN and async uffd-wp: probed at start-up */
	/* since StartProfiling: ticks longer than the interval, the longest, the last */
	pthread_mutex_t tick_lock;
	uint64_t ticks_over, tick_ns_max, tick_ns_last;
};

int agent_init(struct agent *a, const struct agent_config *cfg, struct ml_err *err);
/* Stop profiling (the target is left as it was) and free everything. */
void agent_fini(struct agent *a);
/* Probe CRIU once (lazily); 0 or the negative errno with @err. */
int agent_criu(struct agent *a, struct ml_err *err);
/* Resolve a request's images_dir against --images-root; -EINVAL with a message. */
int agent_images_path(const struct agent *a, const char *dir, char *out, size_t len,
		      struct ml_err *err);
/* Under the write lock: the profiled pid, the restored one, or target_find(). */
int agent_target(struct agent *a, pid_t *pid, struct ml_err *err);
void agent_tick(const struct ml_profiler_sample *s, void *arg);
/*
 * Look for the target (the profiled one, the restored one, or
 * target_find()) and say on stderr when it changes: found (pid and comm,
 * and how it was chosen), not running yet (once), gone. Sets the
 * target_pid metric. Called at start-up and every second; never blocks on
 * a checkpoint under way (it looks again later).
 */
void agent_discover(struct agent *a);
/* The target as last found: its pid (0: none), comm and how it was chosen. */
pid_t agent_found(struct agent *a, char *comm, size_t clen, char *how, size_t hlen);

/* ---- metrics (metrics.c): metrics.h ---- */

/* ---- listening (listen.c) ---- */

struct listen_opts {
	const char *socket_path; /* unix socket, or NULL */
	const char *tcp; /* HOST:PORT, or NULL */
	const char *tls_cert, *tls_key, *tls_client_ca;
};

struct listener {
	char sock[512];
	char lock[520];
	int lock_fd;
	int dir_fd; /* the socket's directory, flocked until the socket is bound */
	bool have_sock; /* the path is ours to bind */
	bool own_sock, own_lock; /* the socket bound, the lock file created or taken: by us */
	dev_t sock_dev, lock_dev;
	ino_t sock_ino, lock_ino;
};

/*
 * Check the socket's directory is safe (owned by root or us, nobody else may
 * write it), take the lock file next to the socket, refuse a path another
 * agent answers on, clear a stale socket. Holds the directory's flock until
 * listen_bound() or listen_release().
 */
int listen_lock(struct listener *l, const char *path, struct ml_err *err);
/* After the socket is bound: remember it (its inode), let other start-ups in. */
void listen_bound(struct listener *l);
/* Remove the socket and the lock file, each only while it is still ours. */
void listen_release(struct listener *l);

/* ---- the gRPC server (server.c) ---- */

struct rpc_server;

struct server_opts {
	int threads;
	unsigned int max_msg;
};

int server_create(struct rpc_server **out, struct agent *a, const struct server_opts *o,
		  struct ml_err *err);
/* Add a port; @addr is a gRPC URI ("unix:/p", "0.0.0.0:50051"). */
int server_listen(struct rpc_server *s, const char *addr, const struct listen_opts *lo,
		  struct ml_err *err);
int server_start(struct rpc_server *s, struct ml_err *err);
/*
 * Refuse new calls, let in-flight ones finish for @grace_ms, cancel the
 * rest, then stop the workers and destroy the server. Returns how many
 * calls were under way when the grace period ran out (0: all finished).
 */
int server_shutdown(struct rpc_server *s, unsigned int grace_ms);

#endif
