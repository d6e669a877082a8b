/* The toy model, declaring fp32 as its only compute dtype: mixed precision must be refused. */
#define TOY_DTYPES (1u << SR_FLOAT32)
#define TOY_NAME "fp32_only"
#include "../../examples/toy/toy_model.c"
