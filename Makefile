# pacer - top-level Makefile. Everything builds into build/.
#
#   make            build what this machine can build (says what it found)
#   make deps       install the Debian packages pacer needs (only the missing ones)
#   make test       deps + build + every test; ends with "N passed, N failed, N skipped"
#   make test-multihost  the network-namespace multi-host test alone (root)
#   make test-slurm the Slurm launcher against a real slurmctld + 2 slurmd (root)
#   make test-stress     the timing-dependent tests 3 times each under a load of two busy processes
#   make test-kernels    the numeric tests under each other OpenBLAS kernel set the CPU runs
#   make test-slow       the tests make test leaves out for their length (.ci/run runs both)
#   make test-elastic  a 3-host namespace job that loses a host and shrinks (root)
#   make check-asan unit tests (and the hardening scripts) under AddressSanitizer +
#                   UndefinedBehaviorSanitizer
#   make demo       the main job, its dashboard served until Ctrl-C (builds only what it runs)
#   make bench      benchmarks (installs python3-torch for the PyTorch baseline)
#   make check-layers  a wrong-way include between rooms must not compile (docs/ARCHITECTURE.md)
#   make format     clang-format the tree (.clang-format); make format-check only checks
#   make docs-ops   rewrite docs/JOB_SPEC.md's table of the ONNX operators that import, from
#                   the operator table (pacer-worker --list-ops; tests/integration/docs_ops.sh)
#   make fuzz       libFuzzer harnesses under ASan + UBSan, a fixed number of runs each
#                   (fuzz/fuzz.mk; FUZZ_RUNS=10000 for a quick smoke run)
#
# CI=true turns warnings into errors. SANITIZE=address,undefined builds a sanitized tree
# into build-san/ (what check-asan uses).

BUILD    ?= build
CC       ?= gcc
OPT      ?= -O3
CSTD      = -std=c11
WARN      = -Wall -Wextra -Wshadow -Wno-unused-parameter
ifeq ($(CI),true)
WARN     += -Werror
endif

ifneq ($(SANITIZE),)
BUILD    := build-san
OPT       = -O1 -fno-omit-frame-pointer
SANFLAGS  = -fsanitize=$(SANITIZE) -fno-sanitize-recover=undefined
endif

# ---- what is on this machine ------------------------------------------------------
have = $(shell pkg-config --exists $(1) 2>/dev/null && echo yes || echo no)
HAVE_OPENBLAS := $(call have,openblas)
HAVE_MPI      := $(shell command -v mpicc >/dev/null 2>&1 && echo yes || echo no)
HAVE_CURL     := $(call have,libcurl)
CUDA_HOME     ?= /usr/local/cuda
NVCC          := $(shell command -v nvcc 2>/dev/null || ( test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc ))
HAVE_NVCC     := $(if $(NVCC),yes,no)
HAVE_CUDNN    := $(shell test -f $(CUDA_HOME)/include/cudnn.h -o -f /usr/include/cudnn.h && echo yes || echo no)
ifeq ($(HAVE_NVCC)$(HAVE_CUDNN),yesyes)
WITH_CUDA     ?= yes
else
WITH_CUDA     ?= no
endif

BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null)
MPI_CFLAGS  := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS    := $(shell mpicc --showme:link 2>/dev/null)
# libcurl, where there is one, lets the coordinator call webhooks (coordinator/webhook.c;
# without it a subscription is refused, saying so).
CURL_LIBS   := $(if $(filter yes,$(HAVE_CURL)),-lcurl)
DEP_LIBS    := -ljansson -lz -lzip -lhiredis -lpthread -lm -ldl $(CURL_LIBS)
# The worker's image decoders (worker/image.c); the coordinator reads .npz headers only.
IMG_LIBS    := -lpng16 -ljpeg

# ---- rooms ---------------------------------------------------------------------------
# Each room compiles with only the rooms it may use on its include path, so an include
# that points the wrong way (kernels -> model, common -> worker, coordinator -> http, ...)
# does not compile. Arrows point down (docs/ARCHITECTURE.md draws them):
#   worker -> model -> kernels;  daemon -> http -> coordinator -> common;  worker -> common
#   sim -> worker (the simulated cluster's tools and the worker's SMPI hooks, sim/sim.mk)
#   generate -> worker (pacer-generate: a job's checkpoint, as a rank reads it)
# `make check-layers` (run by tests/integration/include_layers.sh) proves it.
INC_common      = -Icommon
INC_kernels     = -Ikernels/cpu
INC_kernels_cuda = -Ikernels/cuda -Ikernels/cpu
# kernels/ref: the double-precision reference kernels, linked into the unit tests only
INC_kernels_ref = -Ikernels/ref -Ikernels/cpu
INC_model       = -Imodel -Ikernels/cpu -Icommon -I$(BUILD)/gen   # gen: onnx.pb-c.h (below)
INC_model_cuda  = -Imodel -Ikernels/cuda -Ikernels/cpu -Icommon
INC_worker      = -Iworker -Imodel -Ikernels/cpu -Icommon
INC_coordinator = -Icoordinator -Icommon
INC_http        = -Ihttp -Icoordinator -Icommon
INC_daemon      = -Ihttp -Icoordinator -Icommon
INC_cli         = -Icli -Icommon
INC_sim         = -Isim -Iworker -Imodel -Ikernels/cpu -Icommon
INC_generate    = -Igenerate -Iworker -Imodel -Ikernels/cpu -Icommon
INC_tests       = -Itests/unit -Ikernels/ref -Icli -Ihttp -Icoordinator -Isim -Iworker -Imodel -Ikernels/cpu -Icommon
INC_tools       = $(INC_worker)
INC_bench       = $(INC_worker)
INC_bench_coord = -Icoordinator -Iworker -Icommon   # bench/coord_tick.c: the tick and worker sinks
# Outside libraries, by room.
EXT_kernels     = $(BLAS_CFLAGS)
EXT_worker      = $(MPI_CFLAGS) $(BLAS_CFLAGS)

$(BUILD)/obj/common/%.o:      INCLUDES = $(INC_common)
$(BUILD)/obj/kernels/cpu/%.o: INCLUDES = $(INC_kernels) $(EXT_kernels)
$(BUILD)/obj/kernels/ref/%.o: INCLUDES = $(INC_kernels_ref)
$(BUILD)/obj/model/%.o:       INCLUDES = $(INC_model)
$(BUILD)/obj/worker/%.o:      INCLUDES = $(INC_worker) $(EXT_worker)
$(BUILD)/obj/coordinator/%.o: INCLUDES = $(INC_coordinator)
$(BUILD)/obj/coordinator/webhook.o: CPPFLAGS += $(if $(CURL_LIBS),-DPACER_HAVE_CURL)
$(BUILD)/obj/http/%.o:        INCLUDES = $(INC_http)
$(BUILD)/obj/daemon/%.o:      INCLUDES = $(INC_daemon)
$(BUILD)/obj/cli/%.o:         INCLUDES = $(INC_cli)
$(BUILD)/obj/sim/%.o:         INCLUDES = $(INC_sim)
$(BUILD)/obj/generate/%.o:    INCLUDES = $(INC_generate) $(EXT_worker)
$(BUILD)/obj/tests/unit/%.o:  INCLUDES = $(INC_tests) $(EXT_worker)
$(BUILD)/obj/tests/tools/%.o: INCLUDES = $(INC_tools) $(EXT_worker)
$(BUILD)/obj/bench/%.o:       INCLUDES = $(INC_bench) $(EXT_worker)
$(BUILD)/obj/bench/coord_tick.o: INCLUDES = $(INC_bench_coord)
$(BUILD)/obj/kernels/cuda/%.cu.o: INCLUDES = $(INC_kernels_cuda)
$(BUILD)/obj/model/%.cu.o:    INCLUDES = $(INC_model_cuda)

CPPFLAGS += -D_GNU_SOURCE $(INCLUDES)
CFLAGS   += $(CSTD) $(OPT) -g $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS  += $(SANFLAGS)

# The CUDA backend is a shared object, $(BUILD)/libpacer_cuda.so: kernels/cuda and
# model/*.cu (model_cuda.cu, cuda_probe.cu), linked with cudart, cuDNN and cuBLAS. pacer-worker does not link it:
# model/backend_cuda.c loads it with dlopen when a rank asks for a GPU (backend_cuda_abi.h),
# so a CPU run maps no CUDA library and the binary runs where CUDA is absent. -Bsymbolic:
# the library's calls to its own functions never go to a program's function of the same
# name. The parity tests and gpu_bench link it (and define PACER_WITH_CUDA to compile
# their device code); nothing else depends on WITH_CUDA.
#
# GPU code: machine code (SASS) for every architecture in CUDA_ARCHS - A100 80, A10 and
# RTX 30 86, L4 and RTX 40 89, H100 and H200 90 - and PTX for CUDA_PTX, which a newer GPU
# (Blackwell) compiles when the library loads. A GPU that is neither is refused by the
# device probe ("no kernel image for this GPU"). One GPU type builds twice as fast:
# make CUDA_ARCHS=90 (docs/PERFORMANCE.md has the build times). Changing them rebuilds the
# CUDA objects ($(BUILD)/nvflags).
CUDA_ARCHS ?= 80 86 89 90
CUDA_PTX   ?= 90
ifeq ($(WITH_CUDA),yes)
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++ -lm
comma := ,
CUDA_GENCODE = $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a)$(comma)code=sm_$(a)) \
               $(if $(CUDA_PTX),-gencode arch=compute_$(CUDA_PTX)$(comma)code=compute_$(CUDA_PTX))
CUDA_CODE = $(strip $(foreach a,$(CUDA_ARCHS),sm_$(a)) $(if $(CUDA_PTX),+ PTX compute_$(CUDA_PTX)))
NVFLAGS  ?= -O3 -std=c++17 $(CUDA_GENCODE) -Xcompiler -fPIC -I$(CUDA_HOME)/include -DPACER_WITH_CUDA \
            '-DPACER_CUDA_ARCHS="$(CUDA_CODE)"'
CUDA_SO   = $(BUILD)/libpacer_cuda.so
endif

# ---- ONNX (model/onnx/) --------------------------------------------------------------
# The C code of ONNX's protobuf messages is generated at build time with protoc-c from the
# onnx.proto that Debian's python3-onnx installs (the .proto is not copied into the
# repository), into $(BUILD)/gen, and archived with model/. -fPIC: the simulator's worker
# (sim/sim.mk) is a shared object and links the same object. The generated code is not
# ours to warn about (-w). Packages: protobuf-c-compiler, libprotobuf-c-dev, python3-onnx
# (deploy/install-deps.sh, build group).
ONNX_PROTO ?= /usr/lib/python3/dist-packages/onnx/onnx.proto
PROTOC_C   ?= protoc-c
ONNX_PB    := $(BUILD)/gen/onnx.pb-c
ONNX_OBJ   := $(BUILD)/obj/gen/onnx.pb-c.o
ONNX_LIBS  := -lprotobuf-c

# ---- sources ------------------------------------------------------------------------
COMMON_SRC  := $(wildcard common/*.c)
KERNELS_SRC := $(wildcard kernels/cpu/*.c)
REF_SRC     := $(wildcard kernels/ref/*.c)
MODEL_SRC   := $(wildcard model/*.c model/onnx/*.c)
WORKER_SRC  := $(filter-out worker/main.c,$(wildcard worker/*.c))
COORD_SRC   := $(wildcard coordinator/*.c)
HTTP_SRC    := $(wildcard http/*.c)
CUDA_SRC    := $(wildcard kernels/cuda/*.cu) $(wildcard model/*.cu)
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
BENCH_SRC   := $(wildcard bench/*.c)
TOOL_SRC    := $(wildcard tests/tools/*.c)
# The command-line client: its pure parts (arguments, tables, progress lines, the SSE
# parser) are an archive the unit tests link; the rest needs libcurl.
CLI_PURE    := cli/cliargs.c cli/format.c cli/progress.c cli/sseparse.c
CLI_SRC     := $(filter-out $(CLI_PURE),$(wildcard cli/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIBCOMMON  := $(BUILD)/libpacer_common.a
LIBKERNELS := $(BUILD)/libpacer_kernels.a
LIBREF     := $(BUILD)/libpacer_ref.a
LIBMODEL   := $(BUILD)/libpacer_model.a
LIBWORKER  := $(BUILD)/libpacer_worker.a
LIBCOORD   := $(BUILD)/libpacer_coord.a
LIBHTTP    := $(BUILD)/libpacer_http.a
LIBCLI     := $(BUILD)/libpacer_cli.a
CUDA_OBJ   := $(if $(filter yes,$(WITH_CUDA)),$(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CUDA_SRC)))

WORKER_LIBS = $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON) $(BLAS_LIBS) $(MPI_LIBS) $(IMG_LIBS) $(ONNX_LIBS) $(DEP_LIBS)
COORD_LIBS  = $(LIBHTTP) $(LIBCOORD) $(LIBCOMMON) -lmicrohttpd $(DEP_LIBS)

UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
TOOL_BIN  := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))
BINS      := $(BUILD)/pacer-worker $(BUILD)/pacer-generate $(CUDA_SO) $(if $(wildcard daemon/main.c),$(BUILD)/pacer-coordinator) \
             $(if $(filter yes,$(HAVE_CURL)),$(BUILD)/pacer)
FAKE_CUDA := $(BUILD)/tests/libpacer_fakecuda.so $(BUILD)/tests/fakecuda/libcuda.so.1 \
             $(BUILD)/tests/fakenvml/libnvidia-ml.so.1
# LD_PRELOAD doubles that widen a library's race window (tests/shims/)
SHIMS     := $(patsubst tests/shims/%.c,$(BUILD)/tests/shims/%.so,$(wildcard tests/shims/*.c))

.PHONY: all test-bins found deps test test-kernels test-slow test-stress check-asan check-layers demo demo-deps bench clean format format-check docs-ops fuzz FORCE
all: test-bins $(BENCH_BIN)
# What the tests run: all but bench/'s programs, which no test runs (make test leaves them to
# test-slow's build, which .ci/run runs too, so that they still compile in CI).
test-bins: found $(BINS) $(UNIT_BIN) $(TOOL_BIN) $(FAKE_CUDA) $(SHIMS)

found:
	@echo "pacer build: OpenBLAS $(HAVE_OPENBLAS), Open MPI $(HAVE_MPI), nvcc $(HAVE_NVCC), cuDNN $(HAVE_CUDNN) -> CUDA backend $(WITH_CUDA)$(if $(CUDA_SO), ($(CUDA_CODE)))$(if $(SANITIZE), [sanitize=$(SANITIZE)]); libcurl $(HAVE_CURL)$(if $(filter no,$(HAVE_CURL)), (no build/pacer: make deps))"

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# -MMD -MP as for C: a changed header (ops.h, ops_cuda.h, model.h) remakes the CUDA objects
# that include it (the .d files are read at the end of this Makefile).
$(BUILD)/obj/%.cu.o: %.cu $(BUILD)/nvflags
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) $(INCLUDES) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

# Remade (and with it every CUDA object) only when the nvcc command line changes.
$(BUILD)/nvflags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(NVCC) $(NVFLAGS)' | cmp -s - $@ || echo '$(NVCC) $(NVFLAGS)' > $@

# An archive is remade when its list of members changes (a file added, moved or removed),
# not only when a member is newer: $(BUILD)/NAME.members changes only then.
define archive
$(1): $(call obj,$(2)) $(1:.a=.members)
$(1:.a=.members): FORCE
	@mkdir -p $$(dir $$@)
	@echo '$(2)' | cmp -s - $$@ || echo '$(2)' > $$@
endef
$(eval $(call archive,$(LIBCOMMON),$(COMMON_SRC)))
$(eval $(call archive,$(LIBKERNELS),$(KERNELS_SRC)))
$(eval $(call archive,$(LIBREF),$(REF_SRC)))
$(eval $(call archive,$(LIBMODEL),$(MODEL_SRC)))
$(LIBMODEL): $(ONNX_OBJ)
$(eval $(call archive,$(LIBWORKER),$(WORKER_SRC)))
$(eval $(call archive,$(LIBCOORD),$(COORD_SRC)))
$(eval $(call archive,$(LIBHTTP),$(HTTP_SRC)))
$(eval $(call archive,$(LIBCLI),$(CLI_PURE)))
$(BUILD)/%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)
FORCE:

$(ONNX_PB).c: $(ONNX_PROTO)
	@mkdir -p $(dir $@)
	@test -f $(ONNX_PROTO) || { echo "$(ONNX_PROTO) not found: install python3-onnx (make deps)" >&2; exit 1; }
	$(PROTOC_C) --proto_path=$(dir $(ONNX_PROTO)) --c_out=$(dir $@) $(ONNX_PROTO)
$(ONNX_PB).h: $(ONNX_PB).c
$(ONNX_OBJ): $(ONNX_PB).c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE $(CSTD) $(OPT) -g -w -fPIC $(SANFLAGS) -I$(BUILD)/gen -c $< -o $@
$(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard model/onnx/*.c)) $(BUILD)/obj/model/onnx_export.o $(BUILD)/obj/model/st_export.o: $(ONNX_PB).h
# test_onnx_import checks the importer's shape arithmetic (model/onnx/fold.h), whose
# header reads the generated protobuf types
$(BUILD)/obj/tests/unit/test_onnx_import.o: $(ONNX_PB).h
$(BUILD)/obj/tests/unit/test_onnx_import.o: INCLUDES += -I$(BUILD)/gen

# ---- the built-in models' catalog figures (tools/catalog_rows.c) ------------------------
# common/catalog.c includes $(CATALOG_GEN), which tools/catalog_rows writes from model/
# (model_create and model_describe of each built-in row), so a row cannot drift from its
# network and the coordinator, which does not link model/, still knows the figures
# (docs/ARCHITECTURE.md "The catalog"). The tool itself links a bootstrap copy of the
# catalog (-DCATALOG_BOOTSTRAP: the rows without figures) in place of catalog.o.
CATALOG_GEN  := $(BUILD)/gen/catalog_models.h
CATALOG_TOOL := $(BUILD)/buildtools/catalog_rows
CATALOG_BOOT := $(BUILD)/obj/tools/catalog_boot.o
$(BUILD)/obj/tools/%.o: INCLUDES = $(INC_model)
$(CATALOG_BOOT): common/catalog.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DCATALOG_BOOTSTRAP -c $< -o $@
$(CATALOG_TOOL): $(call obj,tools/catalog_rows.c $(filter-out common/catalog.c common/param_names.c,$(COMMON_SRC))) \
                 $(CATALOG_BOOT) \
                 $(LIBMODEL) $(LIBKERNELS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(filter %.o,$^) -o $@ $(LIBMODEL) $(LIBKERNELS) $(BLAS_LIBS) $(ONNX_LIBS) $(DEP_LIBS)
$(CATALOG_GEN): $(CATALOG_TOOL)
	@mkdir -p $(dir $@)
	$(CATALOG_TOOL) > $@.tmp
	@mv $@.tmp $@
# common/param_names.c includes it too (the built-in rows' parameter names); the tool
# links neither.
$(BUILD)/obj/common/catalog.o $(BUILD)/fuzz/obj/common/catalog.o: $(CATALOG_GEN)
$(BUILD)/obj/common/param_names.o $(BUILD)/fuzz/obj/common/param_names.o: $(CATALOG_GEN)
$(BUILD)/obj/common/catalog.o $(BUILD)/obj/common/param_names.o: INCLUDES = $(INC_common) -I$(BUILD)/gen

# The backend is built with the worker (order-only: the worker does not link it).
$(BUILD)/pacer-worker: $(call obj,worker/main.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON) | $(CUDA_SO)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

# Generation from a job's checkpoint, a process of its own (the coordinator spawns it):
# generate/, a room above the worker's (it reads checkpoints and uploaded models as a rank does).
$(BUILD)/pacer-generate: $(call obj,generate/main.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

$(BUILD)/libpacer_cuda.so: $(CUDA_OBJ)
	$(CC) -shared -Wl,-soname,libpacer_cuda.so -Wl,-Bsymbolic -Wl,-z,defs $^ -o $@ $(CUDA_LIBS)

# The two objects compiled differently with and without CUDA are remade when WITH_CUDA
# changes (a CPU-only test_cuda_parity.o left behind by an earlier build would otherwise
# be linked into a CUDA build and skip every parity test).
$(BUILD)/obj/tests/unit/test_cuda_parity.o $(BUILD)/obj/bench/gpu_bench.o: $(BUILD)/cudaflags
$(BUILD)/cudaflags: FORCE
	@mkdir -p $(dir $@)
	@echo 'WITH_CUDA=$(WITH_CUDA)' | cmp -s - $@ || echo 'WITH_CUDA=$(WITH_CUDA)' > $@

ifeq ($(WITH_CUDA),yes)
CUDA_USERS := $(BUILD)/tests/test_cuda_parity $(BUILD)/bench/gpu_bench
$(CUDA_USERS): $(CUDA_SO)
$(CUDA_USERS): LINK_CUDA = -L$(BUILD) -Wl,--no-as-needed -lpacer_cuda -Wl,--as-needed -Wl,-rpath,'$$ORIGIN/..'
$(BUILD)/obj/tests/unit/test_cuda_parity.o $(BUILD)/obj/bench/gpu_bench.o: CPPFLAGS += -DPACER_WITH_CUDA
# the parity test names CUDA's and cuDNN's error codes (classification tests)
$(BUILD)/obj/tests/unit/test_cuda_parity.o: CPPFLAGS += -I$(CUDA_HOME)/include
endif

# Test doubles of the GPU path, built with or without CUDA (tests/fakecuda/): a backend with
# the ABI of libpacer_cuda.so whose "device" is host memory computed by the CPU reference,
# and a libcuda.so.1 whose answers come from the environment. With them the integration
# tests run the worker's GPU path and the device probe on a machine without a GPU.
FAKE_BACKEND_SRC = tests/fakecuda/backend.c model/model.c model/plan.c model/shape.c model/op_table.c $(KERNELS_SRC) common/rng.c common/catalog.c \
                   common/dataroot.c common/errmsg.c
# Its objects are position-independent copies, one per source (built on every core: as one
# compiler command the 30-odd files took about 30 s of one core at the build's end).
FAKE_BACKEND_OBJ = $(patsubst %.c,$(BUILD)/obj/pic/%.o,$(FAKE_BACKEND_SRC))
$(BUILD)/obj/pic/%.o: %.c $(CATALOG_GEN)
	@mkdir -p $(dir $@)
	$(CC) -fPIC -D_GNU_SOURCE $(CSTD) $(OPT) -g $(WARN) -Imodel -Ikernels/cpu -Icommon -I$(BUILD)/gen $(BLAS_CFLAGS) \
	    -MMD -MP -c $< -o $@
$(BUILD)/tests/libpacer_fakecuda.so: $(FAKE_BACKEND_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared $(FAKE_BACKEND_OBJ) -o $@ -Wl,-Bsymbolic -Wl,-z,defs $(BLAS_LIBS) -lm
$(BUILD)/tests/fakecuda/libcuda.so.1: tests/fakecuda/libcuda.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC $(CSTD) $(OPT) $(WARN) -Wl,-soname,libcuda.so.1 $< -o $@
$(BUILD)/tests/fakenvml/libnvidia-ml.so.1: tests/fakecuda/libnvidia-ml.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC $(CSTD) $(OPT) $(WARN) -Wl,-soname,libnvidia-ml.so.1 $< -o $@
$(BUILD)/tests/shims/%.so: tests/shims/%.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC $(CSTD) $(OPT) $(WARN) $< -o $@ -ldl

$(BUILD)/pacer-coordinator: $(call obj,daemon/main.c) $(LIBHTTP) $(LIBCOORD) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $< -o $@ $(COORD_LIBS)

$(BUILD)/pacer: $(call obj,$(CLI_SRC)) $(LIBCLI) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $(call obj,$(CLI_SRC)) -o $@ $(LIBCLI) $(LIBCOMMON) -lcurl -ljansson -lm

# Unit tests link everything; a test that needs the coordinator pulls it from its archive.
$(BUILD)/tests/%: $(call obj,tests/unit/%.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBREF) $(LIBCOMMON) $(LIBHTTP) $(LIBCOORD) $(LIBCLI)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(LIBHTTP) $(LIBCOORD) -lmicrohttpd $(LIBCLI) $(LIBREF) $(WORKER_LIBS) $(LINK_CUDA) -lcmocka

# test_op_table runs each operator's CUDA case on the stand-in device
$(BUILD)/tests/test_op_table: | $(BUILD)/tests/libpacer_fakecuda.so

$(BUILD)/tools/%: $(call obj,tests/tools/%.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

$(BUILD)/bench/%: $(call obj,bench/%.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS) $(LINK_CUDA) $(LINK_DNNL)

# oneDNN (libdnnl-dev, make bench installs it): bench/gemm_bf16 times its bf16 matmul, the
# baseline of PyTorch's autocast on the CPU, beside pacer's; without it, pacer's alone.
HAVE_DNNL := $(shell test -f /usr/include/oneapi/dnnl/dnnl.h && echo yes || echo no)
$(BUILD)/obj/bench/gemm_bf16.o: $(BUILD)/dnnlflags
$(BUILD)/dnnlflags: FORCE
	@mkdir -p $(dir $@)
	@echo 'HAVE_DNNL=$(HAVE_DNNL)' | cmp -s - $@ || echo 'HAVE_DNNL=$(HAVE_DNNL)' > $@
ifeq ($(HAVE_DNNL),yes)
$(BUILD)/obj/bench/gemm_bf16.o: CPPFLAGS += -DPACER_WITH_DNNL
$(BUILD)/bench/gemm_bf16: LINK_DNNL = -ldnnl
endif

# ---- layering: a wrong-way include must not compile ---------------------------------
# ROOM:HEADER:HOME - HEADER (of room HOME) must compile with HOME's include path and must
# not be found with ROOM's. LAYER_ALLOWED: ROOM:HEADER pairs that must compile.
LAYER_REFUSED = kernels:model.h:model kernels:rng.h:common kernels_cuda:model.h:model \
                kernels_ref:model.h:model kernels:ref.h:kernels_ref kernels_cuda:ref.h:kernels_ref \
                model:ref.h:kernels_ref \
                model:worker.h:worker model:metrics.h:worker \
                common:ops.h:kernels common:model.h:model common:worker.h:worker \
                common:jobstore.h:coordinator common:server.h:http \
                coordinator:worker.h:worker coordinator:model.h:model coordinator:server.h:http \
                coordinator:redis_report.h:worker http:redis_report.h:worker http:model.h:model \
                worker:coordinator.h:coordinator worker:jobstore.h:coordinator worker:server.h:http \
                worker:launcher.h:coordinator \
                worker:platform.h:sim worker:cost.h:sim common:platform.h:sim model:sim.h:worker \
                coordinator:platform.h:sim sim:coordinator.h:coordinator sim:server.h:http \
                generate:coordinator.h:coordinator generate:platform.h:sim
LAYER_ALLOWED = kernels:ops.h kernels_ref:ops.h tests:ref.h model:ops.h model:rng.h worker:model.h worker:ops.h worker:spec.h \
                worker:redis_url.h worker:hostname.h coordinator:spec.h coordinator:redis_url.h \
                coordinator:hostname.h http:coordinator.h http:clog.h daemon:server.h daemon:coordinator.h \
                worker:sim.h sim:sim.h sim:redis_report.h sim:model.h sim:spec.h \
                generate:checkpoint.h generate:generate.h generate:tokenizer.h
layer_cc = printf '\043include "%s"\n' $(2) | $(CC) -std=c11 -D_GNU_SOURCE -x c -fsyntax-only $(INC_$(1)) $(EXT_$(1)) - 2>&1
define layer_refused
if ! $(call layer_cc,$(3),$(2)) >/dev/null; then echo "check-layers: $(2) does not compile in its own room, $(3)"; fail=1; \
elif $(call layer_cc,$(1),$(2)) | grep -q '$(2): No such file'; then n=$$((n + 1)); \
else echo "check-layers: $(1) can include $(2) (of $(3)): an arrow pointing the wrong way"; fail=1; fi;
endef
define layer_allowed
if $(call layer_cc,$(1),$(2)) >/dev/null; then m=$$((m + 1)); else echo "check-layers: $(1) cannot include $(2)"; fail=1; fi;
endef
w = $(word $(1),$(subst :, ,$(2)))
check-layers:
	@fail=0; n=0; m=0; \
	$(foreach p,$(LAYER_REFUSED),$(call layer_refused,$(call w,1,$(p)),$(call w,2,$(p)),$(call w,3,$(p)))) \
	$(foreach p,$(LAYER_ALLOWED),$(call layer_allowed,$(call w,1,$(p)),$(call w,2,$(p)))) \
	echo "check-layers: $$n wrong-way includes refused, $$m allowed ones compile"; test $$fail = 0

deps:
	@sh deploy/install-deps.sh build test

# make test builds on every core unless the caller chose -j itself: a serial build is a
# sizeable part of CI's 15 minutes on 2 cores.
TEST_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
# The test targets compile the CUDA code for one architecture and CUDA_PTX's PTX, not all
# of CUDA_ARCHS: the GPU of this machine where nvidia-smi names one (its tests then run
# on its own machine code), else 90. The .cu files have no branch on the architecture, so
# one compiles what four would (the four took 60.8 CPU s of the build, one 29.4:
# docs/PERFORMANCE.md); a later plain make builds all four again ($(BUILD)/nvflags).
TEST_CUDA_ARCHS ?= $(or $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | \
                     grep -E '^[0-9]+\.[0-9]+$$' | head -1 | tr -d .),90)
TEST_BUILD = $(MAKE) --no-print-directory CUDA_ARCHS="$(TEST_CUDA_ARCHS)"
test: deps
	@$(TEST_BUILD) $(TEST_JOBS) test-bins
	@sh tests/run.sh $(BUILD)

# test-full: the accuracy claims that make test checks on part of the data set, on all of
# it (async_accuracy: issue 4's 0.85 in 2 epochs; PACER_TEST_FULL=1, docs/TESTING.md).
test-full: deps
	@$(TEST_BUILD) all
	@PACER_TEST_FULL=1 sh tests/run.sh $(BUILD) only async_accuracy

# test-slow: the scripts make test leaves out for their length (tests/run.sh's SLOW_SUITE:
# full-size imports, accuracy after full epochs); .ci/run runs it after make test.
test-slow: deps
	@$(TEST_BUILD) all
	@sh tests/run.sh $(BUILD) slow

# test-kernels: the numeric tests again under each OpenBLAS kernel set the CPU can run
# besides the one OpenBLAS picks (tests/kernels.sh; .ci/run runs it after make test).
test-kernels: deps
	@$(TEST_BUILD) all
	@sh tests/kernels.sh $(BUILD)

test-stress: deps
	@$(TEST_BUILD) all
	@sh tests/stress.sh $(BUILD)

# check-asan: every unit test (leaks checked too), then the three hardening scripts
# against the sanitized coordinator and workers, which drive what only a real daemon
# reaches (the Host check, secrets, admission by slots and memory, the SSE caps, the
# header deadline, retention). Their leak check is off: Open MPI's plugins leak at
# MPI_Finalize (frames in unloaded modules, which no suppression can name).
CHECK_ASAN_INTEG = hardening_admission hardening_secrets hardening_memory
check-asan: deps
	@$(MAKE) --no-print-directory SANITIZE=address,undefined all
	@sh tests/run.sh build-san unit
	@ASAN_OPTIONS=detect_leaks=0 sh tests/run.sh build-san only $(CHECK_ASAN_INTEG)

# demo: only what the demo runs (issue 42): the build group of packages (make deps also
# installs the test group and its npm tools), the coordinator, the worker with its CUDA
# backend where one is built (a GPU rank loads it), the dashboard's files; no unit test,
# benchmark or tool (demo-deps). deploy/demo.sh then serves the dashboard until Ctrl-C or
# SIGTERM, after which it exits 0: stopping the demo is no error for make to report
# (tests/integration/demo_serves.sh runs `make -o demo-deps demo` on a built tree).
DEMO_BINS = $(BUILD)/pacer-coordinator $(BUILD)/pacer-worker $(CUDA_SO)
demo-deps:
	@sh deploy/install-deps.sh build
	@$(MAKE) --no-print-directory found $(DEMO_BINS) static
demo: demo-deps
	@sh deploy/demo.sh

bench: deps
	@sh deploy/install-deps.sh bench
	@$(MAKE) --no-print-directory all
	@sh bench/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')
format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cu') && echo "format: clean"

# The table in docs/JOB_SPEC.md ("What imports") is the worker's --list-ops, which reads the
# operator table: regenerated here, compared by tests/integration/docs_ops.sh.
docs-ops: $(BUILD)/pacer-worker
	@sh tools/docs_ops.sh $(BUILD)

clean:
	rm -rf build build-san

include deploy/deploy.mk
include http/http.mk
include fuzz/fuzz.mk
include sim/sim.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
