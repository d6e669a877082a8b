/*
 * transformer kernels, CUDA: the "cuda" table of kernels.h, built into transformer_cuda.so, which
 * lm_task.c opens (dlsym "tf_kernels_cuda") only when a run's device is a GPU.
 *
 * Thin on purpose, because no GPU runs it where it is written: every per-element formula comes
 * from kernel_math.h and every bf16/fp16 conversion from shardrun/half.h, the same functions the CPU
 * table calls and its tests check; GEMMs go to cuBLAS with the CPU's column-major arguments.
 *
 * Lifecycle: everything runs on the current device's default stream (stream 0), in call order.
 * The cuBLAS handle is created on the first gemm.  Kernels and cuBLAS calls cannot return errors,
 * so the first failure is kept (g_err) and sync() prints it and answers -1 -- on that call and
 * every later one, since what the device computed afterwards cannot be trusted.
 *
 * Element types: kernels are templates over the storage type E (float, bf16_t, f16_t); they load
 * into float, compute in float and round once when storing.  Every reduction (LayerNorm
 * statistics, softmax, cross-entropy, column sums for bias/LayerNorm/embedding gradients) runs in
 * a fixed order, so a run is bitwise repeatable: no atomics anywhere.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mutex>
#include <stdio.h>

#include "kernels.h"
#include "kernel_math.h"

namespace {

/* ---- errors ----------------------------------------------------------------------------------- */

char g_err[512]; /* "<call>: <error string>" of the first failure, empty while all is well */

void fail(const char *call, const char *msg) {
    if (!g_err[0]) snprintf(g_err, sizeof g_err, "%s: %s", call, msg);
}
bool cuda_ok(cudaError_t rc, const char *call) {
    if (rc != cudaSuccess) fail(call, cudaGetErrorString(rc));
    return rc == cudaSuccess;
}
bool blas_ok(cublasStatus_t rc, const char *call) {
    if (rc != CUBLAS_STATUS_SUCCESS) fail(call, cublasGetStatusString(rc));
    return rc == CUBLAS_STATUS_SUCCESS;
}
int report(void) {
    fprintf(stderr, "gpt2 (cuda): %s\n", g_err);
    return -1;
}

/* ---- element types ---------------------------------------------------------------------------- */

/* bf16 and fp16 as bits: half.h converts them (round to nearest even, like the CPU table). */
struct bf16_t {
    uint16_t u;
};
struct f16_t {
    uint16_t u;
};
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(bf16_t x) { return sr_bf16_to_f32(x.u); }
__device__ __forceinline__ float to_f(f16_t x) { return sr_f16_to_f32(x.u); }
__device__ __forceinline__ void put(float &d, float v) { d = v; }
__device__ __forceinline__ void put(bf16_t &d, float v) { d.u = sr_f32_to_bf16(v); }
__device__ __forceinline__ void put(f16_t &d, float v) { d.u = sr_f32_to_f16(v); }

/* Kernels take untyped pointers (as the table does) and index them as E. */
template <class E> __device__ __forceinline__ float ld(const void *p, size_t i) { return to_f(((const E *)p)[i]); }
template <class E> __device__ __forceinline__ void st(void *p, size_t i, float v) { put(((E *)p)[i], v); }
/* "+=" in the element type: one rounding per call, as on the CPU */
template <class E> __device__ __forceinline__ void acc(void *p, size_t i, float v) { st<E>(p, i, ld<E>(p, i) + v); }

/* ---- launch helpers --------------------------------------------------------------------------- */

constexpr int THREADS = 256;
constexpr int ROWS_PER_BLOCK = THREADS / 32; /* kernels that give each row one warp */
constexpr int CE_THREADS = 1024;             /* cross-entropy: one block per row of V logits */

#define GRID_STRIDE(i, n)                                                                                              \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

unsigned grid_for(size_t n) { /* elementwise kernels: grid-stride beyond 65536 blocks */
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 65536 ? b : 65536);
}
unsigned grid_rows(size_t rows) { return (unsigned)((rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK); }

/* Instantiates `kern` for dt and launches it on stream 0; an empty grid launches nothing (CUDA
   rejects it).  Launch errors are recorded under the kernel's name. */
#define LAUNCH(dt, kern, grid, block, ...)                                                                             \
    do {                                                                                                               \
        if ((grid) == 0) break;                                                                                        \
        switch (dt) {                                                                                                  \
        case SR_FLOAT32: kern<float><<<(grid), (block)>>>(__VA_ARGS__); break;                                         \
        case SR_BFLOAT16: kern<bf16_t><<<(grid), (block)>>>(__VA_ARGS__); break;                                       \
        case SR_FLOAT16: kern<f16_t><<<(grid), (block)>>>(__VA_ARGS__); break;                                         \
        default: fail(#kern, "unsupported dtype (fp32, bf16, fp16 only)"); break;                                      \
        }                                                                                                              \
        cuda_ok(cudaGetLastError(), #kern);                                                                            \
    } while (0)

/* Butterfly reductions: every lane ends with the same value (a + b == b + a exactly). */
template <bool MAX> __device__ __forceinline__ float warp_reduce(float v) {
    for (int o = 16; o > 0; o /= 2) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? fmaxf(v, u) : v + u;
    }
    return v;
}
/* Whole block (blockDim.x a multiple of 32); every thread gets the result. */
template <bool MAX> __device__ float block_reduce(float v) {
    __shared__ float part[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    v = warp_reduce<MAX>(v);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < nwarps ? part[lane] : (MAX ? -INFINITY : 0.0f);
    v = warp_reduce<MAX>(v); /* each warp reduces the partials itself: no broadcast step */
    __syncthreads();         /* all have read part[] before a following call rewrites it */
    return v;
}

/* ---- kernels ---------------------------------------------------------------------------------- */

template <class E>
__global__ void k_embed_fwd(void *out, const int32_t *ids, const void *wte, const void *wpe, int T, int C, size_t n) {
    GRID_STRIDE(i, n) {
        size_t row = i / C, c = i % C;
        float pos = wpe ? ld<E>(wpe, (row % T) * C + c) : 0.0f;
        st<E>(out, i, ld<E>(wte, (size_t)ids[row] * C + c) + pos);
    }
}

/* dwpe[t, c] += sum over b, one thread per (t, c), b in order. */
template <class E> __global__ void k_embed_bwd_wpe(void *dwpe, const void *dout, int B, int T, int C) {
    GRID_STRIDE(i, (size_t)T * C) {
        float s = 0.0f;
        for (int b = 0; b < B; b++) s += ld<E>(dout, (size_t)b * T * C + i);
        acc<E>(dwpe, i, s);
    }
}

/* dwte[id, :] += dout rows of every position holding id.  A token may occur at many positions, so
   scattering rows would race (float atomics: order-dependent sums; bf16 atomics: a rounding per
   add).  Instead block r (one per position) works only if r is the first position holding its id:
   it then sums, in float and in position order, the rows of all positions holding that id and adds
   the total once.  Cost: each block scans the N ids; fine next to the GEMMs. */
template <class E> __global__ void k_embed_bwd_wte(void *dwte, const int32_t *ids, const void *dout, int N, int C) {
    int r = blockIdx.x, id = ids[r];
    int seen = 0;
    for (int q = threadIdx.x; q < r; q += blockDim.x) seen |= ids[q] == id;
    if (__syncthreads_or(seen)) return; /* a block of an earlier position adds this row */
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float s = 0.0f;
        for (int q = r; q < N; q++)
            if (ids[q] == id) s += ld<E>(dout, (size_t)q * C + c);
        acc<E>(dwte, (size_t)id * C + c, s);
    }
}

/* One warp per row; the variance is the two-pass mean of squared deviations. */
template <class E>
__global__ void k_layernorm_fwd(void *out, float *mean, float *rstd, const void *x, const void *w, const void *b, int N,
                                int C) {
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return; /* the whole warp leaves together, so the shuffles stay full-warp */
    size_t base = (size_t)row * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += ld<E>(x, base + c);
    float m = warp_reduce<false>(s) / C;
    float v = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float d = ld<E>(x, base + c) - m;
        v += d * d;
    }
    float r = tf_ln_rstd(warp_reduce<false>(v) / C);
    if (lane == 0) mean[row] = m, rstd[row] = r;
    for (int c = lane; c < C; c += 32)
        st<E>(out, base + c, tf_ln_norm(ld<E>(x, base + c), m, r) * ld<E>(w, c) + ld<E>(b, c));
}

/* dx += ... , one warp per row. */
template <class E>
__global__ void k_layernorm_bwd_dx(void *dx, const void *dout, const void *x, const float *mean, const float *rstd,
                                   const void *w, int N, int C) {
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    size_t base = (size_t)row * C;
    float m = mean[row], r = rstd[row], a = 0.0f, b = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float dnorm = ld<E>(dout, base + c) * ld<E>(w, c);
        a += dnorm;
        b += dnorm * tf_ln_norm(ld<E>(x, base + c), m, r);
    }
    float mean_dnorm = warp_reduce<false>(a) / C, mean_dnorm_norm = warp_reduce<false>(b) / C;
    for (int c = lane; c < C; c += 32) {
        float dnorm = ld<E>(dout, base + c) * ld<E>(w, c);
        acc<E>(dx, base + c, tf_ln_dx(dnorm, tf_ln_norm(ld<E>(x, base + c), m, r), mean_dnorm, mean_dnorm_norm, r));
    }
}

/* Column sums over N rows of [N, C], deterministic: a block is 32 columns x 32 row slices; thread
   (x, y) adds rows y, y+32, ... in order, then thread (x, 0) adds the 32 slices in order.  Sums
   into db: dout (BIAS: a bias gradient); dout, and dout * norm(x) into dw (LN: LayerNorm's dw/db);
   or gelu'(x) * dout, which it also writes to dw as the gradient dx (GELU: gelu_backward with the
   bias gradient; the element is read before it is written by the same thread, so dx may alias
   dout). */
constexpr int SLICES = 32;
enum colsum_kind { CS_BIAS, CS_LN, CS_GELU };
template <class E, colsum_kind K>
__device__ void colsum(void *dw, void *db, const void *dout, const void *x, const float *mean, const float *rstd, int N,
                       int C) {
    __shared__ float sw[SLICES][32], sb[SLICES][32];
    int c = blockIdx.x * 32 + threadIdx.x;
    float aw = 0.0f, ab = 0.0f;
    if (c < C)
        for (int r = threadIdx.y; r < N; r += SLICES) {
            size_t i = (size_t)r * C + c;
            float d = ld<E>(dout, i);
            if constexpr (K == CS_GELU) {
                d = tf_gelu_grad(ld<E>(x, i)) * d;
                st<E>(dw, i, d); /* summed unrounded, as the fp32 CPU table sums it */
            }
            ab += d;
            if constexpr (K == CS_LN) aw += d * tf_ln_norm(ld<E>(x, i), mean[r], rstd[r]);
        }
    sw[threadIdx.y][threadIdx.x] = aw;
    sb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y != 0 || c >= C) return;
    for (int s = 1; s < SLICES; s++) aw += sw[s][threadIdx.x], ab += sb[s][threadIdx.x];
    if constexpr (K == CS_LN) {
        if (dw) acc<E>(dw, c, aw); /* NULL: a frozen LayerNorm weight (shardrun/model.h) */
    }
    if (db) acc<E>(db, c, ab);
}
template <class E>
__global__ void k_layernorm_bwd_dwdb(void *dw, void *db, const void *dout, const void *x, const float *mean,
                                     const float *rstd, int N, int C) {
    colsum<E, CS_LN>(dw, db, dout, x, mean, rstd, N, C);
}
template <class E> __global__ void k_bias_bwd(void *dbias, const void *dout, int N, int O) {
    colsum<E, CS_BIAS>(nullptr, dbias, dout, nullptr, nullptr, nullptr, N, O);
}
template <class E>
__global__ void k_gelu_bwd_bias(void *dx, void *dbias, const void *x, const void *dout, int N, int O) {
    colsum<E, CS_GELU>(dx, dbias, dout, x, nullptr, nullptr, N, O);
}

/* out = bias + res, either may be missing; res may alias out (one thread reads, then writes, i) */
template <class E> __global__ void k_bias_fill(void *out, const void *bias, const void *res, int O, size_t n) {
    GRID_STRIDE(i, n) st<E>(out, i, (bias ? ld<E>(bias, i % O) : 0.0f) + (res ? ld<E>(res, i) : 0.0f));
}

/* The elementwise kernels read index i and write index i in one thread, so aliasing is safe. */
template <class E> __global__ void k_gelu_fwd(void *out, const void *x, size_t n) {
    GRID_STRIDE(i, n) st<E>(out, i, tf_gelu(ld<E>(x, i)));
}
template <class E> __global__ void k_gelu_bwd(void *dx, const void *x, const void *dout, size_t n) {
    GRID_STRIDE(i, n) st<E>(dx, i, tf_gelu_grad(ld<E>(x, i)) * ld<E>(dout, i));
}
template <class E> __global__ void k_add(void *out, const void *a, const void *b, size_t n) {
    GRID_STRIDE(i, n) st<E>(out, i, ld<E>(a, i) + ld<E>(b, i));
}

/* LoRA dropout: one thread per element; each recomputes its row's key (two hashes), which costs
   less than a pass to store them */
template <class E>
__global__ void k_lora_dropout(void *y, const void *x, int F, int T, const uint32_t *keys, uint32_t site,
                               uint64_t threshold, float keep_scale, int accumulate, size_t n) {
    GRID_STRIDE(j, n) {
        const size_t row = j / (size_t)F;
        const int i = (int)(j % (size_t)F), b = (int)(row / (size_t)T);
        const uint64_t key = tf_drop_row_key(keys[2 * b] | ((uint64_t)keys[2 * b + 1] << 32), (int)(row % T), site);
        const float v = tf_drop_factor(key, i, threshold, keep_scale) * ld<E>(x, j);
        st<E>(y, j, accumulate ? ld<E>(y, j) + v : v);
    }
}

/* Causal softmax, one warp per row of T (row t of its matrix uses columns 0..t).  The last pass
   recomputes each exponential from S: with P aliasing S, a lane reads S[j] just before it writes
   P[j], and no other lane touches j. */
template <class E>
__global__ void k_softmax_fwd(void *P, const void *S, int T, float scale, int alibi_heads, size_t rows) {
    size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, base = row * T;
    int lane = threadIdx.x % 32, t = (int)(row % T);
    if (row >= rows) return;
    float m = alibi_heads ? tf_alibi_slope((int)(row / T % alibi_heads), alibi_heads) : 0.0f;
    float mx = -INFINITY, sum = 0.0f;
    for (int j = lane; j <= t; j += 32) mx = fmaxf(mx, scale * ld<E>(S, base + j) + m * (float)j);
    mx = warp_reduce<true>(mx);
    for (int j = lane; j <= t; j += 32) sum += tf_exp(scale * ld<E>(S, base + j) + m * (float)j - mx);
    float inv = 1.0f / warp_reduce<false>(sum);
    for (int j = lane; j < T; j += 32)
        st<E>(P, base + j, j <= t ? tf_exp(scale * ld<E>(S, base + j) + m * (float)j - mx) * inv : 0.0f);
}

template <class E>
__global__ void k_softmax_bwd(void *dS, const void *P, const void *dP, int T, float scale, size_t rows) {
    size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32, base = row * T;
    int lane = threadIdx.x % 32, t = (int)(row % T);
    if (row >= rows) return;
    float dot = 0.0f;
    for (int j = lane; j <= t; j += 32) dot += ld<E>(P, base + j) * ld<E>(dP, base + j);
    dot = warp_reduce<false>(dot);
    for (int j = lane; j < T; j += 32)
        st<E>(dS, base + j, j <= t ? tf_softmax_grad(ld<E>(P, base + j), ld<E>(dP, base + j), dot, scale) : 0.0f);
}

/* One block per row of V logits, two passes over it: each thread's online (max, sum of
   exponentials) over its logits (tf_softmax_merge), the block's max, each thread's sum rescaled
   to it and added up; the loss; then the gradients in place. */
template <class E>
__global__ void k_cross_entropy(void *logits, float *losses, const int32_t *targets, int V, float dscale) {
    size_t base = (size_t)blockIdx.x * V;
    int tgt = targets[blockIdx.x];
    if (tgt < 0 || tgt >= V) { /* -1: ignored (any other out-of-range target is treated alike rather
                                  than read out of bounds) -- the whole block takes this branch */
        for (int v = threadIdx.x; v < V; v += blockDim.x) st<E>(logits, base + v, 0.0f);
        if (threadIdx.x == 0) losses[blockIdx.x] = 0.0f;
        return;
    }
    float lt = ld<E>(logits, base + tgt); /* read before any thread overwrites the row */
    float m = 0.0f, s = 0.0f;
    for (int v = threadIdx.x; v < V; v += blockDim.x) tf_softmax_merge(&m, &s, ld<E>(logits, base + v), 1.0f);
    float mx = block_reduce<true>(s > 0.0f ? m : -INFINITY);
    /* each thread's sum rescaled to the row's max; the barriers also order every read above before
       the writes below */
    float sum = block_reduce<false>(s > 0.0f ? s * tf_exp(m - mx) : 0.0f);
    if (threadIdx.x == 0) losses[blockIdx.x] = logf(sum) - (lt - mx);
    float inv = 1.0f / sum;
    for (int v = threadIdx.x; v < V; v += blockDim.x)
        st<E>(logits, base + v, tf_ce_grad(tf_exp(ld<E>(logits, base + v) - mx), inv, v == tgt, dscale));
}

/* attention_cached: one block per (query, head) pair, r = i * NH + h.  The scores go to scratch
   (row r, scaled), the block finds their max and the sum of exponentials, then each thread owns
   output dimensions and adds the keys in order. */
template <class E>
__global__ void k_attention_cached(void *y, const void *q, int ldq, const void *kc, const void *vc, int pos0, int C,
                                   int NH, float scale, float *scratch) {
    int r = blockIdx.x, i = r / NH, h = r % NH, hs = C / NH, len = pos0 + i + 1;
    float *s = scratch + (size_t)r * (pos0 + gridDim.x / NH);
    size_t qo = (size_t)i * ldq + (size_t)h * hs;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
        float dot = 0.0f;
        for (int d = 0; d < hs; d++) dot += ld<E>(q, qo + d) * ld<E>(kc, (size_t)j * C + (size_t)h * hs + d);
        s[j] = scale * dot;
        mx = fmaxf(mx, s[j]);
    }
    mx = block_reduce<true>(mx);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < len; j += blockDim.x) sum += (s[j] = tf_exp(s[j] - mx));
    float inv = 1.0f / block_reduce<false>(sum); /* its barriers order the writes of s before the reads */
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        float acc_ = 0.0f;
        for (int j = 0; j < len; j++) acc_ += s[j] * inv * ld<E>(vc, (size_t)j * C + (size_t)h * hs + d);
        st<E>(y, (size_t)i * C + (size_t)h * hs + d, acc_);
    }
}

/* ---- the table's functions -------------------------------------------------------------------- */

void *dev_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 256) != cudaSuccess) { /* 256: NULL must mean out of memory */
        cudaGetLastError(); /* the caller reports it; don't let a later launch check take it for its own */
        return NULL;
    }
    return p;
}
void dev_free(void *p) {
    if (p) cuda_ok(cudaFree(p), "cudaFree");
}
void dev_zero(void *p, size_t bytes) {
    if (bytes) cuda_ok(cudaMemsetAsync(p, 0, bytes, 0), "cudaMemsetAsync");
}
int ids_upload(int32_t *dev_dst, const int32_t *host_src, size_t n) {
    if (!n || cuda_ok(cudaMemcpy(dev_dst, host_src, n * sizeof *host_src, cudaMemcpyHostToDevice), "cudaMemcpy (ids)"))
        return 0;
    return report();
}
int floats_download(float *host_dst, const float *dev_src, size_t n) {
    if (!n ||
        cuda_ok(cudaMemcpy(host_dst, dev_src, n * sizeof *dev_src, cudaMemcpyDeviceToHost), "cudaMemcpy (floats)"))
        return 0;
    return report();
}
/* The model copies activations only, in the compute dtype (an int64 path here had no caller). */
void dev_copy(void *dst, const void *src, size_t n, sr_dtype dt) {
    if (dt != SR_FLOAT32 && dt != SR_FLOAT16 && dt != SR_BFLOAT16) {
        fail("copy", "unsupported dtype (fp32, bf16, fp16 only)");
        return;
    }
    size_t size = dt == SR_FLOAT32 ? 4 : 2;
    if (n && dst != src) cuda_ok(cudaMemcpyAsync(dst, src, n * size, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync");
}
int dev_sync(void) {
    cuda_ok(cudaStreamSynchronize(0), "cudaStreamSynchronize");
    return g_err[0] ? report() : 0;
}

/* The handle belongs to the device current at the first gemm (a process drives one device). */
cublasHandle_t blas(void) {
    static cublasHandle_t handle;
    static std::once_flag once;
    std::call_once(once, [] {
        if (!blas_ok(cublasCreate(&handle), "cublasCreate")) handle = NULL;
    });
    return handle;
}
bool blas_type(sr_dtype dt, cudaDataType *t) {
    switch (dt) {
    case SR_FLOAT32: *t = CUDA_R_32F; return true;
    case SR_BFLOAT16: *t = CUDA_R_16BF; return true;
    case SR_FLOAT16: *t = CUDA_R_16F; return true;
    default: fail("gemm", "unsupported dtype (fp32, bf16, fp16 only)"); return false;
    }
}
cublasOperation_t op(int trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

/* Compute type 32F: float accumulation for every dtype, and for fp32 no TF32 (the default math
   mode), so fp32 GPU runs stay comparable with the CPU. */
void gemm(int transa, int transb, int m, int n, int k, float alpha, const void *A, int lda, const void *B, int ldb,
          float beta, void *C, int ldc, sr_dtype dt) {
    cublasHandle_t h = blas();
    cudaDataType t;
    if (!h || !blas_type(dt, &t)) return;
    blas_ok(cublasGemmEx(h, op(transa), op(transb), m, n, k, &alpha, A, t, lda, B, t, ldb, &beta, C, t, ldc,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
}
void gemm_batched(int transa, int transb, int m, int n, int k, float alpha, const void *A, int lda, long long strideA,
                  const void *B, int ldb, long long strideB, float beta, void *C, int ldc, long long strideC, int batch,
                  sr_dtype dt) {
    cublasHandle_t h = blas();
    cudaDataType t;
    if (!h || !blas_type(dt, &t)) return;
    blas_ok(cublasGemmStridedBatchedEx(h, op(transa), op(transb), m, n, k, &alpha, A, t, lda, strideA, B, t, ldb,
                                       strideB, &beta, C, t, ldc, strideC, batch, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx");
}

void embed_forward(void *out, const int32_t *ids, const void *wte, const void *wpe, int B, int T, int C, sr_dtype dt) {
    size_t n = (size_t)B * T * C;
    LAUNCH(dt, k_embed_fwd, grid_for(n), THREADS, out, ids, wte, wpe, T, C, n);
}
void embed_backward(void *dwte, void *dwpe, const int32_t *ids, const void *dout, int B, int T, int C, sr_dtype dt) {
    if (dwpe) LAUNCH(dt, k_embed_bwd_wpe, grid_for((size_t)T * C), THREADS, dwpe, dout, B, T, C);
    int threads = C <= 32 ? 32 : C < 1024 ? (C + 31) / 32 * 32 : 1024; /* one column per thread when C allows */
    if (dwte) LAUNCH(dt, k_embed_bwd_wte, (unsigned)(B * T), threads, dwte, ids, dout, B * T, C); /* NULL: frozen */
}
void layernorm_forward(void *out, float *mean, float *rstd, const void *x, const void *w, const void *b, int N, int C,
                       sr_dtype dt) {
    LAUNCH(dt, k_layernorm_fwd, grid_rows(N), THREADS, out, mean, rstd, x, w, b, N, C);
}
void layernorm_backward(void *dx, void *dw, void *db, const void *dout, const void *x, const float *mean,
                        const float *rstd, const void *w, int N, int C, sr_dtype dt) {
    LAUNCH(dt, k_layernorm_bwd_dx, grid_rows(N), THREADS, dx, dout, x, mean, rstd, w, N, C);
    if (dw || db) /* both NULL: a frozen LayerNorm */
        LAUNCH(dt, k_layernorm_bwd_dwdb, (unsigned)((C + 31) / 32), dim3(32, SLICES), dw, db, dout, x, mean, rstd, N,
               C);
}
void bias_fill(void *out, const void *bias, const void *res, int N, int O, sr_dtype dt) {
    size_t n = (size_t)N * O;
    LAUNCH(dt, k_bias_fill, grid_for(n), THREADS, out, bias, res, O, n);
}
void bias_backward(void *dbias, const void *dout, int N, int O, sr_dtype dt) {
    LAUNCH(dt, k_bias_bwd, (unsigned)((O + 31) / 32), dim3(32, SLICES), dbias, dout, N, O);
}
void gelu_forward(void *out, const void *x, size_t n, sr_dtype dt) {
    LAUNCH(dt, k_gelu_fwd, grid_for(n), THREADS, out, x, n);
}
void gelu_backward(void *dx, void *dbias, const void *x, const void *dout, int N, int O, sr_dtype dt) {
    size_t n = (size_t)N * O;
    if (dbias) LAUNCH(dt, k_gelu_bwd_bias, (unsigned)((O + 31) / 32), dim3(32, SLICES), dx, dbias, x, dout, N, O);
    else LAUNCH(dt, k_gelu_bwd, grid_for(n), THREADS, dx, x, dout, n);
}
void add(void *out, const void *a, const void *b, size_t n, sr_dtype dt) {
    LAUNCH(dt, k_add, grid_for(n), THREADS, out, a, b, n);
}
void softmax_causal_forward(void *P, const void *S, int T, float scale, int alibi_heads, int count, sr_dtype dt) {
    size_t rows = (size_t)count * T;
    LAUNCH(dt, k_softmax_fwd, grid_rows(rows), THREADS, P, S, T, scale, alibi_heads, rows);
}
void softmax_causal_backward(void *dS, const void *P, const void *dP, int T, float scale, int count, sr_dtype dt) {
    size_t rows = (size_t)count * T;
    LAUNCH(dt, k_softmax_bwd, grid_rows(rows), THREADS, dS, P, dP, T, scale, rows);
}
void cross_entropy(void *logits, float *losses, const int32_t *targets, int N, int V, float dscale, sr_dtype dt) {
    LAUNCH(dt, k_cross_entropy, (unsigned)N, CE_THREADS, logits, losses, targets, V, dscale);
}
/* cuBLAS takes a one-column gemm as it comes */
void gemv(int transa, int m, int k, float alpha, const void *A, int lda, const void *x, float beta, void *y,
          sr_dtype dt) {
    gemm(transa, 0, m, 1, k, alpha, A, lda, x, k, beta, y, m, dt);
}
void attention_cached(void *y, const void *q, int ldq, const void *kc, const void *vc, int pos0, int nq, int C, int NH,
                      float scale, float *scratch, sr_dtype dt) {
    LAUNCH(dt, k_attention_cached, (unsigned)(nq * NH), THREADS, y, q, ldq, kc, vc, pos0, C, NH, scale, scratch);
}

void lora_dropout(void *y, const void *x, int N, int F, int T, const uint32_t *keys, uint32_t site, uint64_t threshold,
                  float keep_scale, int accumulate, sr_dtype dt) {
    size_t n = (size_t)N * F;
    LAUNCH(dt, k_lora_dropout, grid_for(n), THREADS, y, x, F, T, keys, site, threshold, keep_scale, accumulate, n);
}

/* In the declaration order of tf_kernels (C++17 has no designated initialisers). */
const tf_kernels table = {
    "cuda",
    (1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16),
    dev_alloc,
    dev_free,
    dev_zero,
    ids_upload,
    floats_download,
    dev_sync,
    dev_copy,
    gemm,
    gemm_batched,
    embed_forward,
    embed_backward,
    layernorm_forward,
    layernorm_backward,
    bias_fill,
    bias_backward,
    gelu_forward,
    gelu_backward,
    add,
    softmax_causal_forward,
    softmax_causal_backward,
    cross_entropy,
    gemv,
    attention_cached,
    lora_dropout,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const tf_kernels *tf_kernels_cuda(void) { return &table; }
