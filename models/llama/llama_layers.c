/* llama layers: the llama task's tf_lm_layers (lm_task.h) -- the blocks are llama_block.c's; here
   the final RMSNorm and lm_head, which only the task declares (see llama_block.h). */
#include <string.h>

#include "llama_block.h"
#include "llama_kernels.h"

/* ---- model.norm and lm_head ------------------------------------------------------------------- */

static int declare_tail(const tf_lm_dims *d, sr_model *model) {
    if (sr_model_module(model, "model.norm", "LlamaRMSNorm") < 0 ||
        tf_param1(model, "model.norm.weight", d->C, SR_ONES, SR_PARAM_NO_DECAY) ||
        sr_model_module(model, "lm_head", "Linear") < 0)
        return -1;
    if (llama_block_config()->tie)
        return sr_model_tie(model, "lm_head.weight", "model.embed_tokens.weight") != 0 ? -1 : 0;
    return tf_param2(model, "lm_head.weight", d->V, d->C, SR_NORMAL((float)llama_block_config()->init_range));
}

static double tail_param_count(const tf_lm_dims *d) {
    return d->C + (llama_block_config()->tie ? 0.0 : (double)d->V * d->C);
}

static void norm_forward(const tf_shape *s, void *const *p, const void *x, float *stats, void *out) {
    llama_rmsnorm_forward(out, stats, x, p[0], s->B * s->T, s->C, (float)llama_block_config()->rms_eps);
}

static void norm_backward(const tf_shape *s, void *const *p, void *const *d, const void *x, const float *stats,
                          const void *dy, void *dx) {
    size_t n = (size_t)s->B * s->T * s->C;
    memset(dx, 0, n * sizeof(float));
    llama_rmsnorm_backward(dx, d[0], dy, x, stats, p[0], s->B * s->T, s->C);
}

const tf_lm_layers llama_layers = {
    .block_param_count = llama_block_param_count,
    .block_acts_bytes = llama_block_acts_bytes,
    .block_work_bytes = llama_block_work_bytes,
    .block_forward = llama_block_forward,
    .block_backward = llama_block_backward,
    .declare_tail = declare_tail,
    .tail_param_count = tail_param_count,
    .norm_params = 1,
    .norm_forward = norm_forward,
    .norm_backward = norm_backward,
};
