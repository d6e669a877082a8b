/*
 * transformer lm_task: the activation buffers of a micro-batch (lm_state.h, "Activations"), laid
 * out for up to g->Bcap samples and grown when a larger micro-batch comes.
 */
#include <stdlib.h>

#include "lm_state.h"

void tf__lm_free_acts(tf_lm *g) {
    if (!g->k) return;
    for (int m = 0; g->out && m < g->nmod; m++) {
        g->k->free(g->out[m]);
        g->out[m] = NULL;
        if (g->inter[m]) g->k->free(g->inter[m]);
        g->inter[m] = NULL;
    }
    tf_buffer_pool_resize(&g->pool, 0); /* the idle buffers; the lent ones were inter[]'s */
    void **bufs[] = {
        (void **)&g->ids_d, (void **)&g->tgt_d, (void **)&g->losses_d,    (void **)&g->lnf_stats, &g->dy, &g->dx,
        &g->work,           &g->embed_acts,     (void **)&g->drop_keys_d, &g->drop.work};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        g->k->free(*bufs[i]);
        *bufs[i] = NULL;
    }
    free(g->ids_h), free(g->tgt_h), free(g->losses_h), free(g->samples_h), free(g->drop_keys_h);
    g->ids_h = g->tgt_h = NULL;
    g->losses_h = NULL;
    g->samples_h = NULL;
    g->drop_keys_h = NULL;
    g->drop.keys = NULL;
    g->Bcap = 0;
}

int tf__lm_alloc_acts(tf_lm *g, int B) {
    tf__lm_free_acts(g);
    g->Bcap = B;
    size_t N = (size_t)B * g->T, es = g->es;
    tf_shape sh = tf__lm_shape(g);
    tf_buffer_pool_resize(&g->pool, tf__lm_block_acts_bytes(g, &sh));
    int bad = !(g->ids_h = malloc(N * sizeof(int32_t))) || !(g->tgt_h = malloc(N * sizeof(int32_t))) ||
              !(g->losses_h = malloc(N * sizeof(float))) || !(g->ids_d = g->k->alloc(N * sizeof(int32_t))) ||
              !(g->tgt_d = g->k->alloc(N * sizeof(int32_t))) || !(g->losses_d = g->k->alloc(N * sizeof(float))) ||
              !(g->lnf_stats = g->k->alloc(2 * N * sizeof(float))) || !(g->dy = g->k->alloc(N * g->d.C * es)) ||
              !(g->dx = g->k->alloc(N * g->d.C * es)) || !(g->work = g->k->alloc(tf__lm_block_work_bytes(g, &sh)));
    if (!bad && g->lora.r && g->lora.dropout > 0) { /* the dropout's sample keys and its scratch (lora.h) */
        bad = !(g->samples_h = malloc((size_t)B * sizeof *g->samples_h)) ||
              !(g->drop_keys_h = malloc(2 * (size_t)B * sizeof *g->drop_keys_h)) ||
              !(g->drop_keys_d = g->k->alloc(2 * (size_t)B * sizeof *g->drop_keys_d)) ||
              !(g->drop.work = g->k->alloc(N * (size_t)tf_lora_max_in(&g->lora) * es));
        g->drop.keys = g->drop_keys_d;
    }
    size_t embed_bytes = g->arch->embed_acts_bytes ? g->arch->embed_acts_bytes(&sh) : 0;
    if (!bad && embed_bytes) bad = !(g->embed_acts = g->k->alloc(embed_bytes));
    for (int m = 0; !bad && m < g->nmod; m++)
        bad = !(g->out[m] = g->k->alloc(N * (size_t)(tf__lm_kind(g, m) == M_HEAD ? g->d.V : g->d.C) * es));
    if (bad) {
        tf__lm_error(g,
                     "out of %s memory for the activations of a micro-batch of %d samples of %d "
                     "tokens; lower per_device_train_batch_size or max_length, or turn on "
                     "fsdp.activation_checkpointing\n",
                     g->k->name, B, g->T);
        tf__lm_free_acts(g);
        return -1;
    }
    return 0;
}
