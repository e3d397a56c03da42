# pacer - top-level Makefile. Everything builds into build/.
#
#   make            build what this machine can build (says what it found)
#   make deps       install the Debian packages pacer needs (only the missing ones)
#   make test       deps + build + every test; ends with "N passed, N failed, N skipped"
#   make test-multihost  the network-namespace multi-host test alone (root)
#   make check-asan unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make demo       the main job
#   make bench      benchmarks (installs python3-torch for the PyTorch baseline)
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
DEP_LIBS    := -ljansson -lz -lhiredis -lpthread -lm

INCLUDES  = -Icommon -Ikernels/cpu -Iworker -Icoordinator -Ihttp
CPPFLAGS += -D_GNU_SOURCE $(INCLUDES) $(BLAS_CFLAGS) $(MPI_CFLAGS)
CFLAGS   += $(CSTD) $(OPT) -g $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS  += $(SANFLAGS)

ifeq ($(WITH_CUDA),yes)
CPPFLAGS += -DPACER_WITH_CUDA -I$(CUDA_HOME)/include
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++
NVFLAGS  ?= -O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC $(INCLUDES) -I$(CUDA_HOME)/include -DPACER_WITH_CUDA
endif

# ---- sources ------------------------------------------------------------------------
COMMON_SRC  := $(wildcard common/*.c)
KERNELS_SRC := $(wildcard kernels/cpu/*.c)
WORKER_SRC  := $(filter-out worker/main.c,$(wildcard worker/*.c))
COORD_SRC   := $(filter-out coordinator/main.c,$(wildcard coordinator/*.c)) $(wildcard http/*.c)
CUDA_SRC    := $(wildcard kernels/cuda/*.cu)
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
BENCH_SRC   := $(wildcard bench/*.c)
TOOL_SRC    := $(wildcard tests/tools/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIBCOMMON  := $(BUILD)/libpacer_common.a
LIBKERNELS := $(BUILD)/libpacer_kernels.a
LIBWORKER  := $(BUILD)/libpacer_worker.a
LIBCOORD   := $(BUILD)/libpacer_coord.a
CUDA_OBJ   := $(if $(filter yes,$(WITH_CUDA)),$(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CUDA_SRC)))

WORKER_LIBS = $(LIBWORKER) $(LIBKERNELS) $(LIBCOMMON) $(CUDA_OBJ) $(BLAS_LIBS) $(MPI_LIBS) $(CUDA_LIBS) $(DEP_LIBS)
COORD_LIBS  = $(LIBCOORD) $(LIBCOMMON) -lmicrohttpd $(DEP_LIBS)

UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
TOOL_BIN  := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRC))
BINS      := $(BUILD)/pacer-worker $(if $(wildcard coordinator/main.c),$(BUILD)/pacer-coordinator)

.PHONY: all found deps test check-asan demo bench clean format format-check fuzz
all: found $(BINS) $(UNIT_BIN) $(BENCH_BIN) $(TOOL_BIN)

found:
	@echo "pacer build: OpenBLAS $(HAVE_OPENBLAS), Open MPI $(HAVE_MPI), nvcc $(HAVE_NVCC), cuDNN $(HAVE_CUDNN) -> CUDA backend $(WITH_CUDA)$(if $(SANITIZE), [sanitize=$(SANITIZE)])"

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(LIBCOMMON): $(call obj,$(COMMON_SRC))
$(LIBKERNELS): $(call obj,$(KERNELS_SRC))
$(LIBWORKER): $(call obj,$(WORKER_SRC))
$(LIBCOORD): $(call obj,$(COORD_SRC))
$(BUILD)/%.a:
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/pacer-worker: $(call obj,worker/main.c) $(LIBWORKER) $(LIBKERNELS) $(LIBCOMMON) $(CUDA_OBJ)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

$(BUILD)/pacer-coordinator: $(call obj,coordinator/main.c) $(LIBCOORD) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $< -o $@ $(COORD_LIBS)

# Unit tests link everything; a test that needs the coordinator pulls it from its archive.
$(BUILD)/tests/%: $(call obj,tests/unit/%.c) $(LIBWORKER) $(LIBKERNELS) $(LIBCOMMON) $(if $(COORD_SRC),$(LIBCOORD)) $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(if $(COORD_SRC),$(LIBCOORD) -lmicrohttpd) $(WORKER_LIBS) -lcmocka

$(BUILD)/tools/%: $(call obj,tests/tools/%.c) $(LIBWORKER) $(LIBKERNELS) $(LIBCOMMON) $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

$(BUILD)/bench/%: $(call obj,bench/%.c) $(LIBWORKER) $(LIBKERNELS) $(LIBCOMMON) $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $< -o $@ $(WORKER_LIBS)

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
include sim/sim.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
