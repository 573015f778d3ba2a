# libmemlens decodes CRIU's stats-dump image (lib/criu/criu_stats.c) with the
# C code protoc-c generates from CRIU's images/stats.proto (proto/criu/): the
# library needs libprotobuf-c, and every program linking libmemlens.a (memlens,
# the agent, the tests, bench/) gets it through LDLIBS. Without protobuf-c the
# build stops at the generated header and says what to install (make deps and
# make clean still work).
CRIU_STATS_OK := $(shell pkg-config --exists libprotobuf-c && command -v protoc-c >/dev/null && echo yes)
CRIU_STATS_GEN := $(BUILD)/gen/criu/stats.pb-c.c
LIB_SRCS += $(CRIU_STATS_GEN)
# the one library source that includes the generated header, in every build
# of the library (Makefile: lib_objs)
$(call lib_objs,lib/criu/criu_stats.c): $(BUILD)/gen/criu/stats.pb-c.h
LDLIBS += $(shell pkg-config --libs libprotobuf-c 2>/dev/null || echo -lprotobuf-c)

# one protoc-c run writes both files
$(BUILD)/gen/criu/stats.pb-c.h: proto/criu/stats.proto
ifeq ($(CRIU_STATS_OK),yes)
	@mkdir -p $(BUILD)/gen
	protoc-c -Iproto --c_out=$(BUILD)/gen $<
else
	@echo "libmemlens needs protobuf-c to read CRIU's stats images: install libprotobuf-c-dev and protobuf-c-compiler (make deps installs them)" >&2
	@exit 1
endif
$(CRIU_STATS_GEN): $(BUILD)/gen/criu/stats.pb-c.h
	@test -f $@
