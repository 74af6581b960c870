# xroce: the one entry point. `make` builds everything into build/;
# `make test` installs what is missing, builds and runs every test.
#
# Conventions (no edits needed here when adding files):
#   bpf/NAME.bpf.c        -> build/bpf/NAME.bpf.o and build/bpf/NAME.skel.h
#   user/lib/**.c         -> build/libxroce.a, build/libxroce.so.VERSION (+ .so.0, .so links)
#   user/loader/*.c       -> build/xroce
#   user/tools/NAME.c     -> build/NAME
#   tests/*/NAME.c        -> build/tests/NAME (linked with libxroce)
#   tests/*/test_*.sh     -> run by tests/run.sh
#
# `make install` / `make uninstall` put the library, headers, pkg-config file,
# loader, tools, BPF object and man pages under PREFIX (default /usr/local),
# staged under DESTDIR when set; each directory below can be overridden.

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
VERSION := 0.1.0
SOVERSION := 0
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
PKGLIBDIR ?= $(LIBDIR)/xroce
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
SANITIZE ?= 0
ifeq ($(SANITIZE),1)
BUILD := build-san
else
BUILD := build
endif

PKGS := libbpf libxdp libmnl
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -ldeflate -lelf -lz

CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -D_GNU_SOURCE \
	-Iinclude -Iuser/lib -I$(BUILD)/bpf
LDLIBS = $(PKG_LIBS) -lpthread
ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -O1
LDFLAGS += -fsanitize=address,undefined
endif

ARCH_INC := -I/usr/include/$(shell uname -m)-linux-gnu
BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Werror -Iinclude $(ARCH_INC)

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))

LIB_SRCS := $(wildcard user/lib/*.c user/lib/*/*.c)
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
LOADER_SRCS := $(wildcard user/loader/*.c)
LOADER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LOADER_SRCS))
TOOL_SRCS := $(wildcard user/tools/*.c)
TOOLS := $(patsubst user/tools/%.c,$(BUILD)/%,$(TOOL_SRCS))
# Fuzz harnesses have no main (libFuzzer's is linked in): built below, not as tests.
TEST_SRCS := $(filter-out tests/fuzz/%,$(wildcard tests/*/*.c))
TEST_BINS := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
FUZZ_SRCS := $(wildcard tests/fuzz/*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

SONAME := libxroce.so.$(SOVERSION)
SHLIB := libxroce.so.$(VERSION)
LIB_MAP := user/lib/libxroce.map
PUBLIC_HEADERS := $(wildcard include/xroce/*.h)
MAN_PAGES := $(wildcard docs/man/*.[1-8])

.PHONY: all deps test fuzz interop bench profile clean format install uninstall
all: $(BPF_OBJS) $(BUILD)/libxroce.a $(BUILD)/libxroce.so $(BUILD)/$(SONAME) $(BUILD)/xroce $(TOOLS) \
	$(TEST_BINS) $(BENCH_BINS) $(FUZZ_BINS)

deps:
	@scripts/install-deps.sh

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h include/xroce/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -MD -MF $@.d -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

$(BUILD)/obj/%.o: %.c $(BPF_SKELS) $(wildcard include/xroce/*.h user/lib/*.h user/lib/*/*.h user/tools/*.h tests/*/*.h bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(BUILD)/libxroce.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# Only the API of include/xroce/xroce.h is exported (the version script), and
# check-exports.sh fails the build when the two disagree.
$(BUILD)/$(SHLIB): $(LIB_OBJS) $(LIB_MAP) scripts/check-exports.sh $(PUBLIC_HEADERS)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) -Wl,--version-script=$(LIB_MAP) \
		-o $@ $(LIB_OBJS) $(LDLIBS)
	scripts/check-exports.sh $@ $(PUBLIC_HEADERS) || { rm -f $@; exit 1; }

$(BUILD)/$(SONAME) $(BUILD)/libxroce.so: $(BUILD)/$(SHLIB)
	ln -sfn $(SHLIB) $@

$(BUILD)/xroce: $(LOADER_OBJS) $(BUILD)/libxroce.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%: $(BUILD)/obj/user/tools/%.o $(BUILD)/libxroce.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

define test_rule
$(BUILD)/tests/$(notdir $(basename $(1))): $(BUILD)/obj/$(basename $(1)).o $(BUILD)/libxroce.a
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach src,$(TEST_SRCS),$(eval $(call test_rule,$(src))))

# The harnesses drive the sans-I/O core, so they link its objects (built
# again with clang and the sanitizers libFuzzer needs) and libdeflate.
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Iuser/lib \
	$(FUZZ_SANITIZE)
FUZZ_CORE_OBJS := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(wildcard user/lib/core/*.c))

FUZZ_LIBS := -ldeflate

$(BUILD)/fuzz/obj/%.o: %.c $(wildcard include/xroce/*.h user/lib/core/*.h tests/*/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/%: $(BUILD)/fuzz/obj/tests/fuzz/%.o $(FUZZ_CORE_OBJS)
	$(CLANG) $(FUZZ_SANITIZE) -fsanitize=fuzzer -o $@ $^ $(FUZZ_LIBS)

# fuzz_xdp_agree runs the XDP program as well: it needs its skeleton and libbpf.
$(BUILD)/fuzz/obj/tests/fuzz/fuzz_xdp_agree.o: FUZZ_CFLAGS += -I$(BUILD)/bpf $(PKG_CFLAGS)
$(BUILD)/fuzz/obj/tests/fuzz/fuzz_xdp_agree.o: $(BPF_SKELS)
$(BUILD)/fuzz/fuzz_xdp_agree: FUZZ_LIBS = $(PKG_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libxroce.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

test: deps
	$(MAKE) all
	BUILD=$(BUILD) tests/run.sh

# Every harness for FUZZ_TIME seconds, from the kept corpus; new inputs go to
# a temporary directory (docs/fuzzing.md: merging them into the corpus).
FUZZ_TIME ?= 60
fuzz: $(FUZZ_BINS)
	FUZZ_TIME=$(FUZZ_TIME) FUZZ_KEEP=1 BUILD=$(BUILD) tests/fuzz/test_fuzz.sh

# Tool and bench objects are not intermediates: keep them between builds.
.SECONDARY:

interop: deps
	$(MAKE) all
	BUILD=$(BUILD) tests/interop/run.sh

bench: deps
	$(MAKE) all
	BUILD=$(BUILD) bench/run.sh

profile: deps
	$(MAKE) all
	BUILD=$(BUILD) bench/profile.sh

# A directory as libxroce.pc names it: relative to ${prefix} when under PREFIX.
pc_path = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

# Installs what `make` built; it builds only what is missing, so that
# `sudo make install` after `make` writes nothing into the build tree.
install: $(BUILD)/$(SHLIB) $(BUILD)/libxroce.a $(BUILD)/xroce $(TOOLS) $(BPF_OBJS)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(PKGLIBDIR) \
		$(DESTDIR)$(INCLUDEDIR)/xroce $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR)
	install -m 0755 $(BUILD)/$(SHLIB) $(DESTDIR)$(LIBDIR)/$(SHLIB)
	ln -sfn $(SHLIB) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/libxroce.so
	install -m 0644 $(BUILD)/libxroce.a $(DESTDIR)$(LIBDIR)/libxroce.a
	install -m 0644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/xroce/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_path,$(LIBDIR))|g' \
		-e 's|@INCLUDEDIR@|$(call pc_path,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g' \
		user/lib/libxroce.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/libxroce.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/libxroce.pc
	install -m 0755 $(BUILD)/xroce $(DESTDIR)$(SBINDIR)/xroce
	install -m 0755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	install -m 0644 $(BPF_OBJS) $(DESTDIR)$(PKGLIBDIR)/
	for page in $(MAN_PAGES); do \
		dir=$(DESTDIR)$(MANDIR)/man$${page##*.}; \
		install -d $$dir && \
		sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@PKGLIBDIR@|$(PKGLIBDIR)|g' \
			$$page >$$dir/$${page##*/} && \
		chmod 0644 $$dir/$${page##*/} || exit 1; \
	done
	$(if $(DESTDIR),,ldconfig)

# Removes exactly what install put there, and the directories only xroce uses.
uninstall:
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,$(SHLIB) $(SONAME) libxroce.so libxroce.a) \
		$(DESTDIR)$(PKGCONFIGDIR)/libxroce.pc \
		$(addprefix $(DESTDIR)$(INCLUDEDIR)/xroce/,$(notdir $(PUBLIC_HEADERS))) \
		$(DESTDIR)$(SBINDIR)/xroce $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS))) \
		$(addprefix $(DESTDIR)$(PKGLIBDIR)/,$(notdir $(BPF_OBJS)))
	for page in $(MAN_PAGES); do \
		rm -f $(DESTDIR)$(MANDIR)/man$${page##*.}/$${page##*/}; \
	done
	for dir in $(DESTDIR)$(INCLUDEDIR)/xroce $(DESTDIR)$(PKGLIBDIR); do \
		[ ! -d $$dir ] || rmdir --ignore-fail-on-non-empty $$dir; \
	done
	$(if $(DESTDIR),,ldconfig)

# ---- libibverbs.so.1 (user/ibverbs) ----------------------------------------
# rdma-core's ABI over libxroce (linked in whole), for unmodified verbs
# programs: $(BUILD)/xroce-run puts $(BUILD)/ibverbs first in their library
# path; make install puts the library under IBVERBSDIR, never over the
# system's libibverbs, and xroce-run in BINDIR pointing there.
IBVERBSDIR ?= $(PKGLIBDIR)/ibverbs
IBVERBS_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard user/ibverbs/*.c))
IBVERBS_LIB := $(BUILD)/ibverbs/libibverbs.so.1
IBVERBS_MAP := user/ibverbs/libibverbs.map
xroce_run_sed = sed -e 's|@IBVERBSDIR@|$(1)|g' -e 's|@VERSION@|$(VERSION)|g' $(2) user/tools/xroce-run
# A sanitized library in an unsanitized program needs the ASan runtime
# loaded first; the programs' own leaks (perftest's, Python's) are not ours.
ifeq ($(SANITIZE),1)
ASAN_RUNTIME = $(shell $(CC) -print-file-name=libasan.so)
SANITIZED_RUN = -e '/^export LD_LIBRARY_PATH/a LD_PRELOAD=$(ASAN_RUNTIME)$${LD_PRELOAD:+ $$LD_PRELOAD} ASAN_OPTIONS=detect_leaks=0$${ASAN_OPTIONS:+:$$ASAN_OPTIONS}\nexport LD_PRELOAD ASAN_OPTIONS'
endif

all: $(IBVERBS_LIB) $(BUILD)/xroce-run

$(IBVERBS_OBJS): CFLAGS += -DXROCE_VERSION='"$(VERSION)"'
$(IBVERBS_OBJS): $(wildcard user/ibverbs/*.h)

$(IBVERBS_LIB): $(IBVERBS_OBJS) $(BUILD)/libxroce.a $(IBVERBS_MAP)
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libibverbs.so.1 -Wl,--version-script=$(IBVERBS_MAP) \
		-Wl,--no-undefined -o $@ $(IBVERBS_OBJS) -Wl,--whole-archive $(BUILD)/libxroce.a \
		-Wl,--no-whole-archive $(LDLIBS)

# ---- librdmacm.so.1 (user/rdmacm) ------------------------------------------
# rdma-core's RDMA CM ABI over libxroce's CM, beside libibverbs.so.1 and
# linked against it: libxroce comes from there (XROCE_RDMACM_PRIVATE), one
# copy per process.
RDMACM_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard user/rdmacm/*.c))
RDMACM_LIB := $(BUILD)/ibverbs/librdmacm.so.1
RDMACM_MAP := user/rdmacm/librdmacm.map

all: $(RDMACM_LIB)

$(RDMACM_OBJS): $(wildcard user/rdmacm/*.h) user/ibverbs/rdmacm_bridge.h

$(RDMACM_LIB): $(RDMACM_OBJS) $(IBVERBS_LIB) $(RDMACM_MAP)
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,librdmacm.so.1 -Wl,--version-script=$(RDMACM_MAP) \
		-Wl,--no-undefined -o $@ $(RDMACM_OBJS) $(IBVERBS_LIB) -lpthread

$(BUILD)/xroce-run: user/tools/xroce-run
	$(call xroce_run_sed,$(abspath $(BUILD)/ibverbs),$(SANITIZED_RUN)) >$@ && chmod 0755 $@

.PHONY: install-ibverbs uninstall-ibverbs
install: install-ibverbs
install-ibverbs: $(IBVERBS_LIB) $(RDMACM_LIB)
	install -d $(DESTDIR)$(IBVERBSDIR) $(DESTDIR)$(BINDIR)
	install -m 0755 $(IBVERBS_LIB) $(DESTDIR)$(IBVERBSDIR)/libibverbs.so.1
	install -m 0755 $(RDMACM_LIB) $(DESTDIR)$(IBVERBSDIR)/librdmacm.so.1
	$(call xroce_run_sed,$(IBVERBSDIR)) >$(DESTDIR)$(BINDIR)/xroce-run
	chmod 0755 $(DESTDIR)$(BINDIR)/xroce-run

# Before uninstall's own recipe, which removes PKGLIBDIR once it is empty.
uninstall: uninstall-ibverbs
uninstall-ibverbs:
	rm -f $(DESTDIR)$(IBVERBSDIR)/libibverbs.so.1 $(DESTDIR)$(IBVERBSDIR)/librdmacm.so.1 \
		$(DESTDIR)$(BINDIR)/xroce-run
	[ ! -d $(DESTDIR)$(IBVERBSDIR) ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(IBVERBSDIR)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san
