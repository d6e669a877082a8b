/*
 * transformer lm_task: the parity dump.  [task] dump = PATH writes rank 0's first training
 * micro-batch -- input ids, HF's labels, the logits and the loss (with LoRA dropout, the samples'
 * indices) -- as safetensors, which tests/gpt2, tests/bloom and tests/lora compare with a PyTorch
 * model fed the same ids (dump.h).
 */
#include <stdint.h>
#include <stdlib.h>

#include "dump.h"
#include "lm_state.h"

int tf__lm_write_dump(const tf_lm *g, const float *logits, float loss) {
    int32_t *labels = malloc((size_t)g->B * g->T * sizeof *labels);
    if (!labels) return -1;
    for (int b = 0; b < g->B; b++) /* HF's labels: the input ids, -100 on padding */
        for (int t = 0; t < g->T; t++) {
            size_t i = (size_t)b * g->T + t;
            labels[i] = t == 0 || g->tgt_h[i - 1] >= 0 ? g->ids_h[i] : -100;
        }
    /* with LoRA dropout, the samples' indices in the training data too: the reference draws the same
       masks from them (lora.h, "Dropout"); the dump is of step 0 */
    int32_t *samples = g->samples_h ? malloc((size_t)g->B * sizeof *samples) : NULL;
    if (g->samples_h && !samples) {
        free(labels);
        return -1;
    }
    for (int b = 0; samples && b < g->B; b++) samples[b] = g->samples_h[b] <= INT32_MAX ? (int32_t)g->samples_h[b] : -1;
    tf_dump_tensor t[] = {
        {"input_ids", "I32", 2, {g->B, g->T}, g->ids_h},    {"labels", "I32", 2, {g->B, g->T}, labels},
        {"logits", "F32", 3, {g->B, g->T, g->d.V}, logits}, {"loss", "F32", 1, {1}, &loss},
        {"sample_index", "I32", 1, {g->B}, samples},
    };
    int rc = tf_dump_write(g->dump_path, t, samples ? 5 : 4);
    free(labels);
    free(samples);
    return rc;
}
