# fuzz/fuzz.mk - libFuzzer harnesses (clang, -fsanitize=fuzzer,address,undefined); the
# top-level Makefile includes it after its own rules (it uses BUILD and the *_SRC lists
# from there). A harness drives code of several rooms, so it sees all their headers.
#
#   make fuzz            builds every harness and runs each for a fixed number of
#                        executions, one after another: FUZZ_RUNS (default 10^6) each,
#                        FUZZ_RUNS_PARSERS (default 10 x FUZZ_RUNS) for the request and
#                        spec parsers. A quick smoke run: make fuzz FUZZ_RUNS=10000
#   make fuzz-build      the harnesses only, into $(BUILD)/fuzz/
#   make fuzz-HARNESS    one harness (fuzz-spec, fuzz-checkpoint, ...), FUZZ_RUNS runs
#
# Seeds are committed under fuzz/corpus/HARNESS/; each run also keeps its growing work
# corpus in $(BUILD)/fuzz/corpus/HARNESS/ and writes any finding (crash-*, leak-*,
# timeout-*) as $(BUILD)/fuzz/HARNESS-crash-... A finding fails the run (and make).
# docs/TESTING.md records what was run and found.

FUZZ_CC           ?= clang
FUZZ_RUNS         ?= 1000000
FUZZ_RUNS_PARSERS ?= $(shell expr $(FUZZ_RUNS) \* 10)
FUZZ_MAX_TIME     ?= 0        # seconds per harness, 0 = no limit (the run count decides)
# One input taking this long is reported as a hang. Generous: on a shared machine under
# load one input of fuzz_cifar once took 12 s inside ASan's allocator (alone: < 0.1 s).
FUZZ_TIMEOUT      ?= 60
FUZZ_INCLUDES     := -Icommon -Ikernels/cpu -Imodel -Iworker -Icoordinator -Ihttp -I$(BUILD)/gen $(BLAS_CFLAGS)
FUZZ_FLAGS        := -std=c11 -O1 -g -D_GNU_SOURCE $(FUZZ_INCLUDES) -fno-omit-frame-pointer \
                     -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIBS         := -lmicrohttpd -ljansson -lhiredis -lz -lzip -lpng16 -ljpeg -lpthread -lm

FUZZ_HARNESSES := request spec idx cifar checkpoint redis stream_id history host password_file \
                  npy npz image dcache onnx netprobe modelindex onnx_case cli_url sched ef ckptfence tokfile bpe tokenizer search notice webhook genreq slurm hostmem safetensors \
                  paramnames
FUZZ_OBJ = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))

# What each harness links besides its own file: the code it drives, no more (the worker's
# MPI and BLAS parts stay out).
FUZZ_COORD_SRC := $(wildcard coordinator/*.c)
FUZZ_SRC_request    := $(wildcard http/*.c) $(FUZZ_COORD_SRC) $(COMMON_SRC)
FUZZ_SRC_spec       := $(COMMON_SRC)
FUZZ_SRC_idx        := worker/data.c $(COMMON_SRC)
FUZZ_SRC_cifar      := worker/data.c $(COMMON_SRC)
FUZZ_SRC_checkpoint := worker/checkpoint.c model/model_buffers.c model/shape.c $(COMMON_SRC)
FUZZ_SRC_ef         := worker/checkpoint.c model/model_buffers.c model/shape.c $(COMMON_SRC)
FUZZ_SRC_redis      := worker/redis_report.c worker/waitmark.c worker/metrics.c worker/nvml.c model/backend_cuda.c $(FUZZ_COORD_SRC) $(COMMON_SRC)
FUZZ_SRC_stream_id  := $(wildcard http/*.c) $(FUZZ_COORD_SRC) $(COMMON_SRC)
FUZZ_SRC_host       := http/auth.c $(COMMON_SRC)
FUZZ_SRC_cli_url    := cli/cliargs.c http/auth.c $(COMMON_SRC)
FUZZ_SRC_password_file := $(COMMON_SRC)
FUZZ_SRC_ckptfence  := common/ckptdir.c common/fs.c
# the note a worker leaves on notice (common/notice.h), and a webhook's body and URL rules
FUZZ_SRC_notice     := $(COMMON_SRC)
FUZZ_SRC_webhook    := $(FUZZ_COORD_SRC) $(COMMON_SRC)
# a generate request's body (coordinator/textgen.h): the fields a pacer-generate process gets
FUZZ_SRC_genreq     := $(FUZZ_COORD_SRC) $(COMMON_SRC)
FUZZ_SRC_history    := $(FUZZ_COORD_SRC) $(COMMON_SRC)
# what the slurm launcher reads from scontrol and sinfo (coordinator/launcher.h)
FUZZ_SRC_slurm      := $(FUZZ_COORD_SRC) $(COMMON_SRC)
FUZZ_SRC_netprobe   := $(FUZZ_COORD_SRC) $(COMMON_SRC)
FUZZ_SRC_modelindex := $(FUZZ_COORD_SRC) $(COMMON_SRC)
# --host-memory-mb-of's list and the memory admission it feeds (coordinator/hostmem.h)
FUZZ_SRC_hostmem    := coordinator/hostmem.c $(COMMON_SRC)
FUZZ_SRC_npy        := $(COMMON_SRC)
# an uploaded model's parameter names (common/param_names.h): its validator's summary, its kept file
FUZZ_SRC_paramnames := $(COMMON_SRC)
# the safetensors reader (common/safetensors.h): init.safetensors' files
FUZZ_SRC_safetensors := $(COMMON_SRC)
# the token files of a text or token data set (dataset.format tokens): their header and ids
FUZZ_SRC_tokfile    := common/tokfile.c common/errmsg.c common/dataroot.c
# GPT-2's BPE tokenizer: vocab.json, merges.txt and the text it encodes
FUZZ_SRC_bpe        := common/bpe.c common/bpe_unicode.c common/utf8.c common/dataroot.c common/errmsg.c common/fs.c \
                       common/jsonbody.c
# the tokenizer saved beside a checkpoint (NAME.tokenizer): bytes, chars or a BPE's sources
FUZZ_SRC_tokenizer  := common/tokenizer.c common/bpe.c common/bpe_unicode.c common/utf8.c common/dataroot.c common/errmsg.c \
                       common/fs.c common/jsonbody.c
# an experiment's search object (common/search.h) and the trial specs it makes
FUZZ_SRC_search     := $(COMMON_SRC)
FUZZ_SRC_npz        := worker/data.c $(COMMON_SRC)
FUZZ_SRC_image      := worker/image.c common/dataroot.c common/errmsg.c
FUZZ_SRC_dcache     := worker/dcache.c $(COMMON_SRC)
# pacer-sched-sim's cluster and trace parsers: sim/'s files of the coordinator's room
FUZZ_SRC_sched      := sim/sched_input.c sim/sched_exp.c $(FUZZ_COORD_SRC) $(COMMON_SRC)
FUZZ_CFLAGS_fuzz_fuzz_sched := -Isim
FUZZ_CFLAGS_sim_sched_input := -Isim
FUZZ_CFLAGS_sim_sched_exp := -Isim
# The importer builds and runs the model: model/, protobuf-c's generated code, and the CPU
# kernels, which clang does not compile (pool.c's gcc vector builtins): those are built
# with $(CC) and no sanitizer (FUZZ_GCC_OBJ), so ASan checks the importer and model/, and a
# kernel overrunning a buffer the importer sized shows only when it crashes.
FUZZ_SRC_onnx       := $(wildcard model/onnx/*.c) model/onnx_export.c common/fs.c model/model.c model/plan.c model/shape.c model/model_buffers.c model/op_table.c model/decode.c model/generate.c common/rng.c common/catalog.c common/dataroot.c common/errmsg.c common/sha256.c $(ONNX_PB).c
FUZZ_GCC_OBJ_onnx   := $(patsubst %.c,$(BUILD)/fuzz/gccobj/%.o,$(KERNELS_SRC))
FUZZ_LIBS_onnx      := $(BLAS_LIBS) $(ONNX_LIBS)
# pacer-worker --onnx-case's readers (tensor files, a case's model): the importer's build.
FUZZ_SRC_onnx_case     := $(FUZZ_SRC_onnx)
FUZZ_GCC_OBJ_onnx_case := $(FUZZ_GCC_OBJ_onnx)
FUZZ_LIBS_onnx_case    := $(FUZZ_LIBS_onnx)

# Longest input per harness: a CIFAR input holds a few 3073-byte records.
FUZZ_MAXLEN_request    := 8192
FUZZ_MAXLEN_spec       := 8192
FUZZ_MAXLEN_idx        := 8192
FUZZ_MAXLEN_cifar      := 16384
FUZZ_MAXLEN_checkpoint := 4096
FUZZ_MAXLEN_ef         := 256
FUZZ_MAXLEN_redis      := 4096
FUZZ_MAXLEN_stream_id  := 256
FUZZ_MAXLEN_host       := 1024
FUZZ_MAXLEN_cli_url    := 1024
FUZZ_MAXLEN_password_file := 512
FUZZ_MAXLEN_ckptfence  := 64
FUZZ_MAXLEN_history    := 8192
FUZZ_MAXLEN_netprobe   := 4096
FUZZ_MAXLEN_modelindex := 8192
FUZZ_MAXLEN_paramnames := 8192
FUZZ_MAXLEN_npy        := 4096
FUZZ_MAXLEN_safetensors := 4096
FUZZ_MAXLEN_tokfile    := 4096
FUZZ_MAXLEN_bpe        := 8192
FUZZ_MAXLEN_tokenizer  := 8192
FUZZ_MAXLEN_search     := 4096
FUZZ_MAXLEN_npz        := 16384
FUZZ_MAXLEN_image      := 16384
FUZZ_MAXLEN_dcache     := 4200
FUZZ_MAXLEN_onnx       := 8192
FUZZ_MAXLEN_onnx_case  := 8192
FUZZ_MAXLEN_sched      := 8192
FUZZ_MAXLEN_slurm      := 4096
FUZZ_MAXLEN_hostmem    := 2048

FUZZ_RUNS_request    = $(FUZZ_RUNS_PARSERS)
FUZZ_RUNS_spec       = $(FUZZ_RUNS_PARSERS)

.PHONY: fuzz fuzz-build $(addprefix fuzz-,$(FUZZ_HARNESSES))

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_CFLAGS_$(subst /,_,$*)) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

# The loaders' buffers, small: a header that claims 2^31 images then costs a 4 KB buffer
# per input instead of 16 MB, a CIFAR file starts with room for one record instead of
# 1024 (3 MB), and the growing reads grow many times.
FUZZ_CFLAGS_worker_data := -DREAD_INITIAL_BYTES=4096 -DREAD_CHUNK_BYTES=1024 -DGZ_BUFFER_BYTES=1024 \
                            -DCIFAR_INITIAL_RECORDS=1

# The image decoders' bounds, small: an input announcing a 4096 x 4096 image is refused
# (or decoded) in microseconds instead of allocating 48 MB per input. The check is the
# same code at any bound.
FUZZ_CFLAGS_worker_image := '-DIMAGE_MAX_PIXELS=(1L << 20)' -DIMAGE_MAX_SIDE=4096
FUZZ_CFLAGS_fuzz_fuzz_image := $(FUZZ_CFLAGS_worker_image)
$(BUILD)/fuzz/gccobj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -D_GNU_SOURCE -Ikernels/cpu $(BLAS_CFLAGS) -MMD -MP -c $< -o $@

define FUZZ_HARNESS
$(BUILD)/fuzz/fuzz_$(1): $(call FUZZ_OBJ,fuzz/fuzz_$(1).c $(FUZZ_SRC_$(1))) $(FUZZ_GCC_OBJ_$(1))
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $$^ -o $$@ $(FUZZ_LIBS) $(FUZZ_LIBS_$(1))

fuzz-$(1): $(BUILD)/fuzz/fuzz_$(1)
	@mkdir -p $(BUILD)/fuzz/corpus/$(1)
	@echo "fuzz $(1): $$(or $$(FUZZ_RUNS_$(1)),$$(FUZZ_RUNS)) runs"
	cd $(BUILD)/fuzz && nice -n 10 ./fuzz_$(1) -runs=$$(or $$(FUZZ_RUNS_$(1)),$$(FUZZ_RUNS)) \
	    -max_total_time=$(strip $(FUZZ_MAX_TIME)) -max_len=$(FUZZ_MAXLEN_$(1)) -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=2048 \
	    $$(if $$(wildcard fuzz/$(1).dict),-dict=$(CURDIR)/fuzz/$(1).dict) -artifact_prefix=$(1)- \
	    -print_final_stats=1 corpus/$(1) $(CURDIR)/fuzz/corpus/$(1)
endef
$(foreach h,$(FUZZ_HARNESSES),$(eval $(call FUZZ_HARNESS,$(h))))

fuzz-build: $(foreach h,$(FUZZ_HARNESSES),$(BUILD)/fuzz/fuzz_$(h))

# One after another, not in parallel: each harness gets the machine's cores to itself.
fuzz: fuzz-build
	@for h in $(FUZZ_HARNESSES); do $(MAKE) --no-print-directory fuzz-$$h || exit 1; done

# Both object trees' header dependencies: a changed kernels/cpu header (ops.h, scalar_fn.h)
# remakes the gcc-built kernel objects too, not only the instrumented ones.
-include $(shell find $(BUILD)/fuzz/obj $(BUILD)/fuzz/gccobj -name '*.d' 2>/dev/null)
# the importer includes the generated header
$(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(wildcard model/onnx/*.c)) $(BUILD)/fuzz/obj/model/onnx_export.o: $(ONNX_PB).h
