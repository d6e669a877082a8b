/* The toy model built against the header before multiple-choice evaluation: its sr_model_eval ends
   at cross_entropy (the size it had then).  Its eval data must still be used, and [task]
   eval_files refused before step 0 (it cannot score token sequences). */
#define TOY_EVAL_SIZE offsetof(sr_model_eval, vocab_size)
#define TOY_DTYPES ((1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16))
#define TOY_NAME "eval_before_choice"
#include <stddef.h>
#include "../../examples/toy/toy_model.c"
