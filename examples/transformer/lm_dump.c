/*
 * transformer lm_task: the parity dump.  [task] dump = PATH writes rank 0's first training
 * micro-batch -- input ids, HF's labels, the logits and the loss -- as safetensors, which
 * tests/gpt2 and tests/bloom compare with a PyTorch model fed the same ids (dump.h).
 */
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
    tf_dump_tensor t[] = {
        {"input_ids", "I32", 2, {g->B, g->T}, g->ids_h},
        {"labels", "I32", 2, {g->B, g->T}, labels},
        {"logits", "F32", 3, {g->B, g->T, g->d.V}, logits},
        {"loss", "F32", 1, {1}, &loss},
    };
    int rc = tf_dump_write(g->dump_path, t, 4);
    free(labels);
    return rc;
}
