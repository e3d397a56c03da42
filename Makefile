# pacer - top-level Makefile. Everything builds into build/.
#
#   make            build what this machine can build (says what it found)
#   make deps       install the Debian packages pacer needs (only the missing ones)
#   make test       deps + build + every test; ends with "N passed, N failed, N skipped"
#   make test-multihost  the network-namespace multi-host test alone (root)
#   make check-asan unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make demo       the main job
#   make bench      benchmarks (installs python3-torch for the PyTorch baseline)
#   make check-layers  a wrong-way include between rooms must not compile (docs/ARCHITECTURE.md)
#   make format     clang-format the tree (.clang-format); make format-check only checks
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
DEP_LIBS    := -ljansson -lz -lhiredis -lpthread -lm -ldl

# ---- rooms ---------------------------------------------------------------------------
# Each room compiles with only the rooms it may use on its include path, so an include
# that points the wrong way (kernels -> model, common -> worker, coordinator -> http, ...)
# does not compile. Arrows point down (docs/ARCHITECTURE.md draws them):
#   worker -> model -> kernels;  daemon -> http -> coordinator -> common;  worker -> common
# `make check-layers` (run by tests/integration/include_layers.sh) proves it.
INC_common      = -Icommon
INC_kernels     = -Ikernels/cpu
INC_kernels_cuda = -Ikernels/cuda -Ikernels/cpu
INC_model       = -Imodel -Ikernels/cpu -Icommon
INC_model_cuda  = -Imodel -Ikernels/cuda -Ikernels/cpu -Icommon
INC_worker      = -Iworker -Imodel -Ikernels/cpu -Icommon
INC_coordinator = -Icoordinator -Icommon
INC_http        = -Ihttp -Icoordinator -Icommon
INC_daemon      = -Ihttp -Icoordinator -Icommon
INC_tests       = -Itests/unit -Ihttp -Icoordinator -Iworker -Imodel -Ikernels/cpu -Icommon
INC_tools       = $(INC_worker)
INC_bench       = $(INC_worker)
INC_bench_coord = -Icoordinator -Iworker -Icommon   # bench/coord_tick.c: the tick and worker sinks
# Outside libraries, by room.
EXT_kernels     = $(BLAS_CFLAGS)
EXT_worker      = $(MPI_CFLAGS) $(BLAS_CFLAGS)

$(BUILD)/obj/common/%.o:      INCLUDES = $(INC_common)
$(BUILD)/obj/kernels/cpu/%.o: INCLUDES = $(INC_kernels) $(EXT_kernels)
$(BUILD)/obj/model/%.o:       INCLUDES = $(INC_model)
$(BUILD)/obj/worker/%.o:      INCLUDES = $(INC_worker) $(EXT_worker)
$(BUILD)/obj/coordinator/%.o: INCLUDES = $(INC_coordinator)
$(BUILD)/obj/http/%.o:        INCLUDES = $(INC_http)
$(BUILD)/obj/daemon/%.o:      INCLUDES = $(INC_daemon)
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
# model/model_cuda.cu, linked with cudart, cuDNN and cuBLAS. pacer-worker does not link it:
# model/backend_cuda.c loads it with dlopen when a rank asks for a GPU (backend_cuda_abi.h),
# so a CPU run maps no CUDA library and the binary runs where CUDA is absent. -Bsymbolic:
# the library's calls to its own functions never go to a program's function of the same
# name. The parity tests and gpu_bench link it (and define PACER_WITH_CUDA to compile
# their device code); nothing else depends on WITH_CUDA.
ifeq ($(WITH_CUDA),yes)
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++ -lm
NVFLAGS  ?= -O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC -I$(CUDA_HOME)/include -DPACER_WITH_CUDA
CUDA_SO   = $(BUILD)/libpacer_cuda.so
endif

# ---- sources ------------------------------------------------------------------------
COMMON_SRC  := $(wildcard common/*.c)
KERNELS_SRC := $(wildcard kernels/cpu/*.c)
MODEL_SRC   := $(wildcard model/*.c)
WORKER_SRC  := $(filter-out worker/main.c,$(wildcard worker/*.c))
COORD_SRC   := $(wildcard coordinator/*.c)
HTTP_SRC    := $(wildcard http/*.c)
CUDA_SRC    := $(wildcard kernels/cuda/*.cu) $(wildcard model/*.cu)
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
BENCH_SRC   := $(wildcard bench/*.c)
TOOL_SRC    := $(wildcard tests/tools/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIBCOMMON  := $(BUILD)/libpacer_common.a
LIBKERNELS := $(BUILD)/libpacer_kernels.a
LIBMODEL   := $(BUILD)/libpacer_model.a
LIBWORKER  := $(BUILD)/libpacer_worker.a
LIBCOORD   := $(BUILD)/libpacer_coord.a
LIBHTTP    := $(BUILD)/libpacer_http.a
CUDA_OBJ   := $(if $(filter yes,$(WITH_CUDA)),$(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CUDA_SRC)))

WORKER_LIBS = $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON) $(BLAS_LIBS) $(MPI_LIBS) $(DEP_LIBS)
COORD_LIBS  = $(LIBHTTP) $(LIBCOORD) $(LIBCOMMON) -lmicrohttpd $(DEP_LIBS)

UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
TOOL_BIN  := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))
BINS      := $(BUILD)/pacer-worker $(CUDA_SO) $(if $(wildcard daemon/main.c),$(BUILD)/pacer-coordinator)

.PHONY: all found deps test check-asan check-layers demo bench clean format format-check fuzz FORCE
all: found $(BINS) $(UNIT_BIN) $(BENCH_BIN) $(TOOL_BIN)

found:
	@echo "pacer build: OpenBLAS $(HAVE_OPENBLAS), Open MPI $(HAVE_MPI), nvcc $(HAVE_NVCC), cuDNN $(HAVE_CUDNN) -> CUDA backend $(WITH_CUDA)$(if $(SANITIZE), [sanitize=$(SANITIZE)])"

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) $(INCLUDES) -c $< -o $@

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
$(eval $(call archive,$(LIBMODEL),$(MODEL_SRC)))
$(eval $(call archive,$(LIBWORKER),$(WORKER_SRC)))
$(eval $(call archive,$(LIBCOORD),$(COORD_SRC)))
$(eval $(call archive,$(LIBHTTP),$(HTTP_SRC)))
$(BUILD)/%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)
FORCE:

# The backend is built with the worker (order-only: the worker does not link it).
$(BUILD)/pacer-worker: $(call obj,worker/main.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON) | $(CUDA_SO)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

$(BUILD)/libpacer_cuda.so: $(CUDA_OBJ)
	$(CC) -shared -Wl,-soname,libpacer_cuda.so -Wl,-Bsymbolic -Wl,-z,defs $^ -o $@ $(CUDA_LIBS)

ifeq ($(WITH_CUDA),yes)
CUDA_USERS := $(BUILD)/tests/test_cuda_parity $(BUILD)/bench/gpu_bench
$(CUDA_USERS): $(CUDA_SO)
$(CUDA_USERS): LINK_CUDA = -L$(BUILD) -Wl,--no-as-needed -lpacer_cuda -Wl,--as-needed -Wl,-rpath,'$$ORIGIN/..'
$(BUILD)/obj/tests/unit/test_cuda_parity.o $(BUILD)/obj/bench/gpu_bench.o: CPPFLAGS += -DPACER_WITH_CUDA
endif

$(BUILD)/pacer-coordinator: $(call obj,daemon/main.c) $(LIBHTTP) $(LIBCOORD) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $< -o $@ $(COORD_LIBS)

# Unit tests link everything; a test that needs the coordinator pulls it from its archive.
$(BUILD)/tests/%: $(call obj,tests/unit/%.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON) $(LIBHTTP) $(LIBCOORD)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(LIBHTTP) $(LIBCOORD) -lmicrohttpd $(WORKER_LIBS) $(LINK_CUDA) -lcmocka

$(BUILD)/tools/%: $(call obj,tests/tools/%.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

$(BUILD)/bench/%: $(call obj,bench/%.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS) $(LINK_CUDA)

# ---- layering: a wrong-way include must not compile ---------------------------------
# ROOM:HEADER:HOME - HEADER (of room HOME) must compile with HOME's include path and must
# not be found with ROOM's. LAYER_ALLOWED: ROOM:HEADER pairs that must compile.
LAYER_REFUSED = kernels:model.h:model kernels:rng.h:common kernels_cuda:model.h:model \
                model:worker.h:worker model:metrics.h:worker \
                common:ops.h:kernels common:model.h:model common:worker.h:worker \
                common:jobstore.h:coordinator common:server.h:http \
                coordinator:worker.h:worker coordinator:model.h:model coordinator:server.h:http \
                coordinator:redis_report.h:worker http:redis_report.h:worker http:model.h:model \
                worker:coordinator.h:coordinator worker:jobstore.h:coordinator worker:server.h:http
LAYER_ALLOWED = kernels:ops.h model:ops.h model:rng.h worker:model.h worker:ops.h worker:spec.h \
                worker:redis_url.h coordinator:spec.h coordinator:redis_url.h http:coordinator.h \
                http:clog.h daemon:server.h daemon:coordinator.h
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

test: deps
	@$(MAKE) --no-print-directory all
	@sh tests/run.sh $(BUILD)

check-asan: deps
	@$(MAKE) --no-print-directory SANITIZE=address,undefined all
	@sh tests/run.sh build-san unit

demo: deps
	@$(MAKE) --no-print-directory all
	@sh deploy/demo.sh

bench: deps
	@sh deploy/install-deps.sh bench
	@$(MAKE) --no-print-directory all
	@sh bench/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')
format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cu') && echo "format: clean"

clean:
	rm -rf build build-san

include deploy/deploy.mk
include http/http.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
