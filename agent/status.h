/* SPDX-License-Identifier: MIT */
/* gRPC status codes: their names, and the one for a negative errno (status.c). */
#ifndef MEMLENS_AGENT_STATUS_H
#define MEMLENS_AGENT_STATUS_H

/* gRPC status codes (grpc/status.h), without pulling gRPC into every file */
enum rpc_code {
	RPC_OK = 0,
	RPC_CANCELLED = 1,
	RPC_UNKNOWN = 2,
	RPC_INVALID_ARGUMENT = 3,
	RPC_DEADLINE_EXCEEDED = 4,
	RPC_NOT_FOUND = 5,
	RPC_ALREADY_EXISTS = 6,
	RPC_PERMISSION_DENIED = 7,
	RPC_RESOURCE_EXHAUSTED = 8,
	RPC_FAILED_PRECONDITION = 9,
	RPC_ABORTED = 10,
	RPC_OUT_OF_RANGE = 11,
	RPC_UNIMPLEMENTED = 12,
	RPC_INTERNAL = 13,
	RPC_UNAVAILABLE = 14,
	RPC_DATA_LOSS = 15,
	RPC_UNAUTHENTICATED = 16,
	RPC_NCODES
};

const char *rpc_code_name(int code);
/* A negative errno of libmemlens as a gRPC status code. */
int rpc_code_for_errno(int err);

#endif
