/* worker/onnx_case.h - pacer-worker --onnx-case DIR: one case of ONNX's backend test suite
 * (a directory with model.onnx and test_data_set_N/input_K.pb, output_K.pb) run forward
 * through pacer's importer and CPU model, each output compared with the expected one. */
#ifndef PACER_ONNX_CASE_H
#define PACER_ONNX_CASE_H

/* The suite's tolerances (onnx/backend/test/case/test_case.py): a value matches when
 * |actual - expected| <= atol + rtol * |expected|. */
#define ONNX_CASE_RTOL 1e-3
#define ONNX_CASE_ATOL 1e-7

/* Runs the case in dir, printing its operators and one line per output to stdout.
 * Returns the exit status: 0 every output of every data set matches, 1 one does not
 * (the line names the output and its largest error), 2 the case uses something pacer
 * does not support or is malformed (one line on stderr saying what). */
int onnx_case_run(const char *dir);

#endif
