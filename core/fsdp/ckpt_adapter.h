/*
 * A FULL checkpoint's adapter files (shardrun/model.h, sr_model_adapter): after model.safetensors is
 * written, rank 0 copies the SR_PARAM_ADAPTER parameters out of it into adapter_model.safetensors
 * under the adapter's names (HF PEFT's: "base_model.model." + the parameter's name) and writes the
 * task's adapter_config.json next to it.  Nothing when the model declared no adapter.
 */
#ifndef SR__FSDP_CKPT_ADAPTER_H
#define SR__FSDP_CKPT_ADAPTER_H

#include "fsdp/model_desc.h"

/* In folder `dir`, which holds the model.safetensors just written: 0, or -1 after logging why */
int sr__ckpt_save_adapter(const sr_model *m, const char *dir);

#endif
