# sim/sim.mk - the simulated cluster (SimGrid SMPI; docs/ARCHITECTURE.md "Simulation").
# Included by the top-level Makefile after its own rules (uses BUILD, CC, CSTD, OPT, WARN,
# INC_* (each room's include path), BLAS_*, DEP_LIBS, LIB*, WORKER_LIBS from there).
#
#   make smpi           build-smpi/pacer-worker (the worker built with smpicc and
#                       -DPACER_SIM), build-smpi/libpacer_simshare.so, build/pacer-sim and
#                       build/pacer-platform; part of `make all` when smpicc is installed
#                       (libsimgrid-dev, in `make deps`)
#   make sim-platforms  regenerate sim/platforms/*.xml with build/pacer-platform
#
# How each part is compiled (each room with its own include path, as in the Makefile):
#   worker/ (and model/) with smpicc: their MPI is SimGrid's, and SimGrid's helpers replace
#     malloc, exit and getopt as SMPI needs;
#   common/ and kernels/ with the plain compiler: they never call MPI, and nothing in
#     them depends on PACER_SIM, so the worker links the position-independent objects
#     the fake CUDA backend is built from (the Makefile's $(BUILD)/obj/pic/), compiled
#     once for both (26 CPU s of kernels a fresh build no longer compiles twice);
#   common/clock.c with the plain compiler and its clock_gettime and nanosleep renamed to
#     sim/clock_sim.c's, which give a simulated rank simulated time and any other thread
#     real time: the worker's timing code measures simulated time unchanged;
#   SIM_PLAIN_WORKER: the worker's files that own threads (the metrics reporter and the
#     Redis sink) with the plain compiler, since those threads are not simulated ranks
#     and must never enter SimGrid (its helpers called from them would crash). They
#     never call MPI.
# The worker is a shared object (smpicc links with -shared); smpirun loads one private
# copy per rank. libpacer_simshare.so is a separate library so that it is NOT privatised.

SMPICC           ?= smpicc
SMPI_BUILD       ?= build-smpi
HAVE_SMPI        := $(shell command -v $(SMPICC) >/dev/null 2>&1 && echo yes || echo no)
SIM_PLAIN_WORKER := worker/metrics.c worker/redis_report.c

# worker/sim.h (the worker's hooks) is the worker's own header; sim/ implements it.
SIM_SMPI_SRC  := $(filter-out $(SIM_PLAIN_WORKER),$(wildcard worker/*.c model/*.c model/onnx/*.c)) \
                 sim/sim_worker.c sim/cost.c
SIM_PLAIN_SRC := common/clock.c $(SIM_PLAIN_WORKER) sim/clock_sim.c
SIM_PIC_SRC   := $(filter-out common/clock.c,$(COMMON_SRC)) $(KERNELS_SRC)
SIM_SMPI_OBJ  := $(patsubst %.c,$(SMPI_BUILD)/smpi/%.o,$(SIM_SMPI_SRC))
SIM_PLAIN_OBJ := $(patsubst %.c,$(SMPI_BUILD)/obj/%.o,$(SIM_PLAIN_SRC)) $(patsubst %.c,$(BUILD)/obj/pic/%.o,$(SIM_PIC_SRC))
# Each room's include path (the Makefile's INC_*), never Open MPI's: smpicc brings its mpi.h.
$(SMPI_BUILD)/%.o:              SIM_INC = $(INC_common)
$(SMPI_BUILD)/smpi/worker/%.o:  SIM_INC = $(INC_worker)
$(SMPI_BUILD)/smpi/model/%.o:   SIM_INC = $(INC_model)
$(SMPI_BUILD)/smpi/sim/%.o:     SIM_INC = $(INC_sim)
$(SMPI_BUILD)/obj/worker/%.o:   SIM_INC = $(INC_worker)
$(SMPI_BUILD)/obj/sim/%.o:      SIM_INC = $(INC_sim)
$(SMPI_BUILD)/obj/common/clock.o: SIM_INC = $(INC_common) -Dclock_gettime=sim_clock_gettime -Dnanosleep=sim_nanosleep
# -DMPI_Iallreduce=...: SimGrid 3.32's in-place MPI_Iallreduce sends from freed memory;
# the worker's calls go to a wrapper in sim/sim_worker.c instead.
SIM_CPPFLAGS   = -D_GNU_SOURCE -DPACER_SIM -DMPI_Iallreduce=sim_mpi_iallreduce $(SIM_INC) $(BLAS_CFLAGS)
SIM_CFLAGS     = $(CSTD) $(OPT) -g $(WARN) -fPIC -MMD -MP
SIM_WORKER    := $(SMPI_BUILD)/pacer-worker
SIM_SHARE     := $(SMPI_BUILD)/libpacer_simshare.so
SIM_TOOLS     := $(BUILD)/pacer-sim $(BUILD)/pacer-platform

.PHONY: smpi found-sim clean-smpi sim-platforms
found: found-sim
found-sim:
	@echo "pacer sim build: smpicc $(HAVE_SMPI)$(if $(filter no,$(HAVE_SMPI)), (make deps installs libsimgrid-dev; the sim tests skip without it))"

test-bins: $(SIM_TOOLS)
ifeq ($(HAVE_SMPI),yes)
# Not in a sanitized `make all` (check-asan, which runs no simulation): the SMPI worker
# would link build-san's ONNX objects, compiled with -fsanitize, without the sanitizer
# runtime (undefined __asan_* symbols), and share build-smpi/ with the plain build.
ifeq ($(SANITIZE),)
test-bins: smpi
endif
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
$(SIM_WORKER): $(SIM_SMPI_OBJ) $(SIM_PLAIN_OBJ) $(ONNX_OBJ) $(SIM_SHARE)
	$(SMPICC) -o $@ $(SIM_SMPI_OBJ) $(SIM_PLAIN_OBJ) $(ONNX_OBJ) -L$(SMPI_BUILD) -lpacer_simshare \
	    -Wl,-rpath,$(abspath $(SMPI_BUILD)) $(BLAS_LIBS) $(IMG_LIBS) $(ONNX_LIBS) $(DEP_LIBS)
$(patsubst %.c,$(SMPI_BUILD)/smpi/%.o,$(wildcard model/onnx/*.c)) $(SMPI_BUILD)/smpi/model/onnx_export.o: $(ONNX_PB).h

# The model code reads a spec's "model": {"onnx": PATH} (its catalog entry, for the
# spec's pairing checks); --as-needed as below.
# worker/modelfetch.c: an uploaded model's spec is read as the worker reads it.
$(BUILD)/pacer-sim: $(call obj,sim/pacer_sim.c sim/platform.c worker/modelfetch.c) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -Wl,--as-needed $(call obj,sim/pacer_sim.c sim/platform.c worker/modelfetch.c) -o $@ $(LIBMODEL) $(LIBKERNELS) \
	    $(LIBCOMMON) $(BLAS_LIBS) $(ONNX_LIBS) $(DEP_LIBS)

# --as-needed: it uses the model code only; loading Open MPI for nothing costs seconds.
$(BUILD)/pacer-platform: $(call obj,sim/pacer_platform.c sim/platform.c sim/cost.c) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -Wl,--as-needed $(call obj,sim/pacer_platform.c sim/platform.c sim/cost.c) -o $@ $(WORKER_LIBS)

# The unit test of sim/'s pure parts links them on top of what every unit test links.
SIM_UNIT_OBJ = $(call obj,sim/platform.c sim/cost.c)
$(BUILD)/tests/test_sim: $(call obj,tests/unit/test_sim.c) $(SIM_UNIT_OBJ) $(LIBWORKER) $(LIBMODEL) $(LIBKERNELS) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,--as-needed $(call obj,tests/unit/test_sim.c) $(SIM_UNIT_OBJ) -o $@ $(WORKER_LIBS) -lcmocka

sim-platforms: $(BUILD)/pacer-platform
	sh sim/platforms/generate.sh $(BUILD)/pacer-platform sim/platforms

clean: clean-smpi
clean-smpi:
	rm -rf $(SMPI_BUILD)

-include $(shell find $(SMPI_BUILD) -name '*.d' 2>/dev/null)

# pacer-sched-sim (sim/sched_*.c): the scheduling policies over a job trace in virtual time.
# It runs the coordinator's own policy code, so it compiles with the coordinator room's
# include path (plus sim/), never the worker's: the SMPI tools above stay out of it.
INC_sched = -Isim -Icoordinator -Icommon
SCHED_SIM_SRC := sim/sched_sim.c sim/sched_input.c sim/sched_exp.c
$(BUILD)/obj/sim/sched_%.o: INCLUDES = $(INC_sched)
$(BUILD)/pacer-sched-sim: $(call obj,$(SCHED_SIM_SRC)) $(LIBCOORD) $(LIBCOMMON)
	$(CC) $(LDFLAGS) -Wl,--as-needed $(call obj,$(SCHED_SIM_SRC)) -o $@ $(LIBCOORD) $(LIBCOMMON) $(DEP_LIBS)
test-bins: $(BUILD)/pacer-sched-sim
