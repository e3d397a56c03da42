# sim/sim.mk - the simulated cluster (SimGrid SMPI; docs/ARCHITECTURE.md "Simulation").
# Included by the top-level Makefile after its own rules (uses BUILD, CC, CSTD, OPT, WARN,
# INCLUDES, BLAS_*, DEP_LIBS, LIB*, WORKER_LIBS from there).
#
#   make smpi           build-smpi/pacer-worker (the worker built with smpicc and
#                       -DPACER_SIM), build-smpi/libpacer_simshare.so, build/pacer-sim and
#                       build/pacer-platform; part of `make all` when smpicc is installed
#                       (libsimgrid-dev, in `make deps`)
#   make sim-platforms  regenerate sim/platforms/*.xml with build/pacer-platform
#
# How each part is compiled:
#   worker/ (and model/) with smpicc: their clock_gettime, nanosleep and MPI are SimGrid's,
#     so the worker's timing code measures simulated time unchanged;
#   common/ and kernels/ with the plain compiler: they never call MPI, and common/ owns
#     threads (metrics reporter, Redis sink) that must keep real time, since SimGrid's
#     clock called from a thread that is not a simulated rank would crash;
#   SIM_SMPICC_EXTRA: common/ files that must see simulated time after all (the worker's
#     clock once it lives in common/: set it to that file).
# The worker is a shared object (smpicc links with -shared); smpirun loads one private
# copy per rank. libpacer_simshare.so is a separate library so that it is NOT privatised.

SMPICC           ?= smpicc
SMPI_BUILD       ?= build-smpi
HAVE_SMPI        := $(shell command -v $(SMPICC) >/dev/null 2>&1 && echo yes || echo no)
SIM_SMPICC_EXTRA ?=

# sim.h is included by worker/ in every build (its hooks are no-ops outside PACER_SIM).
CPPFLAGS += -Isim

SIM_SMPI_SRC  := $(wildcard worker/*.c model/*.c) sim/sim_worker.c sim/cost.c $(SIM_SMPICC_EXTRA)
SIM_PLAIN_SRC := $(filter-out $(SIM_SMPICC_EXTRA),$(COMMON_SRC) $(KERNELS_SRC))
SIM_SMPI_OBJ  := $(patsubst %.c,$(SMPI_BUILD)/smpi/%.o,$(SIM_SMPI_SRC))
SIM_PLAIN_OBJ := $(patsubst %.c,$(SMPI_BUILD)/obj/%.o,$(SIM_PLAIN_SRC))
# -DMPI_Iallreduce=...: SimGrid 3.32's in-place MPI_Iallreduce sends from freed memory;
# the worker's calls go to a wrapper in sim/sim_worker.c instead.
SIM_CPPFLAGS   = -D_GNU_SOURCE -DPACER_SIM -DMPI_Iallreduce=sim_mpi_iallreduce $(INCLUDES) -Isim $(BLAS_CFLAGS)
SIM_CFLAGS     = $(CSTD) $(OPT) -g $(WARN) -fPIC -MMD -MP
SIM_WORKER    := $(SMPI_BUILD)/pacer-worker
SIM_SHARE     := $(SMPI_BUILD)/libpacer_simshare.so
SIM_TOOLS     := $(BUILD)/pacer-sim $(BUILD)/pacer-platform

.PHONY: smpi found-sim clean-smpi sim-platforms
found: found-sim
found-sim:
	@echo "pacer sim build: smpicc $(HAVE_SMPI)$(if $(filter no,$(HAVE_SMPI)), (make deps installs libsimgrid-dev; the sim tests skip without it))"

all: $(SIM_TOOLS)
ifeq ($(HAVE_SMPI),yes)
all: smpi
smpi: $(SIM_WORKER) $(SIM_TOOLS)
else
smpi:
	@echo "make smpi: $(SMPICC) not found: install libsimgrid-dev (make deps)" >&2; exit 1
endif

$(SMPI_BUILD)/smpi/%.o: %.c
	@mkdir -p $(dir $@)
	$(SMPICC) $(SIM_CPPFLAGS) $(SIM_CFLAGS) -c $< -o $@

$(SMPI_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CPPFLAGS) $(SIM_CFLAGS) -c $< -o $@

$(SIM_SHARE): sim/simshare.c sim/simshare.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(WARN) -fPIC -shared -Wl,-soname,libpacer_simshare.so $< -o $@ -lpthread

# The run path is absolute because smpirun loads each rank's copy of the worker from a
# temporary directory ($ORIGIN would point there); pacer-sim also puts the worker's
# directory on LD_LIBRARY_PATH, for a build tree that has moved.
$(SIM_WORKER): $(SIM_SMPI_OBJ) $(SIM_PLAIN_OBJ) $(SIM_SHARE)
	$(SMPICC) -o $@ $(SIM_SMPI_OBJ) $(SIM_PLAIN_OBJ) -L$(SMPI_BUILD) -lpacer_simshare \
	    -Wl,-rpath,$(abspath $(SMPI_BUILD)) $(BLAS_LIBS) $(DEP_LIBS)

$(BUILD)/pacer-sim: $(call obj,sim/pacer_sim.c sim/platform.c) $(LIBCOMMON)
	$(CC) $(LDFLAGS) $(call obj,sim/pacer_sim.c sim/platform.c) -o $@ $(LIBCOMMON) $(DEP_LIBS)

# --as-needed: it uses the model code only; loading Open MPI for nothing costs seconds.
$(BUILD)/pacer-platform: $(call obj,sim/pacer_platform.c sim/platform.c sim/cost.c) $(LIBWORKER) $(LIBKERNELS) $(LIBCOMMON) $(CUDA_OBJ)
	$(CC) $(LDFLAGS) -Wl,--as-needed $(call obj,sim/pacer_platform.c sim/platform.c sim/cost.c) -o $@ $(WORKER_LIBS)

# The unit test of sim/'s pure parts links them on top of what every unit test links.
SIM_UNIT_OBJ = $(call obj,sim/platform.c sim/cost.c)
$(BUILD)/tests/test_sim: $(call obj,tests/unit/test_sim.c) $(SIM_UNIT_OBJ) $(LIBWORKER) $(LIBKERNELS) $(LIBCOMMON) $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,--as-needed $(call obj,tests/unit/test_sim.c) $(SIM_UNIT_OBJ) -o $@ $(WORKER_LIBS) -lcmocka

sim-platforms: $(BUILD)/pacer-platform
	sh sim/platforms/generate.sh $(BUILD)/pacer-platform sim/platforms

clean: clean-smpi
clean-smpi:
	rm -rf $(SMPI_BUILD)

-include $(shell find $(SMPI_BUILD) -name '*.d' 2>/dev/null)
