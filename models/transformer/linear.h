/*
 * transformer linear layers: y = x W (+ b) over the kernel table, for the two ways checkpoints
 * store W.  GPT-2's Conv1D keeps it [in, out]; torch's nn.Linear (BLOOM, lm_head) keeps it
 * [out, in].  Both become one column-major GEMM with the same arguments on every device.
 *
 * Lifecycle: none; called from a model's layer code between the kernel table's other calls.
 */
#ifndef TF_LINEAR_H
#define TF_LINEAR_H

#include "shape.h"

typedef enum {
    TF_WEIGHT_IN_OUT, /* W [I, O] row-major: GPT-2's Conv1D */
    TF_WEIGHT_OUT_IN, /* W [O, I] row-major: nn.Linear */
} tf_weight_layout;

/* out[N, O] = x[N, I] W (+ b, when b is not NULL) */
void tf_linear_forward(const tf_shape *s, tf_weight_layout wl, void *out, const void *x, const void *W, const void *b,
                       int N, int I, int O);
/* out[N, O] = x[N, I] W (+ b) + res[N, O]: a residual connection around the layer, added in the
   pass that writes the bias (res NULL: tf_linear_forward; res may be out itself) */
void tf_linear_forward_residual(const tf_shape *s, tf_weight_layout wl, void *out, const void *x, const void *W,
                                const void *b, const void *res, int N, int I, int O);
/* dW += x^T dout (in W's layout), db += column sums of dout (db NULL: no bias, or a frozen one), and,
   when dx is not NULL, dx = dout W^T + beta dx (beta 0: overwrite, 1: add).  dW NULL: a frozen weight
   (shardrun/model.h, SR_PARAM_FROZEN): its GEMM is skipped, dx is still computed. */
void tf_linear_backward(const tf_shape *s, tf_weight_layout wl, void *dx, float beta, void *dW, void *db,
                        const void *dout, const void *x, const void *W, int N, int I, int O);

#endif
