# memlens report (issue 7): the libFuzzer harness of its input reader and
# renderer. Not part of `all` (it needs clang's libFuzzer):
#   make fuzz-report                 build $(BUILD)/fuzz/fuzz_report
#   make fuzz-report FUZZ_SECONDS=60 build it and fuzz for a minute from the
#                                    fixtures in tests/report/
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 0
# the whole library: report reads through lib/format, whose writers use the snapshot's helpers
REPORT_FUZZ_LIB := $(wildcard report/*.c) $(LIB_SRCS)

.PHONY: fuzz-report
fuzz-report: $(BUILD)/fuzz/fuzz_report
	@if [ "$(FUZZ_SECONDS)" -gt 0 ]; then \
		mkdir -p $(BUILD)/fuzz/corpus-report && \
		$(BUILD)/fuzz/fuzz_report -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
			-artifact_prefix=$(BUILD)/fuzz/ \
			$(BUILD)/fuzz/corpus-report tests/report; \
	fi

$(BUILD)/fuzz/fuzz_report: tests/fuzz/fuzz_report.c $(REPORT_FUZZ_LIB) include/memlens/report.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -Iinclude -I$(BUILD)/gen -g -O1 \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ tests/fuzz/fuzz_report.c $(REPORT_FUZZ_LIB) $(LDLIBS)
