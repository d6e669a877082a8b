/*
 * transformer shape: what a layer's code needs to know about the micro-batch it runs on, passed to
 * every layer function of the decoder models (models/gpt2, models/bloom).
 *
 * Lifecycle: none; lm_task.c fills one per call from the loaded micro-batch.
 */
#ifndef TF_SHAPE_H
#define TF_SHAPE_H

#include <stddef.h>

#include "kernels.h"

typedef struct tf_shape {
    const tf_kernels *k;
    sr_dtype dt; /* compute dtype */
    size_t es;   /* its element size */
    int B;       /* samples in this micro-batch */
    int Bcap;    /* samples the buffers are laid out for */
    int T, C, NH;
    const struct tf_lora *lora;      /* LoRA adapters on the blocks' linear layers (lora.h); NULL: none */
    const struct tf_lora_drop *drop; /* their dropout in this training call of a block (lora.h); NULL: none */
    int block;                       /* a block's call: the block's index from 0 (which adapters it has) */
} tf_shape;

/* element i of a compute-dtype array */
#define TF_AT(s, p, i) ((char *)(p) + (size_t)(i) * (s)->es)

#endif
