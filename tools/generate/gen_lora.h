/*
 * gen lora: generation from a LoRA run's FULL checkpoint.  Its model.safetensors holds the base and
 * the adapters under the model's names ("transformer.h.0.attn.c_attn.lora_A.weight"), which no
 * family's forward reads; the adapters are folded into the base weights in memory by shardrun
 * merge's own code (tools/merge/merge_lora.h: adapter_config.json and adapter_model.safetensors
 * beside it, PEFT's rank_pattern, alpha_pattern, use_rslora), so generating from the checkpoint is
 * generating from `shardrun merge CHECKPOINT`'s output, bit for bit.
 */
#ifndef GEN_LORA_H
#define GEN_LORA_H

#include <stddef.h>

#include "gen_file.h"

/* On an opened f: nothing when it holds no lora_A / lora_B tensor; else the adapted weights merged
   (f->merged) and the adapters marked used, with what was done in what[] ("LoRA adapters merged in
   memory: 2 weights, scale 2").  0; -1 with a message in err (the adapter files missing or refused:
   merge's own message went to stderr before it); -2 when out of memory. */
int gen_lora_apply(gen_file *f, char *what, size_t whatlen, char *err, size_t errlen);

/* A folder with PEFT's adapter files but no model.safetensors (the adapters without their base):
   -1 with a message in err saying how to merge them onto their base; 0 for anything else. */
int gen_lora_adapter_only(const char *path, char *err, size_t errlen);

#endif
