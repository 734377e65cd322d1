# xiwarp — the whole build.
#
#   make            libraries (build/lib), tools (build/bin), unit tests, fuzzers
#   make test       everything in tests/ (installs missing Debian deps first)
#   make demo       the main job: rping + perftest between two netns
#   make SAN=1      the same build with ASan+UBSan, under build/san
#
# Source discovery is by wildcard: a new .c file under user/engine or
# user/transport joins the engine; tests/unit/test_*.c becomes a unit test;
# tests/fuzz/fuzz_*.c becomes a libFuzzer harness.

SAN     ?= 0
CC      ?= cc
CLANG   ?= clang
ifeq ($(SAN),1)
BUILD   ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD   ?= build
SANFLAGS :=
endif

WARN    := -Wall -Wextra -Wshadow -Wmissing-prototypes -Werror
CFLAGS  ?= -O2 -g
CFLAGS  += $(WARN) -std=gnu11 -fPIC -D_GNU_SOURCE -pthread $(SANFLAGS)
CPPFLAGS += -Iinclude -Iuser -Iuser/engine -Iuser/transport -I$(BUILD)/gen
LDFLAGS += -pthread $(SANFLAGS)

LIB     := $(BUILD)/lib
BIN     := $(BUILD)/bin
OBJ     := $(BUILD)/obj

ENGINE_SRCS := $(sort $(wildcard user/engine/*.c user/transport/*.c user/transport/utcp/*.c))
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(OBJ)/%.o)
ENGINE_LIBS := -lbpf -lmnl -lpthread

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/unit/%)
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/tests/fuzz/%)
# user/tools/NAME_*.c are helpers of the tool NAME, not tools of their own
TOOL_SRCS := $(sort $(filter-out user/tools/xiwctl_%.c,$(wildcard user/tools/*.c)))
TOOL_BINS := $(TOOL_SRCS:user/tools/%.c=$(BIN)/%)

LIBS := $(LIB)/libxiwarp.so.1 $(LIB)/libxiwarp.a $(LIB)/libibverbs.so.1 \
        $(LIB)/librdmacm.so.1 $(LIB)/libmlx5.so.1 $(LIB)/libefa.so.1 \
        $(LIB)/libxiwsock.so

.PHONY: all bpf libs tools tests fuzz check-tools test demo bench interop clean
all: check-tools bpf libs tools tests fuzz

# ---------------------------------------------------------------- tools ---
# `make` only checks; `make test` / `make demo` install what is missing.
check-tools:
	@bash scripts/deps.sh --check >/dev/null || { bash scripts/deps.sh --check; exit 1; }

# ------------------------------------------------------------------ bpf ---
# libbpf-bootstrap chain: x.bpf.c -> x.bpf.o (BTF kept) -> x.skel.h
BPF_SRCS := $(sort $(wildcard bpf/*.bpf.c))
BPF_OBJS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
SKELS    := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/gen/%.skel.h)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -Ivmlinux -Iinclude

vmlinux/vmlinux.h: vmlinux/gen.sh
	bash vmlinux/gen.sh $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/vmlinux.h $(wildcard include/xiwarp/abi/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o
	@mkdir -p $(dir $@)
	bpftool gen skeleton $< name $* > $@.tmp && mv $@.tmp $@

# xiw_xdp includes the wire headers (<stdint.h>), whose typedefs clash
# with vmlinux.h: it uses the UAPI headers and clang's own <stdint.h>.
$(BUILD)/bpf/xiw_xdp.bpf.o: BPF_CFLAGS += -ffreestanding -I/usr/include/x86_64-linux-gnu
$(BUILD)/bpf/xiw_xdp.bpf.o: $(wildcard include/xiwarp/wire/*.h)

bpf: $(BPF_OBJS) $(SKELS)

# ---------------------------------------------------------------- engine ---
$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# engine sources may include the generated skeletons
$(ENGINE_OBJS): | $(SKELS)

$(LIB)/libxiwarp.a: $(ENGINE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# -z nodelete: the engine runs threads of its own (progress, datamover,
# ACK tracer) that outlive any dlclose(): programs that reach the verbs
# through a dlopen()ed provider (uDAPL's libdaplofa, unloaded by libdat2
# before exit; libfabric's verbs provider) must not unmap their code.
$(LIB)/libxiwarp.so.1: $(ENGINE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libxiwarp.so.1 -Wl,-z,defs -Wl,-z,nodelete -o $@ $^ $(LDFLAGS) $(ENGINE_LIBS)

# ------------------------------------------------------- verbs drop-ins ---
# Each shim links the engine by soname and finds it next to itself; kept
# mapped after dlclose() like the engine (their callbacks run on its threads).
SHIM_LDFLAGS = -shared -Wl,-z,defs -Wl,-z,nodelete -Wl,-rpath,'$$ORIGIN' $(LDFLAGS)

VERBS_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(sort $(wildcard user/verbs/ibverbs*.c)))
# rsockets (user/sockets/xrs_*.c) live in librdmacm, as in rdma-core
RDMACM_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(sort $(wildcard user/verbs/rdmacm*.c user/sockets/xrs_*.c)))

$(LIB)/libibverbs.so.1: $(VERBS_OBJS) user/verbs/libibverbs.map $(LIB)/libxiwarp.so.1
	$(CC) $(SHIM_LDFLAGS) -Wl,-soname,libibverbs.so.1 \
	  -Wl,--version-script=user/verbs/libibverbs.map -o $@ $(VERBS_OBJS) $(LIB)/libxiwarp.so.1

$(LIB)/librdmacm.so.1: $(RDMACM_OBJS) user/verbs/librdmacm.map $(LIB)/libibverbs.so.1
	$(CC) $(SHIM_LDFLAGS) -Wl,-soname,librdmacm.so.1 \
	  -Wl,--version-script=user/verbs/librdmacm.map -o $@ $(RDMACM_OBJS) \
	  $(LIB)/libibverbs.so.1 $(LIB)/libxiwarp.so.1

# LD_PRELOAD sockets layer (xiwrun --sockets): user/sockets/xs_*.c on top
# of librdmacm's rsockets; exports only the libc calls it interposes.
XS_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(sort $(wildcard user/sockets/xs_*.c)))

$(LIB)/libxiwsock.so: $(XS_OBJS) user/sockets/libxiwsock.map $(LIB)/librdmacm.so.1
	$(CC) $(SHIM_LDFLAGS) -Wl,-soname,libxiwsock.so \
	  -Wl,--version-script=user/sockets/libxiwsock.map -o $@ $(XS_OBJS) \
	  $(LIB)/librdmacm.so.1 -ldl

$(LIB)/libmlx5.so.1: $(OBJ)/user/verbs/stub_mlx5.o user/verbs/libmlx5.map
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_LDFLAGS) -Wl,-soname,libmlx5.so.1 \
	  -Wl,--version-script=user/verbs/libmlx5.map -o $@ $<

$(LIB)/libefa.so.1: $(OBJ)/user/verbs/stub_efa.o user/verbs/libefa.map
	@mkdir -p $(dir $@)
	$(CC) $(SHIM_LDFLAGS) -Wl,-soname,libefa.so.1 \
	  -Wl,--version-script=user/verbs/libefa.map -o $@ $<

libs: $(LIBS)

# ---------------------------------------------------------------- tools ---
$(BIN)/xiwrun: user/tools/xiwrun.sh
	@mkdir -p $(dir $@)
	install -m 0755 $< $@

$(BIN)/%: $(OBJ)/user/tools/%.o $(LIB)/libxiwarp.so.1
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< -Wl,-rpath,'$$ORIGIN/../lib' $(LIB)/libxiwarp.so.1 $(LDFLAGS)

# xiw_xskperf: raw AF_XDP ceiling for make bench (engine internals + libbpf)
$(BIN)/xiw_xskperf: LDFLAGS += -lbpf

# xiwctl: the XDP program's control tool; embeds the skeleton, needs no
# engine (libbpf only).
XIWCTL_OBJS := $(patsubst %.c,$(OBJ)/%.o,user/tools/xiwctl.c $(sort $(wildcard user/tools/xiwctl_*.c)))
$(XIWCTL_OBJS): | $(BUILD)/gen/xiw_xdp.skel.h
$(OBJ)/user/tools/xiwctl.o: $(BUILD)/gen/xiw_xdp.skel.h

$(BIN)/xiwctl: $(XIWCTL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lbpf

tools: $(BIN)/xiwrun $(TOOL_BINS)

# ---------------------------------------------------------------- tests ---
$(BUILD)/tests/unit/%: $(OBJ)/tests/unit/%.o $(LIB)/libxiwarp.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(LIB)/libxiwarp.a $(LDFLAGS) -lcmocka $(ENGINE_LIBS)

# rsockets unit tests: test_rs_policy takes the pure threshold code;
# test_rs_proto runs real rsockets over 127.0.0.1 through librdmacm.so.1.
$(BUILD)/tests/unit/test_rs_policy: $(OBJ)/tests/unit/test_rs_policy.o $(OBJ)/user/sockets/xrs_zc_policy.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka

$(BUILD)/tests/unit/test_rs_proto: $(OBJ)/tests/unit/test_rs_proto.o $(LIB)/librdmacm.so.1 $(LIB)/libibverbs.so.1
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< -Wl,-rpath,'$$ORIGIN/../../lib' $(LIB)/librdmacm.so.1 \
	  $(LIB)/libibverbs.so.1 $(LIB)/libxiwarp.so.1 $(LDFLAGS) -lcmocka

# Test programs that use the verbs/rdma_cm API, linked against the drop-ins
# (tests/netns/*.c): victims and peers for the network scenarios.
NETNS_SRCS := $(sort $(wildcard tests/netns/*.c))
NETNS_BINS := $(NETNS_SRCS:tests/netns/%.c=$(BUILD)/tests/netns/%)

$(BUILD)/tests/netns/%: $(OBJ)/tests/netns/%.o $(LIB)/libibverbs.so.1 $(LIB)/librdmacm.so.1
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< -Wl,-rpath,'$$ORIGIN/../../lib' $(LIB)/librdmacm.so.1 \
	  $(LIB)/libibverbs.so.1 $(LIB)/libxiwarp.so.1 $(LDFLAGS)

# BPF tests: cmocka programs that load bpf/ objects into the real kernel
BPFT_SRCS := $(sort $(wildcard tests/bpf/test_*.c))
BPFT_BINS := $(BPFT_SRCS:tests/bpf/%.c=$(BUILD)/tests/bpf/%)

$(BUILD)/tests/bpf/%: $(OBJ)/tests/bpf/%.o $(LIB)/libxiwarp.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(LIB)/libxiwarp.a $(LDFLAGS) -lcmocka $(ENGINE_LIBS)

$(OBJ)/tests/bpf/test_xdp.o: $(BUILD)/gen/xiw_xdp.skel.h

# Interop test programs (tests/interop/*.c), linked like the netns ones.
INTEROP_SRCS := $(sort $(wildcard tests/interop/*.c))
INTEROP_BINS := $(INTEROP_SRCS:tests/interop/%.c=$(BUILD)/tests/interop/%)

$(BUILD)/tests/interop/%: $(OBJ)/tests/interop/%.o $(LIB)/libibverbs.so.1 $(LIB)/librdmacm.so.1
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< -Wl,-rpath,'$$ORIGIN/../../lib' $(LIB)/librdmacm.so.1 \
	  $(LIB)/libibverbs.so.1 $(LIB)/libxiwarp.so.1 $(LDFLAGS)

tests: $(UNIT_BINS) $(NETNS_BINS) $(BPFT_BINS) $(INTEROP_BINS)

# libFuzzer harnesses: clang, the engine compiled again with coverage.
FUZZ_CFLAGS := -O1 -g -std=gnu11 -D_GNU_SOURCE -pthread $(WARN) \
               -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer
FUZZ_OBJ    := $(BUILD)/fuzz-obj
FUZZ_ENGINE := $(ENGINE_SRCS:%.c=$(FUZZ_OBJ)/%.o)
$(FUZZ_ENGINE): | $(SKELS)

$(FUZZ_OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(CPPFLAGS) $(filter-out -fsanitize=fuzzer%,$(FUZZ_CFLAGS)) \
	  -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(BUILD)/tests/fuzz/%: $(FUZZ_OBJ)/tests/fuzz/%.o $(FUZZ_ENGINE)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -o $@ $^ $(ENGINE_LIBS)

# the rsockets message/private-data parser (user/sockets/xrs_wire.c)
$(BUILD)/tests/fuzz/fuzz_rsocket: $(FUZZ_OBJ)/user/sockets/xrs_wire.o

fuzz: $(FUZZ_BINS)

# ------------------------------------------------------------ top jobs ---
test:
	bash scripts/deps.sh
	$(MAKE) all
	$(MAKE) SAN=1 libs tools tests
	bash tests/run.sh

demo:
	bash scripts/deps.sh
	$(MAKE) libs tools
	bash scripts/demo.sh

bench:
	bash scripts/deps.sh
	$(MAKE) libs tools
	bash scripts/bench.sh; rc=$$?; bash scripts/bench_sockets.sh || rc=1; exit $$rc

# siw interop tier: xiwarp against the kernel's siw in a qemu guest
# (../shared/siw-peer; tests/interop/siw_interop.sh --help)
interop:
	bash scripts/deps.sh
	$(MAKE) libs tools tests
	bash tests/interop/siw_interop.sh

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
