/* common/numarg.h - one strict parser for numbers given on a command line (the worker's,
 * the coordinator's and the pacer client's options). strtol/strtod alone accept "", "12x"
 * and overflow silently, and a garbage option read as 0 quietly changes what a run does
 * (--time-budget abc used to mean "no budget"); every option goes through here instead,
 * and its caller words the error with the option's name. */
#ifndef PACER_NUMARG_H
#define PACER_NUMARG_H

/* numarg_double S LO HI OUT - S is a whole decimal number (no trailing text, no overflow,
 * not NaN) between LO and HI inclusive: 0 and *OUT set, else -1 and *OUT untouched. */
int numarg_double(const char *s, double lo, double hi, double *out);

/* numarg_long S LO HI OUT - the same for an integer written in base 10. */
int numarg_long(const char *s, long lo, long hi, long *out);

#endif
