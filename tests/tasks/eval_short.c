/* The toy model whose sr_model_eval stops before `batch`: refused in create(), naming both sizes. */
#define TOY_EVAL_SIZE offsetof(sr_model_eval, batch)
#define TOY_DTYPES ((1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16))
#define TOY_NAME "eval_short"
#include <stddef.h>
#include "../../examples/toy/toy_model.c"
