/* common/spec_resolve.h - a parsed spec's names resolved into what the job reads, before the
 * cross-field checks (spec_check.h) look at it: "model": {"onnx": PATH or NAME} as the
 * catalog's entry (the loader spec_set_onnx_loader installs adds an imported file's), a
 * data set's format and place, a tokenizer object's kind and files. Shared by spec.c and
 * spec_resolve.c only; spec.h declares spec_set_onnx_loader and spec_onnx_name. */
#ifndef PACER_SPEC_RESOLVE_H
#define PACER_SPEC_RESOLVE_H

#include "spec_check.h"

/* Each 0, or -1 with e naming the field. */
int spec_resolve_model(errbuf_t *e, job_spec_t *s);
int spec_resolve_dataset(errbuf_t *e, job_spec_t *s);
int spec_resolve_tokenizer(errbuf_t *e, job_spec_t *s);

#endif
