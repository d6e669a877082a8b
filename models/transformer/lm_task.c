/*
 * transformer lm_task: the model-task callbacks every decoder family shares (lm_task.h): a
 * micro-batch's samples in, each module's forward, the loss, each module's backward; the eval
 * batches.  The state they work on, and the files that set it up, are lm_state.h's.
 */
#include <stdlib.h>
#include <string.h>

#include "lm_state.h"
#include "linear.h"

int64_t tf_lm_num_samples(void *state) { return ((tf_lm *)state)->data.n; }

/* ---- batch ------------------------------------------------------------------------------------- */

/* Loads samples of d; *real: their real tokens; g->ntargets: the tokens they predict. */
static int load_batch(tf_lm *g, const tf_dataset *d, const int64_t *samples, int n, long long *real_out) {
    if (n <= 0) return -1;
    if (n > g->Bcap && tf__lm_alloc_acts(g, n) != 0) return -1;
    const int T = g->T;
    long long real = 0, targets = 0;
    for (int b = 0; b < n; b++) {
        if (samples[b] < 0 || samples[b] >= d->n) {
            tf__lm_error(g, "%ssample index %lld out of range [0, %lld)\n", d == &g->eval ? "eval " : "",
                         (long long)samples[b], d->n);
            return -1;
        }
        int32_t *ids = g->ids_h + (size_t)b * T;
        int len;
        char err[1024];
        if (tf_dataset_sample(d, samples[b], ids, &len, err, sizeof err) != 0) {
            tf__lm_error(g, "%s\n", err);
            return -1;
        }
        if (d->shards) /* checked before step 0; a shard rewritten since must not index past the embedding */
            for (int t = 0; t < T; t++)
                if (ids[t] < 0 || ids[t] >= g->d.V) {
                    tf__lm_error(g,
                                 "sample %lld holds token id %d, not below the vocabulary of %d: a token shard "
                                 "changed while training (do not rewrite shards a run reads)\n",
                                 (long long)samples[b], ids[t], g->d.V);
                    return -1;
                }
        for (int t = 0; t < T; t++) /* HF: labels = input_ids, -100 on padding, shifted inside the model */
            g->tgt_h[(size_t)b * T + t] = t + 1 < len ? ids[t + 1] : -1;
        real += len;
        targets += len > 1 ? len - 1 : 0;
    }
    size_t N = (size_t)n * T;
    if (g->k->ids_upload(g->ids_d, g->ids_h, N) != 0 || g->k->ids_upload(g->tgt_d, g->tgt_h, N) != 0) return -1;
    g->B = n;
    g->ntargets = targets;
    g->next_fwd = 0;
    g->next_bwd = -1;
    *real_out = real;
    return 0;
}

int tf_lm_batch(void *state, const int64_t *samples, int n, long long *tokens) {
    tf_lm *g = state;
    if (load_batch(g, &g->data, samples, n, tokens) != 0) return -1;
    for (int b = 0; b < n; b++) g->samples_read++, g->sample_index_sum += samples[b]; /* training samples only */
    if (g->samples_h) /* LoRA dropout keys its masks on them (lora.h) */
        for (int b = 0; b < n; b++) g->samples_h[b] = samples[b];
    return 0;
}

static int64_t eval_num_samples(void *state) { return ((tf_lm *)state)->eval.n; }

/* An eval batch weighs as many tokens as its loss averages over: the predicted ones. */
static int eval_batch(void *state, const int64_t *samples, int n, long long *tokens) {
    tf_lm *g = state;
    long long real;
    if (load_batch(g, &g->eval, samples, n, &real) != 0) return -1;
    *tokens = g->ntargets;
    return 0;
}

/* Multiple-choice sequences ([task] eval_files): each row holds a context and one completion, padded
   with token 0 after it (the model is causal: what follows never changes a position's loss); only
   the completion's tokens are targets. */
static int choice_batch(void *state, const sr_choice_seq *seqs, int n) {
    tf_lm *g = state;
    if (n <= 0 || (n > g->Bcap && tf__lm_alloc_acts(g, n) != 0)) return -1;
    const int T = g->T;
    long long targets = 0;
    for (int b = 0; b < n; b++) {
        const sr_choice_seq *q = &seqs[b];
        if (q->length > T || q->first_scored < 1 || q->first_scored > q->length) {
            tf__lm_error(g, "a multiple-choice sequence of %d tokens scored from %d does not fit max_length %d\n",
                         q->length, q->first_scored, T);
            return -1;
        }
        int32_t *ids = g->ids_h + (size_t)b * T, *tgt = g->tgt_h + (size_t)b * T;
        for (int t = 0; t < T; t++) {
            ids[t] = t < q->length ? q->tokens[t] : 0;
            tgt[t] = t + 1 >= q->first_scored && t + 1 < q->length ? q->tokens[t + 1] : -1;
        }
        targets += q->length - q->first_scored;
    }
    size_t N = (size_t)n * T;
    if (g->k->ids_upload(g->ids_d, g->ids_h, N) != 0 || g->k->ids_upload(g->tgt_d, g->tgt_h, N) != 0) return -1;
    g->B = n;
    g->ntargets = targets;
    g->next_fwd = 0;
    g->next_bwd = -1;
    return 0;
}

/* After loss(): losses_h holds each position's loss (0 where there is no target). */
static int choice_losses(void *state, double *losses, int n) {
    tf_lm *g = state;
    const int T = g->T;
    if (n != g->B) return -1;
    for (int b = 0; b < n; b++) {
        double sum = 0;
        int count = 0;
        for (int t = 0; t < T; t++)
            if (g->tgt_h[(size_t)b * T + t] >= 0) sum += g->losses_h[(size_t)b * T + t], count++;
        losses[b] = count ? sum / count : 0.0;
    }
    return 0;
}

/* vocab_size and max_tokens are the run's: lm_setup.c fills them in a copy */
const sr_model_eval tf__lm_eval = {sizeof(sr_model_eval), eval_num_samples, eval_batch, 1 /* cross-entropy */, 0, 0,
                                   choice_batch,          choice_losses};

/* ---- forward ----------------------------------------------------------------------------------- */

static int check_call(const tf_lm *g, const sr_module_call *call, const char *what) {
    const tf_lm_layers *ly = g->arch->layers;
    const int nparams[] = {g->arch->embed_params,
                           (ly ? g->d.block_params : TF_BLOCK_PARAMS) + tf_lora_params(&g->lora, call->module - 1),
                           ly ? ly->norm_params : 2, 1};
    if (call->module < 0 || call->module >= g->nmod || call->nparams != nparams[tf__lm_kind(g, call->module)] ||
        call->dtype != g->dt || call->batch_size != g->B || g->Bcap == 0) {
        tf__lm_error(g,
                     "%s of module %d (%s) does not match the model: %d params, dtype %s, batch %d "
                     "(loaded %d)\n",
                     what, call->module, call->name, call->nparams, sr_dtype_name(call->dtype), call->batch_size, g->B);
        return -1;
    }
    return 0;
}

/* LoRA dropout (lora.h, "Dropout"): at a training micro-batch's first forward, each sample's key for
   this step, uploaded for the blocks' calls; then the shape of a block's training call points at
   the dropout's state.  Evaluation (call->eval) runs without dropout, as PEFT's eval mode. */
static int drop_keys(tf_lm *g, const sr_module_call *call) {
    for (int b = 0; b < g->B; b++) {
        uint64_t k = tf_lora_sample_key(g->seed, (uint64_t)call->step, (uint64_t)g->samples_h[b]);
        g->drop_keys_h[2 * b] = (uint32_t)k, g->drop_keys_h[2 * b + 1] = (uint32_t)(k >> 32);
    }
    return g->k->ids_upload((int32_t *)g->drop_keys_d, (const int32_t *)g->drop_keys_h, 2 * (size_t)g->B);
}
static void with_dropout(tf_lm *g, const sr_module_call *call, tf_shape *sh) {
    if (!g->drop.work || call->eval || tf__lm_kind(g, call->module) != M_BLOCK) return;
    g->drop.block = call->module - 1;
    sh->drop = &g->drop;
}

int tf_lm_forward(void *state, const sr_module_call *call) {
    tf_lm *g = state;
    if (check_call(g, call, "forward") != 0) return -1;
    const int m = call->module, kind = tf__lm_kind(g, m), N = g->B * g->T, C = g->d.C;
    if (call->recompute ? g->next_bwd < 0 || m > g->next_bwd : m != g->next_fwd) {
        tf__lm_error(g, "%s of %s out of order\n", call->recompute ? "recompute" : "forward", call->name);
        return -1;
    }
    void *const *p = call->params;
    const void *x = m > 0 ? g->out[m - 1] : NULL;
    tf_shape sh = tf__lm_shape(g);
    sh.block = m - 1; /* a block's: its adapters (lora.h) */
    with_dropout(g, call, &sh);
    switch (kind) {
    case M_EMBED:
        if (!call->recompute && g->drop.work && !call->eval && drop_keys(g, call) != 0) return -1;
        if (!call->recompute) g->arch->embed_forward(&sh, p, g->ids_d, g->embed_acts, g->out[m]);
        break;
    case M_BLOCK: {
        /* intermediates: kept for backward, or (checkpointed forward) borrowed for the call only */
        int keep = call->save_activations || call->recompute;
        if (!g->inter[m] && !(g->inter[m] = tf_buffer_pool_take(&g->pool))) {
            tf__lm_error(g, "out of %s memory for the activations of %s\n", g->k->name, call->name);
            return -1;
        }
        void *out = call->recompute ? NULL : g->out[m];
        if (g->arch->layers) {
            g->arch->layers->block_forward(&sh, p, x, g->inter[m], out);
        } else {
            tf_block_acts a = tf_block_acts_at(&sh, g->inter[m]);
            tf_block_forward(&sh, &g->arch->block_style, p, x, &a, out);
        }
        if (!keep) {
            tf_buffer_pool_give(&g->pool, g->inter[m]);
            g->inter[m] = NULL;
        }
        break;
    }
    case M_LNF:
        if (g->arch->layers) g->arch->layers->norm_forward(&sh, p, x, g->lnf_stats, g->out[m]);
        else g->k->layernorm_forward(g->out[m], g->lnf_stats, g->lnf_stats + N, x, p[0], p[1], N, C, g->dt);
        break;
    case M_HEAD: /* logits = h W^T (lm_head is a Linear: weight [V, C], the token embedding) */
        if (!call->recompute) tf_linear_forward(&sh, TF_WEIGHT_OUT_IN, g->out[m], x, p[0], NULL, N, C, g->d.V);
        break;
    }
    if (!call->recompute) g->next_fwd = m + 1;
    return 0; /* a device error surfaces at loss() or the last backward, which wait for the device */
}

/* ---- loss ---------------------------------------------------------------------------------------- */

int tf_lm_loss(void *state, const sr_module_call *call, double *loss) {
    tf_lm *g = state;
    if (g->Bcap == 0 || g->next_fwd != g->nmod) {
        tf__lm_error(g, "loss before the forward of every module\n");
        return -1;
    }
    const int N = g->B * g->T, V = g->d.V;
    void *logits = g->out[g->nmod - 1];
    int dump = g->dump_path && !call->eval && call->step == 0 && call->micro_step == 0 && sr_rank(g->ctx) == 0;
    float *host_logits = NULL;
    if (dump) { /* before cross_entropy turns them into their gradient */
        if (g->dt != SR_FLOAT32 || !(host_logits = malloc((size_t)N * V * sizeof(float))) ||
            g->k->floats_download(host_logits, logits, (size_t)N * V) != 0) {
            tf__lm_error(g, "dump needs fp32 compute and memory for the logits\n");
            free(host_logits);
            return -1;
        }
    }
    float dscale = g->ntargets ? call->grad_scale / (float)g->ntargets : 0.0f;
    g->k->cross_entropy(logits, g->losses_d, g->tgt_d, N, V, dscale, g->dt);
    if (g->k->floats_download(g->losses_h, g->losses_d, (size_t)N) != 0 || g->k->sync() != 0) {
        free(host_logits);
        return -1;
    }
    double sum = 0.0;
    for (int n = 0; n < N; n++) sum += g->losses_h[n];
    *loss = g->ntargets ? sum / (double)g->ntargets : 0.0;
    int rc = dump ? tf__lm_write_dump(g, host_logits, (float)*loss) : 0;
    free(host_logits);
    g->next_bwd = g->nmod - 1;
    return rc;
}

/* ---- backward ---------------------------------------------------------------------------------- */

int tf_lm_backward(void *state, const sr_module_call *call) {
    tf_lm *g = state;
    if (check_call(g, call, "backward") != 0) return -1;
    const int m = call->module, kind = tf__lm_kind(g, m), N = g->B * g->T, C = g->d.C;
    if (m != g->next_bwd) {
        tf__lm_error(g, "backward of %s out of order\n", call->name);
        return -1;
    }
    void *const *p = call->params, *const *d = call->grads;
    const void *x = m > 0 ? g->out[m - 1] : NULL;
    tf_shape sh = tf__lm_shape(g);
    sh.block = m - 1; /* a block's: its adapters (lora.h) */
    with_dropout(g, call, &sh);
    switch (kind) {
    case M_HEAD: /* dlogits is in out[m]: dx = dlogits W, dW += dlogits^T h */
        tf_linear_backward(&sh, TF_WEIGHT_OUT_IN, g->dx, 0.0f, d[0], NULL, g->out[m], x, p[0], N, C, g->d.V);
        break;
    case M_LNF:
        if (g->arch->layers) {
            g->arch->layers->norm_backward(&sh, p, d, x, g->lnf_stats, g->dy, g->dx);
            break;
        }
        g->k->zero(g->dx, (size_t)N * C * g->es);
        g->k->layernorm_backward(g->dx, d[0], d[1], g->dy, x, g->lnf_stats, g->lnf_stats + N, p[0], N, C, g->dt);
        break;
    case M_BLOCK: {
        if (!g->inter[m]) {
            tf__lm_error(g, "backward of %s without its activations (no recompute came first)\n", call->name);
            return -1;
        }
        if (g->arch->layers) {
            g->arch->layers->block_backward(&sh, p, d, x, g->inter[m], g->dy, g->dx, g->work);
        } else {
            tf_block_acts a = tf_block_acts_at(&sh, g->inter[m]);
            tf_block_backward(&sh, &g->arch->block_style, p, d, x, &a, g->dy, g->dx, g->work);
        }
        tf_buffer_pool_give(&g->pool, g->inter[m]);
        g->inter[m] = NULL;
        break;
    }
    case M_EMBED: g->arch->embed_backward(&sh, p, d, g->ids_d, g->embed_acts, g->dy, g->dx); break;
    }
    void *t = g->dy; /* this module's input gradient is the previous module's output gradient */
    g->dy = g->dx;
    g->dx = t;
    g->next_bwd = m - 1;
    /* waiting for the device after every module would serialise a GPU run: once per pass */
    return m == 0 ? g->k->sync() : 0;
}
