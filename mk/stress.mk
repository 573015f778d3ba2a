# The stress suite (tests/stress/, workloads/stress_*.c): `make stress` runs
# the full one (at most ~10 min); tests/run.sh runs the short one (~2 min).
STRESS_SRCS := $(wildcard tests/stress/*.c)
STRESS_BIN  := $(BUILD)/tests/stress/stress
EXTRA_TARGETS += $(STRESS_BIN) $(BUILD)/workloads/stress_busy_fp

$(STRESS_BIN): $(STRESS_SRCS) tests/stress/driver.h workloads/stress_result.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -o $@ $(STRESS_SRCS)

# the stress targets share workloads/stress.h
$(filter $(BUILD)/workloads/stress_%,$(WORKLOADS)): workloads/stress.h workloads/stress_result.h
# stress_busy again with frame pointers: calls and returns that walk the stack
$(BUILD)/workloads/stress_busy_fp: workloads/stress_busy.c workloads/stress.h workloads/stress_result.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer -o $@ $< -lpthread -lm

.PHONY: stress
stress: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@STRESS=full tests/stress/run.sh
