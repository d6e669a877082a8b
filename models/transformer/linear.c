/* transformer linear layers (see linear.h).  Row-major [rows, cols] arrays are column-major
   [cols x rows] ones with ld = cols, which is how the GEMMs below read them. */
#include "linear.h"

void tf_linear_forward(const tf_shape *s, tf_weight_layout wl, void *out, const void *x, const void *W, const void *b,
                       int N, int I, int O) {
    tf_linear_forward_residual(s, wl, out, x, W, b, NULL, N, I, O);
}

void tf_linear_forward_residual(const tf_shape *s, tf_weight_layout wl, void *out, const void *x, const void *W,
                                const void *b, const void *res, int N, int I, int O) {
    /* bias (and residual) first, then the product added onto it with beta = 1: one pass over out
       instead of two, or three with the residual added after */
    if (b || res) s->k->bias_fill(out, b, res, N, O, s->dt);
    float beta = b || res ? 1.0f : 0.0f;
    if (wl == TF_WEIGHT_IN_OUT) /* out [O x N] = W [O x I] x [I x N] */
        s->k->gemm(0, 0, O, N, I, 1.0f, W, O, x, I, beta, out, O, s->dt);
    else /* W is [I x O] column-major: out = W^T x */ s->k->gemm(1, 0, O, N, I, 1.0f, W, I, x, I, beta, out, O, s->dt);
}

void tf_linear_backward(const tf_shape *s, tf_weight_layout wl, void *dx, float beta, void *dW, void *db,
                        const void *dout, const void *x, const void *W, int N, int I, int O) {
    if (db) s->k->bias_backward(db, dout, N, O, s->dt);
    if (wl == TF_WEIGHT_IN_OUT) {
        if (dW) s->k->gemm(0, 1, O, I, N, 1.0f, dout, O, x, I, 1.0f, dW, O, s->dt); /* dW [O x I] += dout x^T */
        if (dx) s->k->gemm(1, 0, I, N, O, 1.0f, W, O, dout, O, beta, dx, I, s->dt); /* dx = W^T dout */
    } else {
        if (dW) s->k->gemm(0, 1, I, O, N, 1.0f, x, I, dout, O, 1.0f, dW, I, s->dt); /* dW [I x O] += x dout^T */
        if (dx) s->k->gemm(0, 0, I, N, O, 1.0f, W, I, dout, O, beta, dx, I, s->dt); /* dx = W dout */
    }
}
