#include "fsdp/param_init.h"

#include <math.h>

#include "base/rand.h"

/* uniform in (0, 1): 53 random bits, never exactly 0 (Box-Muller takes a log) */
static double uniform01(uint64_t key, uint64_t i) {
    return ((double)(sr__mix64(key ^ sr__mix64(i)) >> 11) + 0.5) / 9007199254740992.0;
}

void sr__init_fill(float *dst, uint64_t seed, const char *name, sr_init init, size_t first, size_t n) {
    uint64_t key = sr__mix64(seed) ^ sr__hash_str(name);
    for (size_t k = 0; k < n; k++) {
        uint64_t i = first + k;
        switch (init.kind) {
        case SR_INIT_ZEROS: dst[k] = 0.0f; break;
        case SR_INIT_ONES: dst[k] = 1.0f; break;
        case SR_INIT_CONSTANT: dst[k] = init.a; break;
        case SR_INIT_UNIFORM: dst[k] = (float)((2.0 * uniform01(key, 2 * i) - 1.0) * init.a); break;
        case SR_INIT_NORMAL: {
            double u1 = uniform01(key, 2 * i), u2 = uniform01(key, 2 * i + 1);
            dst[k] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2) * init.a);
            break;
        }
        }
    }
}
