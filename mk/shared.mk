# libmemlens.so: the library as a shared object for programs that link it
# dynamically. Position-independent objects of their own, built with
# -fvisibility=hidden; the exported interface is the ml_ functions of
# include/memlens/, each listed by name in lib/libmemlens.map (make check-exports
# checks the list) and version-tagged MEMLENS_1.
# Built by `all` (make install installs it).
SHARED_VERSION := 1
PIC_OBJS := $(call objs,$(BUILD)/pic,$(LIB_SRCS))
EXTRA_TARGETS += $(BUILD)/libmemlens.so

.PHONY: shared
shared: $(BUILD)/libmemlens.so

$(eval $(call compile_rules,$(BUILD)/pic,pic))

$(BUILD)/libmemlens.so: $(PIC_OBJS) lib/libmemlens.map
	$(CC) -shared $(LDFLAGS) -o $@ -Wl,-soname,libmemlens.so.$(SHARED_VERSION) \
		-Wl,--version-script=lib/libmemlens.map -Wl,--no-undefined $(PIC_OBJS) $(LDLIBS)
