# memlens agent: the gRPC CRIUAgent service (agent/, proto/agent.proto).
# Needs protoc-c, the gRPC C core, protobuf-c and libmicrohttpd
# (scripts/packages/agent.txt); without them the agent is left out.

AGENT_PKGS := grpc libprotobuf-c libmicrohttpd
AGENT_OK := $(shell pkg-config --exists $(AGENT_PKGS) && command -v protoc-c >/dev/null && echo yes)

ifeq ($(AGENT_OK),yes)
AGENT_GEN := $(BUILD)/gen/agent.pb-c.c $(BUILD)/gen/agent.pb-c.h
# a binary of its own (memlens-agent, run by `memlens agent`): the gRPC and
# C++ runtime libraries would otherwise slow down every memlens command's start
AGENT_SRCS := $(wildcard agent/*.c) $(BUILD)/gen/agent.pb-c.c
AGENT_OBJS := $(call objs,$(BUILD),$(AGENT_SRCS)) $(COMMON_OBJS)
EXTRA_TARGETS += $(BUILD)/memlens-agent
# (the Migrate RPC runs the migration flow of `memlens migrate`: memlens/migrate.h)

# the tracer library too (mk/bpf.mk), for the RPCs that will offer them
$(BUILD)/memlens-agent: $(AGENT_OBJS) $(BUILD)/libmemlens-trace.a $(BUILD)/libmemlens.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(AGENT_OBJS) $(BUILD)/libmemlens-trace.a $(BUILD)/libmemlens.a \
		$(shell pkg-config --libs $(AGENT_PKGS)) $(TRACE_LDLIBS) $(LDLIBS)
# the handlers' files include the generated header (through rpc_handlers.h)
$(call objs,$(BUILD),$(shell grep -l '"rpc_handlers.h"' agent/*.c)): $(BUILD)/gen/agent.pb-c.h

# one protoc-c run writes both files
$(BUILD)/gen/agent.pb-c.h: proto/agent.proto
	@mkdir -p $(BUILD)/gen
	protoc-c -Iproto --c_out=$(BUILD)/gen $<
$(BUILD)/gen/agent.pb-c.c: $(BUILD)/gen/agent.pb-c.h
	@test -f $@
else
$(warning memlens agent left out: install the packages of scripts/packages/agent.txt)
endif
