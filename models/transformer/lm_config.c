/* transformer lm_task: a [task] integer key read and checked against its range (lm_task.h,
   lm_state.h), in a file of its own: the setup (lm_setup.c) calls the data's loader (lm_data.c), and
   both read keys with it, so neither calls back into the other. */
#include <stdio.h>

#include "lm_state.h"

int tf_lm_config_int(sr_ctx *ctx, const char *prefix, const char *key, long long def, long long lo, long long hi,
                     int *out) {
    long long v;
    if (sr_config_int(ctx, key, def, &v) != 0) return -1;
    if (v < lo || v > hi) {
        fprintf(stderr, "%s: error: [task] %s = %lld is out of range [%lld, %lld]\n", prefix, key, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int tf__lm_config_int(const tf_lm *g, const char *key, long long def, long long lo, long long hi, int *out) {
    return tf_lm_config_int(g->ctx, g->arch->name, key, def, lo, hi, out);
}
