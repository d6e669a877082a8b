/* transformer lora: LoRA's arithmetic on block.h's linear layers (see lora.h).  Row-major
   [rows, cols] arrays are column-major [cols x rows] ones with ld = cols, which is how the GEMMs below
   read them (as in linear.c).  The [task] keys and the declarations are lora_config.c's. */
#include "lora.h"

#include <math.h> /* kernel_math.h uses it */

#include "kernel_math.h"

int tf_lora_index(const tf_lora *l, int block, int lin) {
    if (!l || !l->r || block < 0 || block >= l->L || !(l->block_targets[block] & (1u << lin))) return -1;
    return l->first + 2 * __builtin_popcount(l->block_targets[block] & ((1u << lin) - 1));
}

size_t tf_lora_acts_elems(const tf_shape *s) {
    return s->lora && s->lora->r ? (size_t)s->lora->nlin * s->Bcap * s->T * s->lora->r : 0;
}

size_t tf_lora_work_elems(const tf_shape *s) { return s->lora && s->lora->r ? (size_t)s->Bcap * s->T * s->lora->r : 0; }

void *tf_lora_h(const tf_shape *s, void *base, int lin) {
    return TF_AT(s, base, (size_t)lin * s->Bcap * s->T * s->lora->r);
}

uint64_t tf_lora_sample_key(uint64_t seed, uint64_t step, uint64_t sample) {
    return tf_mix64(tf_mix64(tf_mix64(seed) ^ step) ^ sample);
}

/* p * 2^53 is exact (a power-of-two scaling), so the truncation is the floor the Python reference takes */
uint64_t tf_lora_drop_threshold(double p) { return (uint64_t)(p * 9007199254740992.0); }

int tf_lora_max_in(const tf_lora *l) {
    int m = 0;
    for (int k = 0; l && l->r && k < l->nlin; k++)
        if ((l->targets & (1u << k)) && l->in[k] > m) m = l->in[k];
    return m;
}

/* y (+)= drop(x) for linear lin of the block s->drop names, over [N, I] */
static void drop(const tf_shape *s, int lin, void *y, const void *x, int N, int I, int accumulate) {
    const tf_lora_drop *d = s->drop;
    s->k->lora_dropout(y, x, N, I, s->T, d->keys, (uint32_t)(d->block * 256 + lin), d->threshold, d->keep_scale,
                       accumulate, s->dt);
}

void tf_lora_forward(const tf_shape *s, int lin, void *out, int ldo, void *h, const void *x, const void *A,
                     const void *B, int N, int I, int O) {
    const int r = s->lora->r;
    if (s->drop) { /* the adapter reads drop(x), the base linear x */
        drop(s, lin, s->drop->work, x, N, I, 0);
        x = s->drop->work;
    }
    s->k->gemm(1, 0, r, N, I, 1.0f, A, I, x, I, 0.0f, h, r, s->dt);                        /* h [r x N] = A^T x */
    if (out) s->k->gemm(1, 0, O, N, r, s->lora->scale, B, r, h, r, 1.0f, out, ldo, s->dt); /* out += s B^T h */
}

void tf_lora_backward(const tf_shape *s, int lin, void *dx, void *dA, void *dB, void *dh, const void *dout, int ldo,
                      const void *x, const void *h, const void *A, const void *B, int N, int I, int O) {
    const int r = s->lora->r;
    const float sc = s->lora->scale;
    if (dB) s->k->gemm(0, 1, r, O, N, sc, h, r, dout, ldo, 1.0f, dB, r, s->dt); /* dB [r x O] += s h dout^T */
    s->k->gemm(0, 0, r, N, O, sc, B, r, dout, ldo, 0.0f, dh, r, s->dt);         /* dh [r x N] = s B dout */
    if (!s->drop) {
        if (dA) s->k->gemm(0, 1, I, r, N, 1.0f, x, I, dh, r, 1.0f, dA, I, s->dt); /* dA [I x r] += x dh^T */
        if (dx) s->k->gemm(0, 0, I, N, r, 1.0f, A, I, dh, r, 1.0f, dx, I, s->dt); /* dx [I x N] += A dh */
        return;
    }
    void *w = s->drop->work; /* the mask drawn again from its counters: drop(x) for dA, then drop'(A dh) for dx */
    if (dA) {
        drop(s, lin, w, x, N, I, 0);
        s->k->gemm(0, 1, I, r, N, 1.0f, w, I, dh, r, 1.0f, dA, I, s->dt);
    }
    if (dx) {
        s->k->gemm(0, 0, I, N, r, 1.0f, A, I, dh, r, 0.0f, w, I, s->dt);
        drop(s, lin, dx, w, N, I, 1);
    }
}
