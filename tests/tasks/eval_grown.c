/* The toy model whose sr_model_eval says it is larger than this shardrun's (built against a newer
   header that appended fields): its eval data must still be used. */
#define TOY_EVAL_SIZE (sizeof(sr_model_eval) + 16)
#define TOY_DTYPES ((1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16))
#define TOY_NAME "eval_grown"
#include "../../examples/toy/toy_model.c"
