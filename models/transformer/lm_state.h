/*
 * transformer lm_task's insides: the state its files share (nothing here is for the families; they
 * use lm_task.h).
 *   lm_setup.c    tf_lm_create / tf_lm_destroy: [task] sizes and dtype, the model's declarations, the log lines
 *   lm_data.c     the tokenizer and the training / eval samples ([task] data keys, data_source.h)
 *   lm_kernels.c  the kernel table: CPU, or CUDA from transformer_cuda.so; the BLAS note
 *   lm_acts.c     the activation buffers of a micro-batch, the blocks' intermediates from a pool
 *   lm_dump.c     the parity dump ([task] dump: rank 0's first micro-batch for the PyTorch tests)
 *   lm_task.c     the callbacks: batch, forward, loss, backward, eval
 *
 * Activations (device): out[m] is module m's output, always kept (module m+1's input; the head's is
 * the logits, which loss() turns into their gradient in place).  inter[m]: the intermediates a
 * block's backward needs, from a pool of equal buffers (buffer_pool.h): a checkpointed block borrows
 * one during its forward and returns it at once, then again from its recompute to its backward.
 */
#ifndef TF_LM_STATE_H
#define TF_LM_STATE_H

#include <stdint.h>

#include "buffer_pool.h"
#include "data_source.h"
#include "dataset.h"
#include "kernels.h"
#include "lm_task.h"
#include "lora.h"
#include "tokenizer.h"
#include "tokenizer_saved.h"

enum { M_EMBED, M_BLOCK, M_LNF, M_HEAD };

typedef struct tf_lm {
    const tf_lm_arch *arch;
    sr_ctx *ctx;
    tf_lm_dims d; /* layers, heads, channels, positions, vocabulary */
    int T;        /* tokens per sample */
    const tf_kernels *k;
    sr_dtype dt;  /* compute dtype (fp32 on the CPU) */
    size_t es;    /* its element size */
    tf_lora lora; /* [task] lora_*: r = 0 when off */
    /* LoRA dropout (lora.h, "Dropout"), when lora.dropout > 0: [task] seed, and drop's threshold,
       keep_scale, keys (drop_keys_d) and work set up for every training call of a block */
    uint64_t seed;
    tf_lora_drop drop;

    /* data (lm_data.c) */
    tf_tokenizer *tok;
    const char *tok_desc; /* for the log line: which tokenizer */
    tf_saved_tok tok_src; /* its files (the job's keys, or the starting checkpoint's), which checkpoints copy */
    const char *tok_from; /* "init_weights" or "resume_from_checkpoint" when tok_src is that folder's, else NULL */
    const tf_data_source *source;
    tf_dataset data;
    tf_dataset eval;       /* held-out samples (eval_data or validation_split_percentage); n = 0: none */
    const char *eval_from; /* for the log line: "eval_data" or "validation_split_percentage = N" */
    char eval_desc[64];
    char *dump_path;

    /* the micro-batch */
    int B, Bcap;
    int32_t *ids_h, *tgt_h; /* host: input ids, targets (-1 = none) */
    int32_t *ids_d, *tgt_d; /* device copies */
    long long ntargets;
    long long samples_read, sample_index_sum; /* reported: which part of the data this rank trained on */
    int64_t *samples_h;                       /* with LoRA dropout: the training micro-batch's sample indices */
    uint32_t *drop_keys_h, *drop_keys_d;      /* and their keys for the step (lora.h), host and device */
    float *losses_d, *losses_h;

    /* activations (device; see the top of this file) */
    int nmod;
    void *embed_acts; /* the embedding's intermediates (arch->embed_acts_bytes; NULL when 0) */
    void **out;
    void **inter;
    tf_buffer_pool pool; /* of inter[]'s buffers; its held_peak is reported */
    float *lnf_stats;    /* ln_f's mean and rstd (2N floats) */
    void *dy, *dx;       /* gradient of the current module's output / input, N*C */
    void *work;          /* block backward temporaries */
    int next_fwd, next_bwd;
} tf_lm;

/* "<task>: error: " + the message, to stderr */
void tf__lm_error(const tf_lm *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline int tf__lm_kind(const tf_lm *g, int m) {
    return m == 0 ? M_EMBED : m <= g->d.L ? M_BLOCK : m == g->d.L + 1 ? M_LNF : M_HEAD;
}

/* a block's intermediates and its backward's scratch, in bytes: block.h's or the family's */
static inline size_t tf__lm_block_acts_bytes(const tf_lm *g, const tf_shape *s) {
    return g->arch->layers ? g->arch->layers->block_acts_bytes(s) : tf_block_acts_bytes(s);
}
static inline size_t tf__lm_block_work_bytes(const tf_lm *g, const tf_shape *s) {
    return g->arch->layers ? g->arch->layers->block_work_bytes(s) : tf_block_work_bytes(s);
}

static inline tf_shape tf__lm_shape(const tf_lm *g) {
    return (tf_shape){g->k, g->dt, g->es, g->B, g->Bcap, g->T, g->d.C, g->d.NH, g->lora.r ? &g->lora : NULL, NULL, 0};
}

/* [task] key as an int in [lo, hi] (tf_lm_config_int under the task's name) */
int tf__lm_config_int(const tf_lm *g, const char *key, long long def, long long lo, long long hi, int *out);

/* lm_data.c: the tokenizer ([task] tokenizer_json, or vocab_json + merges_txt, or bytes), max_length
   into g->T, the training samples and the eval samples.  0, or -1 after an error naming the key. */
int tf__lm_load_data(tf_lm *g);
/* lm_data.c: every token id of the data below g->d.V (token shards are read through, each rank its
   share; collective over the world group, after g->k is set): 0, or -1 on every rank after an error
   naming the file and offset (printed by the rank that found it). */
int tf__lm_check_vocab(tf_lm *g);

/* lm_files.c: the files every FULL checkpoint holds beside the weights (sr_model_file): the
   tokenizer's (tokenizer.json, or vocab.json and merges.txt, byte for byte), HF's tokenizer_config.json
   for them, and config.json (the family's members, vocab_size, the end of text as bos/eos_token_id,
   and shardrun_tokenizer, which says which tokenizer trained the model: byte-level too).  0 or -1. */
int tf__lm_declare_files(tf_lm *g, sr_model *model);

/* lm_kernels.c: the CPU table, or (cuda) the one in transformer_cuda.so next to the task; NULL
   after an error saying why.  Profiled when SHARDRUN_PROFILE asks. */
const tf_kernels *tf__lm_kernels(const tf_lm *g, int cuda);
/* The CPU BLAS, its threads and kernels, for the start-up line: " (OpenBLAS, 8 threads), its
   Haswell kernels" */
void tf__lm_cpu_desc(char *out, size_t len);
/* A note when the CPU's BLAS runs slower kernels than the CPU has (rank 0, CPU runs) */
void tf__lm_blas_note(const tf_lm *g);

/* lm_acts.c: the buffers of micro-batches of up to B samples (g->Bcap = B): 0, or -1 after an error
   saying what to lower.  free: all of them (Bcap = 0). */
int tf__lm_alloc_acts(tf_lm *g, int B);
void tf__lm_free_acts(tf_lm *g);

/* lm_task.c: the eval callbacks (sr_model_eval_data), over g->eval */
extern const sr_model_eval tf__lm_eval;

/* lm_dump.c: writes the micro-batch's input ids, labels, logits (host, fp32) and loss to
   g->dump_path: 0, or -1 after saying why. */
int tf__lm_write_dump(const tf_lm *g, const float *logits, float loss);

#endif
