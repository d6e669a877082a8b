/* The buffer pool of buffer_pool.h. */
#include "buffer_pool.h"

#include <stdlib.h>

void tf_buffer_pool_init(tf_buffer_pool *p, void *(*alloc)(size_t), void (*free_fn)(void *), size_t bytes) {
    *p = (tf_buffer_pool){.alloc = alloc, .free = free_fn, .bytes = bytes};
}

void *tf_buffer_pool_take(tf_buffer_pool *p) {
    void *b = p->nidle > 0 ? p->idle[--p->nidle] : p->alloc(p->bytes);
    if (b && ++p->held > p->held_peak) p->held_peak = p->held;
    return b;
}

void tf_buffer_pool_give(tf_buffer_pool *p, void *b) {
    if (!b) return;
    p->held--;
    if (p->nidle == p->cap) {
        int cap = p->cap ? 2 * p->cap : 8;
        void **idle = realloc(p->idle, (size_t)cap * sizeof *idle);
        if (!idle) { /* cannot keep it: let it go */
            p->free(b);
            return;
        }
        p->idle = idle, p->cap = cap;
    }
    p->idle[p->nidle++] = b;
}

void tf_buffer_pool_resize(tf_buffer_pool *p, size_t bytes) {
    while (p->nidle > 0) p->free(p->idle[--p->nidle]);
    p->held = 0;
    p->bytes = bytes;
}

void tf_buffer_pool_drain(tf_buffer_pool *p) {
    if (p->free) tf_buffer_pool_resize(p, p->bytes);
    free(p->idle);
    p->idle = NULL;
    p->cap = 0;
}
