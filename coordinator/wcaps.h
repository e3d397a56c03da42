/* coordinator/wcaps.h - which of the options the coordinator passes the worker binary
 * takes. A worker prints them with `pacer-worker --capabilities` (JSON: {"options":
 * ["--spec", ...]}, every long option of its own table). The coordinator runs it only
 * when the worker's --help names --capabilities (an older binary is never run with an
 * option it may not refuse before doing its work); for a worker from before that option,
 * or one whose answer is not that JSON, the --help text is read instead, each option
 * matched as a whole word ("--redis" is not found in "--redis-password-file"). A job never
 * gets an option its worker lacks (an older worker would reject it and every job fail
 * with exit 2).
 */
#ifndef PACER_WCAPS_H
#define PACER_WCAPS_H

typedef struct {
    int redis;         /* --redis/--job */
    int password_file; /* --redis-password-file */
    int world;         /* --world N */
    int collapse;      /* --resume-before / --lr-scale (on_collapse restart) */
    int netprobe;      /* --netprobe S (coordinator/netprobe.h) */
    int data_cache;    /* --data-cache DIR */
    int data_root;     /* --data-root DIR */
    int model_onnx;    /* --model-onnx FILE */
    int model_st;      /* --model-safetensors FILE */
    int fence;         /* --fence G (the checkpoint fence, common/ckptdir.h) */
    int adopt;         /* --adopt-checkpoint FILE (a PBT trial's exploit, coordinator/experiment.c) */
} wcaps_t;

/* From the output of --capabilities: 0, or -1 (and *out all 0) when it is not that JSON
 * (an older worker's refusal). */
int wcaps_from_json(const char *text, wcaps_t *out);

/* From a --help text (NULL: none; every capability 0). */
void wcaps_from_help(const char *help, wcaps_t *out);

/* Asks the worker binary at path (--help, then --capabilities when it has it). Returns 1
 * when the answer came from --capabilities, 0 from the --help text. */
int wcaps_probe(const char *path, wcaps_t *out);

#endif
