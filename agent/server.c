// SPDX-License-Identifier: MIT
/*
 * The gRPC server on the C core API: one completion queue, a few worker
 * threads polling it, any method accepted with grpc_server_request_call()
 * and dispatched by path (unknown paths get UNIMPLEMENTED).
 *
 * Each call is one struct call whose address is the tag of its
 * operations: REQUESTED -> RECEIVING -> FINISHING -> freed. Every call
 * object alive is counted; the queue is shut down only once the server's
 * shutdown notification has arrived and the count is zero, because a
 * start_batch on a shut-down queue aborts the process (gRPC 1.51).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "agent.h"

#define PENDING_REQUESTS 64
#define MAX_THREADS 32

enum call_state { CALL_REQUESTED, CALL_RECEIVING, CALL_FINISHING, CALL_SHUTDOWN_TAG };

struct call {
	enum call_state state;
	struct rpc_server *srv;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array md;
	grpc_byte_buffer *req, *resp;
	grpc_slice status_msg;
	bool have_status_msg;
	int cancelled;
	int code;
	const struct rpc_method *m;
};

struct rpc_server {
	struct agent *agent;
	grpc_server *srv;
	grpc_completion_queue *cq;
	pthread_t threads[MAX_THREADS];
	int nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int live; /* struct call objects alive */
	int active; /* of which calls under way (past REQUESTED) */
	bool draining, shutdown_done, started;
	int nports; /* ports added: the server must then be shut down before it is destroyed */
	struct call shutdown_tag;
};

static void call_free(struct call *c)
{
	struct rpc_server *s = c->srv;

	if (c->call)
		grpc_call_unref(c->call);
	grpc_call_details_destroy(&c->details);
	grpc_metadata_array_destroy(&c->md);
	if (c->req)
		grpc_byte_buffer_destroy(c->req);
	if (c->resp)
		grpc_byte_buffer_destroy(c->resp);
	if (c->have_status_msg)
		grpc_slice_unref(c->status_msg);
	pthread_mutex_lock(&s->lock);
	s->live--;
	if (c->state != CALL_REQUESTED)
		s->active--;
	free(c);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Ask for one more incoming call; not once draining has begun. */
static void request_one(struct rpc_server *s)
{
	struct call *c = calloc(1, sizeof(*c));
	grpc_call_error e;

	if (!c)
		return;
	c->srv = s;
	c->state = CALL_REQUESTED;
	grpc_call_details_init(&c->details);
	grpc_metadata_array_init(&c->md);
	pthread_mutex_lock(&s->lock);
	if (s->draining) {
		pthread_mutex_unlock(&s->lock);
		grpc_call_details_destroy(&c->details);
		grpc_metadata_array_destroy(&c->md);
		free(c);
		return;
	}
	s->live++;
	e = grpc_server_request_call(s->srv, &c->call, &c->details, &c->md, s->cq, s->cq, c);
	pthread_mutex_unlock(&s->lock);
	if (e != GRPC_CALL_OK)
		call_free(c);
}

static uint64_t deadline_mono_ns(gpr_timespec d)
{
	gpr_timespec m;

	if (gpr_time_cmp(d, gpr_inf_future(d.clock_type)) == 0)
		return 0;
	m = gpr_convert_clock_type(d, GPR_CLOCK_MONOTONIC);
	if (m.tv_sec < 0)
		return 1;
	return (uint64_t)m.tv_sec * 1000000000ULL + (uint64_t)m.tv_nsec;
}

static uint64_t mono_now_ns(void)
{
	gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);

	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* Send status (and the body when OK); the call is freed when this completes. */
static void finish(struct call *c, struct rpc_reply *r)
{
	grpc_op ops[4];
	size_t n = 0;

	memset(ops, 0, sizeof(ops));
	c->state = CALL_FINISHING;
	c->code = r->code;
	ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
	n++;
	if (r->code == RPC_OK) {
		grpc_slice sl = grpc_slice_from_copied_buffer((const char *)r->body, r->len);

		c->resp = grpc_raw_byte_buffer_create(&sl, 1);
		grpc_slice_unref(sl);
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n].data.send_message.send_message = c->resp;
		n++;
	}
	c->status_msg = grpc_slice_from_copied_string(r->code == RPC_OK ? "" : r->msg);
	c->have_status_msg = true;
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = (grpc_status_code)r->code;
	ops[n].data.send_status_from_server.status_details = &c->status_msg;
	n++;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
	n++;
	free(r->body);
	r->body = NULL;
	metrics_rpc(c->m ? rpc_method_index(c->m) : -1, c->m ? c->m->name : NULL, r->code);
	if (grpc_call_start_batch(c->call, ops, n, c, NULL) != GRPC_CALL_OK)
		call_free(c);
}

static void on_requested(struct call *c)
{
	struct rpc_reply r = { 0 };
	grpc_op op;

	pthread_mutex_lock(&c->srv->lock);
	c->srv->active++;
	c->state = CALL_RECEIVING;
	pthread_mutex_unlock(&c->srv->lock);
	request_one(c->srv);
	c->m = rpc_method_find((const char *)GRPC_SLICE_START_PTR(c->details.method),
			       GRPC_SLICE_LENGTH(c->details.method));
	if (!c->m) {
		int len = (int)GRPC_SLICE_LENGTH(c->details.method);

		rpc_fail(&r, RPC_UNIMPLEMENTED,
			 "unknown method '%.*s': the agent serves "
			 "/agent.CRIUAgent/"
			 "{StartProfiling,StopProfiling,GetHotRegions,GetDirtyVolume,GetStatus,"
			 "PreCheckpoint,FinalDump,Restore,StartPageServer}",
			 len > 200 ? 200 : len,
			 (const char *)GRPC_SLICE_START_PTR(c->details.method));
		finish(c, &r);
		return;
	}
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->req;
	if (grpc_call_start_batch(c->call, &op, 1, c, NULL) != GRPC_CALL_OK)
		call_free(c);
}

static void on_received(struct call *c, bool ok)
{
	struct rpc_reply r = { 0 };
	uint64_t deadline = deadline_mono_ns(c->details.deadline);
	grpc_byte_buffer_reader rd;
	grpc_slice in;

	if (!ok) {
		call_free(c); /* the client went away */
		return;
	}
	if (!c->req) {
		rpc_fail(&r, RPC_INVALID_ARGUMENT, "%s: the request message is missing",
			 c->m->name);
		finish(c, &r);
		return;
	}
	if (deadline && mono_now_ns() >= deadline) {
		rpc_fail(&r, RPC_DEADLINE_EXCEEDED,
			 "%s: the deadline passed before the call started", c->m->name);
		finish(c, &r);
		return;
	}
	if (!grpc_byte_buffer_reader_init(&rd, c->req)) {
		rpc_fail(&r, RPC_INVALID_ARGUMENT, "%s: cannot decompress the request", c->m->name);
		finish(c, &r);
		return;
	}
	in = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	c->m->fn(c->srv->agent, GRPC_SLICE_START_PTR(in), GRPC_SLICE_LENGTH(in), deadline, &r);
	grpc_slice_unref(in);
	finish(c, &r);
}

static void on_event(struct rpc_server *s, grpc_event ev)
{
	struct call *c = ev.tag;

	switch (c->state) {
	case CALL_SHUTDOWN_TAG:
		pthread_mutex_lock(&s->lock);
		s->shutdown_done = true;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		break;
	case CALL_REQUESTED:
		if (ev.success)
			on_requested(c);
		else
			call_free(c); /* the server is shutting down */
		break;
	case CALL_RECEIVING:
		on_received(c, ev.success);
		break;
	case CALL_FINISHING:
		call_free(c);
		break;
	}
}

static void *worker(void *arg)
{
	struct rpc_server *s = arg;

	for (;;) {
		grpc_event ev =
			grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE)
			on_event(s, ev);
	}
	return NULL;
}

int server_create(struct rpc_server **out, struct agent *a, const struct server_opts *o,
		  struct ml_err *err)
{
	struct rpc_server *s = calloc(1, sizeof(*s));
	grpc_arg args[2];
	grpc_channel_args ca = { 2, args };

	if (!s)
		return ml_err_set(err, ENOMEM, "out of memory");
	s->agent = a;
	s->nthreads = o->threads < 1 ? 1 : o->threads > MAX_THREADS ? MAX_THREADS : o->threads;
	s->shutdown_tag.state = CALL_SHUTDOWN_TAG;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	args[0].type = GRPC_ARG_INTEGER;
	args[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	args[0].value.integer = (int)o->max_msg;
	args[1].type = GRPC_ARG_INTEGER;
	args[1].key = (char *)GRPC_ARG_MAX_CONCURRENT_STREAMS;
	args[1].value.integer = 100;
	s->cq = grpc_completion_queue_create_for_next(NULL);
	s->srv = grpc_server_create(&ca, NULL);
	if (!s->cq || !s->srv) {
		free(s);
		return ml_err_set(err, ENOMEM, "cannot create the gRPC server");
	}
	grpc_server_register_completion_queue(s->srv, s->cq, NULL);
	*out = s;
	return 0;
}

static char *read_pem(const char *path, struct ml_err *err)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		ml_err_set(err, errno, "cannot read %s: %s; give a PEM file", path,
			   strerror(errno));
		return NULL;
	}
	do {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				ml_err_set(err, ENOMEM, "out of memory");
				return NULL;
			}
			buf = nb;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0 && len < (1u << 20));
	fclose(f);
	buf[len] = '\0';
	if (!strstr(buf, "-----BEGIN")) {
		free(buf);
		ml_err_set(err, EINVAL, "%s is not a PEM file (no -----BEGIN line)", path);
		return NULL;
	}
	return buf;
}

static grpc_server_credentials *make_creds(const struct listen_opts *lo, struct ml_err *err)
{
	grpc_ssl_pem_key_cert_pair pair;
	grpc_server_credentials *c;
	char *cert, *key, *ca = NULL;

	if (!lo->tls_cert)
		return grpc_insecure_server_credentials_create();
	cert = read_pem(lo->tls_cert, err);
	if (!cert)
		return NULL;
	key = read_pem(lo->tls_key, err);
	if (!key) {
		free(cert);
		return NULL;
	}
	if (lo->tls_client_ca && !(ca = read_pem(lo->tls_client_ca, err))) {
		free(cert);
		free(key);
		return NULL;
	}
	pair.private_key = key;
	pair.cert_chain = cert;
	c = grpc_ssl_server_credentials_create_ex(
		ca, &pair, 1,
		ca ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
		   : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
		NULL);
	free(cert);
	free(key);
	free(ca);
	if (!c)
		ml_err_set(err, EINVAL, "gRPC refused the TLS certificate or key (%s, %s)",
			   lo->tls_cert, lo->tls_key);
	return c;
}

int server_listen(struct rpc_server *s, const char *addr, const struct listen_opts *lo,
		  struct ml_err *err)
{
	grpc_server_credentials *creds = make_creds(lo, err);
	int port;

	if (!creds)
		return -err->code;
	port = grpc_server_add_http2_port(s->srv, addr, creds);
	grpc_server_credentials_release(creds);
	if (port)
		s->nports++;
	if (!port)
		return ml_err_set(err, EADDRINUSE,
				  "cannot listen on %s: the address is in use, invalid or not "
				  "permitted (see the gRPC log above)",
				  addr);
	return 0;
}

int server_start(struct rpc_server *s, struct ml_err *err)
{
	grpc_server_start(s->srv);
	s->started = true;
	for (int i = 0; i < PENDING_REQUESTS; i++)
		request_one(s);
	for (int i = 0; i < s->nthreads; i++) {
		int r = pthread_create(&s->threads[i], NULL, worker, s);

		if (r) {
			s->nthreads = i;
			return ml_err_set(err, r, "cannot start a server thread: %s", strerror(r));
		}
	}
	return 0;
}

/* Wait until the shutdown notification arrived and no call is alive. */
static bool wait_drained(struct rpc_server *s, unsigned int ms)
{
	struct timespec until;
	bool done;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (!(s->shutdown_done && s->live == 0)) {
		if (ms == 0)
			pthread_cond_wait(&s->cond, &s->lock);
		else if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
			break;
	}
	done = s->shutdown_done && s->live == 0;
	pthread_mutex_unlock(&s->lock);
	return done;
}

int server_shutdown(struct rpc_server *s, unsigned int grace_ms)
{
	int cancelled = 0;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	s->draining = true;
	pthread_mutex_unlock(&s->lock);
	if (s->started) {
		grpc_server_shutdown_and_notify(s->srv, s->cq, &s->shutdown_tag);
		if (!wait_drained(s, grace_ms ? grace_ms : 1)) {
			pthread_mutex_lock(&s->lock);
			cancelled = s->active;
			pthread_mutex_unlock(&s->lock);
			grpc_server_cancel_all_calls(s->srv);
			wait_drained(s, 0);
		}
	} else if (s->nports) {
		/*
		 * Never started, but a port was added (a later start-up step
		 * failed): gRPC aborts when such a server is destroyed without a
		 * shutdown. No worker polls the queue: take the notification here.
		 */
		gpr_timespec until = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
						  gpr_time_from_seconds(10, GPR_TIMESPAN));

		grpc_server_shutdown_and_notify(s->srv, s->cq, &s->shutdown_tag);
		for (;;) {
			grpc_event ev = grpc_completion_queue_next(s->cq, until, NULL);

			if (ev.type != GRPC_OP_COMPLETE || ev.tag == &s->shutdown_tag)
				break;
		}
	}
	grpc_completion_queue_shutdown(s->cq);
	for (int i = 0; i < s->nthreads; i++)
		pthread_join(s->threads[i], NULL);
	if (!s->nthreads) {
		/* never started: drain the queue here */
		while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
			       .type != GRPC_QUEUE_SHUTDOWN)
			;
	}
	grpc_server_destroy(s->srv);
	grpc_completion_queue_destroy(s->cq);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	return cancelled;
}
