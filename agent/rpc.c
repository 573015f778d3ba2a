// SPDX-License-Identifier: MIT
/* The method table of CRIUAgent and error replies (counted in metrics.c). */
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
