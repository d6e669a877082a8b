/*
 * selftest comparisons: an array a device computed against the CPU's, element by element, with
 * a tolerance per kernel and dtype.
 *
 * Lifecycle: none; pure functions over host arrays.
 *
 * An element passes when |got - want| <= atol * scale + rtol * |want|, scale being the largest
 * |want| of the array (1 when that is 0): a tolerance that follows the magnitude of the result.
 * A zero tolerance means bit-identical (NaN matches NaN).  Infinities must match exactly.
 */
#ifndef SELFTEST_COMPARE_H
#define SELFTEST_COMPARE_H

#include <stddef.h>

#include "shardrun/dtype.h"

typedef struct st_tol {
    double rtol, atol;
} st_tol;

#define ST_EXACT ((st_tol){0, 0})

typedef struct st_cmp {
    size_t n, bad;    /* elements compared, elements out of tolerance */
    size_t first_bad; /* index of the first one */
    float got, want;  /* its values */
    double max_err;   /* largest |got - want| (finite pairs) */
} st_cmp;

/* Fills c; returns 1 when every element is within tolerance. */
int st_compare(const float *got, const float *want, size_t n, st_tol tol, st_cmp *c);
/* Adds b into a (a running total over several shapes of one check). */
void st_cmp_merge(st_cmp *a, const st_cmp *b);

/* The tolerance of a kernel for dtype dt: `fp32` for fp32; for bf16/fp16 at least `ulps` units in
   the last place of the dtype (rounding of the stored result and of intermediates kept in it). */
st_tol st_tol_for(sr_dtype dt, st_tol fp32, double ulps);

/* Rounds x to dt and back (what storing a float in a dt buffer does). */
float st_round(float x, sr_dtype dt);

#endif
