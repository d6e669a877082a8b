/* transformer lora: LoRA's arithmetic on block.h's linear layers (see lora.h).  Row-major
   [rows, cols] arrays are column-major [cols x rows] ones with ld = cols, which is how the GEMMs below
   read them (as in linear.c).  The [task] keys and the declarations are lora_config.c's. */
#include "lora.h"

int tf_lora_index(const tf_lora *l, int lin) {
    if (!l || !l->r || !(l->targets & (1u << lin))) return -1;
    return l->first + 2 * __builtin_popcount(l->targets & ((1u << lin) - 1));
}

size_t tf_lora_acts_elems(const tf_shape *s) {
    return s->lora && s->lora->r ? (size_t)s->lora->nlin * s->Bcap * s->T * s->lora->r : 0;
}

size_t tf_lora_work_elems(const tf_shape *s) { return s->lora && s->lora->r ? (size_t)s->Bcap * s->T * s->lora->r : 0; }

void *tf_lora_h(const tf_shape *s, void *base, int lin) {
    return TF_AT(s, base, (size_t)lin * s->Bcap * s->T * s->lora->r);
}

void tf_lora_forward(const tf_shape *s, void *out, int ldo, void *h, const void *x, const void *A, const void *B, int N,
                     int I, int O) {
    const int r = s->lora->r;
    s->k->gemm(1, 0, r, N, I, 1.0f, A, I, x, I, 0.0f, h, r, s->dt);                        /* h [r x N] = A^T x */
    if (out) s->k->gemm(1, 0, O, N, r, s->lora->scale, B, r, h, r, 1.0f, out, ldo, s->dt); /* out += s B^T h */
}

void tf_lora_backward(const tf_shape *s, void *dx, void *dA, void *dB, void *dh, const void *dout, int ldo,
                      const void *x, const void *h, const void *A, const void *B, int N, int I, int O) {
    const int r = s->lora->r;
    const float sc = s->lora->scale;
    if (dB) s->k->gemm(0, 1, r, O, N, sc, h, r, dout, ldo, 1.0f, dB, r, s->dt); /* dB [r x O] += s h dout^T */
    s->k->gemm(0, 0, r, N, O, sc, B, r, dout, ldo, 0.0f, dh, r, s->dt);         /* dh [r x N] = s B dout */
    if (dA) s->k->gemm(0, 1, I, r, N, 1.0f, x, I, dh, r, 1.0f, dA, I, s->dt);   /* dA [I x r] += x dh^T */
    if (dx) s->k->gemm(0, 0, I, N, r, 1.0f, A, I, dh, r, 1.0f, dx, I, s->dt);   /* dx [I x N] += A dh */
}
