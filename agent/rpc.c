// SPDX-License-Identifier: MIT
/* The method table of CRIUAgent, status codes, and error replies. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "rpc_handlers.h"

const struct rpc_method rpc_methods[] = {
	{ "/agent.CRIUAgent/StartProfiling", "StartProfiling", rpc_start_profiling },
	{ "/agent.CRIUAgent/StopProfiling", "StopProfiling", rpc_stop_profiling },
	{ "/agent.CRIUAgent/GetHotRegions", "GetHotRegions", rpc_get_hot_regions },
	{ "/agent.CRIUAgent/GetDirtyVolume", "GetDirtyVolume", rpc_get_dirty_volume },
	{ "/agent.CRIUAgent/GetStatus", "GetStatus", rpc_get_status },
	{ "/agent.CRIUAgent/PreCheckpoint", "PreCheckpoint", rpc_pre_checkpoint },
	{ "/agent.CRIUAgent/FinalDump", "FinalDump", rpc_final_dump },
	{ "/agent.CRIUAgent/Restore", "Restore", rpc_restore },
	{ "/agent.CRIUAgent/StartPageServer", "StartPageServer", rpc_start_page_server },
	{ "/agent.CRIUAgent/Migrate", "Migrate", rpc_migrate },
	{ NULL, NULL, NULL },
};

size_t rpc_method_count(void)
{
	return sizeof(rpc_methods) / sizeof(rpc_methods[0]) - 1;
}

const struct rpc_method *rpc_method_find(const char *path, size_t len)
{
	for (const struct rpc_method *m = rpc_methods; m->path; m++)
		if (strlen(m->path) == len && !memcmp(m->path, path, len))
			return m;
	return NULL;
}

int rpc_method_index(const struct rpc_method *m)
{
	return (int)(m - rpc_methods);
}

static const char *const code_names[RPC_NCODES] = {
	"OK",
	"CANCELLED",
	"UNKNOWN",
	"INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED",
	"NOT_FOUND",
	"ALREADY_EXISTS",
	"PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION",
	"ABORTED",
	"OUT_OF_RANGE",
	"UNIMPLEMENTED",
	"INTERNAL",
	"UNAVAILABLE",
	"DATA_LOSS",
	"UNAUTHENTICATED",
};

const char *rpc_code_name(int code)
{
	return code >= 0 && code < RPC_NCODES ? code_names[code] : "UNKNOWN";
}

int rpc_code_for_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return RPC_OK;
	case EINVAL:
		return RPC_INVALID_ARGUMENT;
	case ESRCH:
	case ENOENT:
		return RPC_NOT_FOUND;
	case EPERM:
	case EACCES:
		return RPC_PERMISSION_DENIED;
	case EBUSY:
	case EALREADY:
	case ENOTSUP:
	case ENOSYS:
	case ENOTTY:
		return RPC_FAILED_PRECONDITION;
	case EEXIST:
		return RPC_ALREADY_EXISTS;
	case ETIMEDOUT:
		return RPC_DEADLINE_EXCEEDED;
	case ECHILD:
		return RPC_ABORTED;
	case ENOMEM:
		return RPC_RESOURCE_EXHAUSTED;
	default:
		return RPC_INTERNAL;
	}
}

int rpc_fail(struct rpc_reply *r, int code, const char *fmt, ...)
{
	va_list ap;

	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	free(r->body);
	r->body = NULL;
	r->len = 0;
	metrics_error(rpc_code_name(code));
	return code;
}

int rpc_pack(struct rpc_reply *r, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);

	r->body = malloc(n ? n : 1);
	if (!r->body)
		return rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory packing the response");
	r->len = protobuf_c_message_pack(m, r->body);
	r->code = RPC_OK;
	return 0;
}

int rpc_malformed(struct rpc_reply *r, const char *type, size_t len)
{
	return rpc_fail(r, RPC_INVALID_ARGUMENT,
			"malformed %s: %zu bytes that do not decode as agent.%s (check that the "
			"client uses proto/agent.proto)",
			type, len, type);
}
