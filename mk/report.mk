# memlens report: the libFuzzer harness of its input reader and renderer,
# tests/fuzz/fuzz_report.c, built as every harness is (Makefile: fuzz-bins,
# on the libFuzzer build of the library and the report). Not part of `all`
# (it needs clang's libFuzzer):
#   make fuzz-report                 build $(BUILD)/fuzz/fuzz_report
#   make fuzz-report FUZZ_SECONDS=60 build it and fuzz for a minute from the
#                                    fixtures in tests/report/
FUZZ_SECONDS ?= 0

.PHONY: fuzz-report
fuzz-report: $(BUILD)/fuzz/fuzz_report
	@if [ "$(FUZZ_SECONDS)" -gt 0 ]; then \
		mkdir -p $(BUILD)/fuzz/corpus-report && \
		$(BUILD)/fuzz/fuzz_report -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
			-artifact_prefix=$(BUILD)/fuzz/ \
			$(BUILD)/fuzz/corpus-report tests/report; \
	fi
