/* Packing documents into full blocks, run_clm's group_texts (shardrun/data.h). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "shardrun/data.h"

void sr_packer_init(sr_packer *p, int T, int32_t eos) {
    memset(p, 0, sizeof *p);
    p->T = T;
    p->eos = eos;
}

int sr_packer_add(sr_packer *p, const int32_t *ids, size_t n) {
    int64_t need = p->n + (int64_t)n + (p->docs > 0);
    if (need > p->cap) {
        int64_t cap = p->cap ? p->cap : 4096;
        while (cap < need) cap *= 2;
        int32_t *g = sr__realloc(p->ids, (size_t)cap * sizeof *g);
        if (!g) return -1;
        p->ids = g, p->cap = cap;
    }
    if (p->docs > 0) p->ids[p->n++] = p->eos; /* between documents: not before the first, not after the last */
    if (n) memcpy(p->ids + p->n, ids, n * sizeof *ids);
    p->n += (int64_t)n;
    p->docs++;
    return 0;
}

int64_t sr_packer_blocks(const sr_packer *p) { return p->T > 0 ? p->n / p->T : 0; }

void sr_packer_free(sr_packer *p) {
    free(p->ids);
    memset(p, 0, sizeof *p);
}
