/*
 * transformer buffer pool: equal-sized buffers from an allocator, handed out and taken back, so that
 * a buffer returned is the next one lent instead of a fresh allocation.  lm_task lends the blocks'
 * intermediates from one: a checkpointed block borrows a buffer for its forward only, then again
 * from its recompute to its backward, so the pool holds as many as are in use at once (reported as
 * block_activation_buffers_peak), not one per block.
 *
 * Lifecycle: tf_buffer_pool_init(alloc, free, bytes) -> tf_buffer_pool_take / tf_buffer_pool_give
 * -> tf_buffer_pool_drain (frees the idle buffers; the pool can be used again, e.g. after
 * tf_buffer_pool_resize).
 *
 * Why this is not the engine's pool (core/fsdp/engine_gather.c, sr__pool): the same idea, but libshardrun
 * keeps it internal (a task sees include/shardrun/ only) and it allocates through the engine's
 * device table and counts into the engine's memory figures; a task allocates through its own
 * kernel table.  core/device/pool.c, despite its name, is a thread pool.
 */
#ifndef TF_BUFFER_POOL_H
#define TF_BUFFER_POOL_H

#include <stddef.h>

typedef struct tf_buffer_pool {
    void *(*alloc)(size_t bytes); /* NULL when out of memory */
    void (*free)(void *p);
    size_t bytes;        /* of each buffer */
    int held, held_peak; /* buffers lent now, and the most at once */
    /* the pool's own */
    void **idle;
    int nidle, cap;
} tf_buffer_pool;

void tf_buffer_pool_init(tf_buffer_pool *p, void *(*alloc)(size_t), void (*free_fn)(void *), size_t bytes);
/* An idle buffer, or a new one: NULL when out of memory. */
void *tf_buffer_pool_take(tf_buffer_pool *p);
/* Takes b back (NULL: nothing); when the pool cannot grow its list, b is freed instead. */
void tf_buffer_pool_give(tf_buffer_pool *p, void *b);
/* Frees the idle buffers and forgets the lent ones (their owner frees them): held = 0.  held_peak
   stays.  Then every buffer will have `bytes` bytes. */
void tf_buffer_pool_resize(tf_buffer_pool *p, size_t bytes);
/* Frees the idle buffers and the pool's list. */
void tf_buffer_pool_drain(tf_buffer_pool *p);

#endif
