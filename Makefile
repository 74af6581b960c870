# xroce: the one entry point. `make` builds everything into build/;
# `make test` installs what is missing, builds and runs every test.
#
# Conventions (no edits needed here when adding files):
#   bpf/NAME.bpf.c        -> build/bpf/NAME.bpf.o and build/bpf/NAME.skel.h
#   user/lib/**.c         -> build/libxroce.a, build/libxroce.so
#   user/loader/*.c       -> build/xroce
#   user/tools/NAME.c     -> build/NAME
#   tests/*/NAME.c        -> build/tests/NAME (linked with libxroce)
#   tests/*/test_*.sh     -> run by tests/run.sh

CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
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
TEST_SRCS := $(wildcard tests/*/*.c)
TEST_BINS := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

.PHONY: all deps test interop bench clean format
all: $(BPF_OBJS) $(BUILD)/libxroce.a $(BUILD)/libxroce.so $(BUILD)/xroce $(TOOLS) \
	$(TEST_BINS) $(BENCH_BINS)

deps:
	@scripts/install-deps.sh

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h include/xroce/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -MD -MF $@.d -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

$(BUILD)/obj/%.o: %.c $(BPF_SKELS) $(wildcard include/xroce/*.h user/lib/*.h user/lib/*/*.h tests/*/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(BUILD)/libxroce.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libxroce.so: $(LIB_OBJS)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LDLIBS)

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

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libxroce.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

test: deps
	$(MAKE) all
	BUILD=$(BUILD) tests/run.sh

# Tool and bench objects are not intermediates: keep them between builds.
.SECONDARY:

interop: deps
	$(MAKE) all
	BUILD=$(BUILD) tests/interop/run.sh

bench: deps
	$(MAKE) all
	BUILD=$(BUILD) bench/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-san
