/* SPDX-License-Identifier: MIT */
/* The CRIUAgent handlers (rpc_profile.c, rpc_criu.c) and their helpers. */
#ifndef MEMLENS_AGENT_RPC_HANDLERS_H
#define MEMLENS_AGENT_RPC_HANDLERS_H

#include <protobuf-c/protobuf-c.h>

#include "agent.h"
#include "agent.pb-c.h"
#include "memlens/criu_preflight.h"

void rpc_start_profiling(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			 struct rpc_reply *out);
void rpc_stop_profiling(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			struct rpc_reply *out);
void rpc_get_hot_regions(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			 struct rpc_reply *out);
void rpc_get_dirty_volume(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			  struct rpc_reply *out);
void rpc_get_status(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		    struct rpc_reply *out);
void rpc_pre_checkpoint(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			struct rpc_reply *out);
void rpc_final_dump(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		    struct rpc_reply *out);
void rpc_restore(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		 struct rpc_reply *out);
void rpc_start_page_server(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
			   struct rpc_reply *out);
/* agent/rpc_migrate.c */
void rpc_migrate(struct agent *a, const uint8_t *req, size_t len, uint64_t deadline,
		 struct rpc_reply *out);

/*
 * FAILED_PRECONDITION, and true, when the agent lacks CAP_SYS_ADMIN, which
 * CRIU needs to dump or restore (a sidecar's agent profiles only).
 */
bool rpc_refuse_without_sys_admin(const char *what, struct rpc_reply *out);
/*
 * Before anything is frozen: what CRIU would refuse in @pid's tree
 * (include/memlens/criu_preflight.h, as `memlens checkpoint` and `memlens
 * migrate` check it). FAILED_PRECONDITION naming each finding (pid, comm,
 * resource, fix), and true, when it would; the error, and true, when the
 * check itself fails; false: go on. @o: the TCP policy and options given.
 */
bool rpc_refuse_preflight(const struct agent *a, pid_t pid, const struct ml_criu_preflight_opts *o,
			  const char *what, struct rpc_reply *out);
/* Pack @m into @r (code OK). */
int rpc_pack(struct rpc_reply *r, const ProtobufCMessage *m);
/* INVALID_ARGUMENT for a request that does not decode. */
int rpc_malformed(struct rpc_reply *r, const char *type, size_t len);

#endif
