/*
 * GEMM throughput of the gpt2 task's CPU kernels (models/transformer/kernels_cpu.c: gemm, gemm_batched)
 * against raw OpenBLAS cblas_sgemm, on exactly the GEMMs one training step of the bench model
 * makes (bench/gpt2_vs_torch.sh's model: 4 layers, n_embd 256, 4 heads, sequence 128, vocab 8192,
 * batch 4, so N = 512 token rows).  Built by CMake (build/bench/gemm_throughput), run by
 * bench/gemm_throughput.sh.
 *
 * The shapes and every argument (transposes, leading dimensions, strides, beta) are copied from
 * models/transformer/block.c and linear.c (the lm_head):
 *   conv1d_forward (N, I, O):   gemm(0,0, O,N,I)  lda O, ldb I, ldc O, beta 1 (onto the bias) 1 per layer
 *   conv1d_backward:  dW        gemm(0,1, O,I,N)  lda O, ldb I, ldc O, beta 1      1 per layer
 *                     dx        gemm(1,0, I,N,O)  lda O, ldb O, ldc I, beta 0      1 per layer
 *     for c_attn (C -> 3C), attn.c_proj (C -> C), mlp.c_fc (C -> 4C), mlp.c_proj (4C -> C)
 *   lm_head: forward gemm(1,0, V,N,C), backward dW gemm(0,1, C,V,N) (beta 1), dx gemm(0,0, C,N,V)
 *   attention, per sample (B per layer), heads as one gemm_batched of NH = 4, q/k/v columns of the
 *     [T, 3C] qkv rows (ld 3C, head stride hs = 64), in causal blocks of 64 queries (keys): forward
 *     S = K^T Q, Y = V P; backward dP, dV, dQ, dK (see attention_forward/attention_backward)
 * "ours" calls tf_kernels_cpu()->gemm / ->gemm_batched (gemm is cblas_sgemm itself, so its ratio
 * is a sanity check near 1; gemm_batched runs its heads one per OpenMP thread, each sgemm single-
 * threaded inside the parallel region).  "sgemm" calls cblas_sgemm directly, a batched shape as a
 * loop of cblas_sgemm with OpenBLAS's own threading.  Threads: OMP_NUM_THREADS, as the task sees it.
 * Each (shape, implementation) is timed for at least --min-time seconds (default 0.3) after 2
 * warm-up calls, --reps times (default 3) alternating ours and sgemm; GFLOP/s = 2 m n k batch x
 * calls / time, the best of the reps (a transient disturbance does not count).
 *
 * Usage: gemm_throughput [--min-time S] [--reps R]   the table for the current thread count
 *        gemm_throughput --ceiling [--min-time S] [--reps R]
 *                       prints only cblas_sgemm's GFLOP/s (the best of the reps) on the c_attn forward shape
 *                       768 x 512 x 256 (NN, the GEMM of 2 m n k = 201 MFLOP the model makes most
 *                       often among the large ones), the "ceiling" bench/gpt2_vs_torch.sh uses
 *        gemm_throughput --ceiling --shape OxNxI
 *                       the same on another linear layer's forward, O outputs, N token rows, I
 *                       inputs (NN, beta 1, as conv1d_forward): bench/llama_vs_torch.sh's ceiling
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <omp.h>
#ifdef SHARDRUN_BLAS_BLIS
#include <blis.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"

/* the model: --model small (default, bench/gpt2_vs_torch.sh's small model) or gpt2 (GPT-2 124M, HF's
   sizes, at T = 128, batch 4) */
static int L = 4, C = 256, NH = 4, HS = 64, T = 128, B = 4, V = 8192, N = 512;

typedef struct shape {
    const char *name;
    int batched, ta, tb, m, n, k, lda, ldb, ldc;
    long long sA, sB, sC;
    int batch;
    float beta;
    int per_step; /* calls in one training step */
} shape;

/* The shapes as a table, one per line: the formatter would wrap them. */
/* clang-format off */
#define CONV(nm, I, O)                                                                    \
    {nm " fwd", 0, 0, 0, O, N, I, O, I, O, 0, 0, 0, 1, 1.0f, L},                          \
    {nm " bwd dW", 0, 0, 1, O, I, N, O, I, O, 0, 0, 0, 1, 1.0f, L},                       \
    {nm " bwd dx", 0, 1, 0, I, N, O, O, O, I, 0, 0, 0, 1, 0.0f, L}

#define TT ((long long)T * T)
static shape SHAPES[32];
static int NSHAPES;

static void set_shapes(void) {
    const shape all[] = {
    CONV("c_attn", C, 3 * C),
    CONV("attn.c_proj", C, C),
    CONV("mlp.c_fc", C, 4 * C),
    CONV("mlp.c_proj", 4 * C, C),
    {"lm_head fwd", 0, 1, 0, V, N, C, C, C, V, 0, 0, 0, 1, 0.0f, 1},
    {"lm_head bwd dW", 0, 0, 1, C, V, N, C, V, C, 0, 0, 0, 1, 1.0f, 1},
    {"lm_head bwd dx", 0, 0, 0, C, N, V, C, V, C, 0, 0, 0, 1, 0.0f, 1},
    /* the attention's query blocks of QB = 64 (T = 128: blocks at 0 and 64), each stopping at its
       last key; the key blocks of dV and dK take the queries from the block's first key on */
    {"attn fwd S=K^T Q q0", 1, 1, 0, 64, 64, HS, 3 * C, 3 * C, T, HS, HS, TT, NH, 0.0f, B * L},
    {"attn fwd S=K^T Q q64", 1, 1, 0, 128, 64, HS, 3 * C, 3 * C, T, HS, HS, TT, NH, 0.0f, B * L},
    {"attn fwd Y=V P q0", 1, 0, 0, HS, 64, 64, 3 * C, T, C, HS, TT, HS, NH, 0.0f, B * L},
    {"attn fwd Y=V P q64", 1, 0, 0, HS, 64, 128, 3 * C, T, C, HS, TT, HS, NH, 0.0f, B * L},
    {"attn bwd dP q0", 1, 1, 0, 64, 64, HS, 3 * C, C, T, HS, HS, TT, NH, 0.0f, B * L},
    {"attn bwd dP q64", 1, 1, 0, 128, 64, HS, 3 * C, C, T, HS, HS, TT, NH, 0.0f, B * L},
    {"attn bwd dQ q0", 1, 0, 0, HS, 64, 64, 3 * C, T, 3 * C, HS, TT, HS, NH, 0.0f, B * L},
    {"attn bwd dQ q64", 1, 0, 0, HS, 64, 128, 3 * C, T, 3 * C, HS, TT, HS, NH, 0.0f, B * L},
    {"attn bwd dV k0", 1, 0, 1, HS, 64, 128, C, T, 3 * C, HS, TT, HS, NH, 0.0f, B * L},
    {"attn bwd dV k64", 1, 0, 1, HS, 64, 64, C, T, 3 * C, HS, TT, HS, NH, 0.0f, B * L},
    {"attn bwd dK k0", 1, 0, 1, HS, 64, 128, 3 * C, T, 3 * C, HS, TT, HS, NH, 0.0f, B * L},
    {"attn bwd dK k64", 1, 0, 1, HS, 64, 64, 3 * C, T, 3 * C, HS, TT, HS, NH, 0.0f, B * L},
    };
    /* clang-format on */
    NSHAPES = (int)(sizeof all / sizeof all[0]);
    memcpy(SHAPES, all, sizeof all);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* elements a column-major rows x cols operand with leading dimension ld spans, over `batch` of them */
static size_t span(int rows, int cols, int ld, long long stride, int batch) {
    return (size_t)(batch - 1) * (size_t)stride + (size_t)ld * (size_t)(cols - 1) + (size_t)rows;
}

static float *random_floats(size_t n, unsigned *seed) {
    float *p = malloc(n * sizeof *p); /* malloc, as the task's cpu_alloc */
    if (!p) {
        fprintf(stderr, "gemm_throughput: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f; /* [-1, 1) */
    }
    return p;
}

typedef struct operands {
    float *A, *B, *C;
} operands;

static void call(const shape *s, int ours, const operands *o) {
    const tf_kernels *k = tf_kernels_cpu();
    if (ours && s->batched)
        k->gemm_batched(s->ta, s->tb, s->m, s->n, s->k, 1.0f, o->A, s->lda, s->sA, o->B, s->ldb, s->sB, s->beta, o->C,
                        s->ldc, s->sC, s->batch, SR_FLOAT32);
    else if (ours)
        k->gemm(s->ta, s->tb, s->m, s->n, s->k, 1.0f, o->A, s->lda, o->B, s->ldb, s->beta, o->C, s->ldc, SR_FLOAT32);
    else
        for (int i = 0; i < s->batch; i++)
            cblas_sgemm(CblasColMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->m, s->n,
                        s->k, 1.0f, o->A + i * s->sA, s->lda, o->B + i * s->sB, s->ldb, s->beta, o->C + i * s->sC,
                        s->ldc);
}

static double flops(const shape *s) { return 2.0 * s->m * s->n * s->k * s->batch; }

/* GFLOP/s of one implementation on one shape, timed for at least min_time seconds */
static double measure(const shape *s, int ours, double min_time) {
    unsigned seed = 12345;
    operands o;
    o.A = random_floats(span(s->ta ? s->k : s->m, s->ta ? s->m : s->k, s->lda, s->sA, s->batch), &seed);
    o.B = random_floats(span(s->tb ? s->n : s->k, s->tb ? s->k : s->n, s->ldb, s->sB, s->batch), &seed);
    o.C = random_floats(span(s->m, s->n, s->ldc, s->sC, s->batch), &seed);
    for (int i = 0; i < 2; i++) call(s, ours, &o);
    long long calls = 0;
    double t0 = now_s(), dt;
    do {
        call(s, ours, &o);
        calls++;
    } while ((dt = now_s() - t0) < min_time);
    free(o.A), free(o.B), free(o.C);
    return flops(s) * (double)calls / dt / 1e9;
}

int main(int argc, char **argv) {
    double min_time = 0.3;
    int ceiling_only = 0, reps = 3, so = 0, sn = 0, si = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ceiling")) ceiling_only = 1;
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            char end = 0;
            if (sscanf(argv[++i], "%dx%dx%d%c", &so, &sn, &si, &end) != 3 || so < 1 || sn < 1 || si < 1) {
                fprintf(stderr, "%s: --shape %s: expected OxNxI, three positive sizes (1536x128x576)\n", argv[0],
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc && !strcmp(argv[i + 1], "gpt2"))
            L = 12, C = 768, NH = 12, HS = 64, V = 50257, i++;
        else if (!strcmp(argv[i], "--model") && i + 1 < argc && !strcmp(argv[i + 1], "small")) i++;
        else {
            fprintf(stderr,
                    "usage: %s [--ceiling [--shape OxNxI]] [--model small|gpt2] [--min-time SECONDS] [--reps R]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!(min_time > 0) || reps < 1) {
        fprintf(stderr, "%s: --min-time and --reps must be positive\n", argv[0]);
        return 2;
    }
    if (so && !ceiling_only) {
        fprintf(stderr, "%s: --shape goes with --ceiling\n", argv[0]);
        return 2;
    }
    set_shapes();
    const shape *ceil_shape = &SHAPES[0]; /* c_attn fwd: 768 x 512 x 256, NN (small model) */
    const shape linear_fwd = {"linear fwd", 0, 0, 0, so, sn, si, so, si, so, 0, 0, 0, 1, 1.0f, 1}; /* as CONV's fwd */
    if (so) ceil_shape = &linear_fwd;
    if (ceiling_only) {
        double best = 0;
        for (int i = 0; i < reps; i++) {
            double g = measure(ceil_shape, 0, min_time);
            if (g > best) best = g;
        }
        printf("%.2f\n", best);
        return 0;
    }

    printf("model: %d layers, n_embd %d, %d heads, T %d, batch %d, vocab %d\n", L, C, NH, T, B, V);
#ifdef SHARDRUN_BLAS_BLIS
    printf("threads: OMP_NUM_THREADS=%s (omp_get_max_threads %d); BLIS %s\n",
           getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "(unset)", omp_get_max_threads(),
           bli_info_get_version_str());
#else
    printf("threads: OMP_NUM_THREADS=%s (omp_get_max_threads %d, OpenBLAS %d); %s\n",
           getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "(unset)", omp_get_max_threads(),
           openblas_get_num_threads(), openblas_get_config());
#endif
    printf("%-18s %-3s %18s %5s %8s %10s %10s %7s\n", "gemm", "op", "m x n x k", "batch", "per step", "ours", "sgemm",
           "ratio");
    double total = 0, t_ours = 0, t_sgemm = 0, best = 0, ceil_gf = 0;
    const char *best_name = "";
    for (int i = 0; i < NSHAPES; i++) {
        const shape *s = &SHAPES[i];
        double ours = 0, sg = 0;
        for (int r = 0; r < reps; r++) {
            double a = measure(s, 1, min_time), b = measure(s, 0, min_time);
            if (a > ours) ours = a;
            if (b > sg) sg = b;
        }
        double f = flops(s) * s->per_step;
        total += f;
        t_ours += f / (ours * 1e9);
        t_sgemm += f / (sg * 1e9);
        if (sg > best) best = sg, best_name = s->name;
        if (s == ceil_shape) ceil_gf = sg;
        char dims[32], op[4] = {s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', 0};
        snprintf(dims, sizeof dims, "%d x %d x %d", s->m, s->n, s->k);
        printf("%-18s %-3s %18s %5d %8d %10.1f %10.1f %7.3f\n", s->name, op, dims, s->batch, s->per_step, ours, sg,
               ours / sg);
    }
    printf("(GFLOP/s, the best of %d timings of >= %g s each; ours: tf_kernels_cpu()->gemm/gemm_batched, "
           "sgemm: cblas_sgemm, a loop of them for a batch)\n",
           reps, min_time);
    printf("one training step's GEMMs: %.3f GFLOP (%.0f FLOP per token), %.1f ms ours, %.1f ms sgemm\n", total / 1e9,
           total / N, t_ours * 1e3, t_sgemm * 1e3);
    printf("sustained (FLOP-weighted over the step): ours %.1f GFLOP/s, sgemm %.1f GFLOP/s: sustained fraction of "
           "sgemm %.3f\n",
           total / t_ours / 1e9, total / t_sgemm / 1e9, t_sgemm / t_ours);
    printf("ceiling: %.1f GFLOP/s (largest sgemm seen: %s); sgemm on %d x %d x %d NN (c_attn fwd): %.1f GFLOP/s; "
           "ours sustained = %.3f of the ceiling\n",
           best, best_name, ceil_shape->m, ceil_shape->n, ceil_shape->k, ceil_gf, total / t_ours / 1e9 / best);
    return 0;
}
