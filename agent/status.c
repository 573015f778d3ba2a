// SPDX-License-Identifier: MIT
/* gRPC status codes: their names, and the one for a negative errno (status.h). */
#include <errno.h>

#include "status.h"

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
