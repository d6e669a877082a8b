/* transformer lm_task: the one error line every part of the task prints (lm_state.h), in a file of
   its own so that the parts calling it (lm_setup.c, lm_task.c, lm_data.c...) do not call each other. */
#include <stdarg.h>
#include <stdio.h>

#include "lm_state.h"

void tf__lm_error(const tf_lm *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", g->arch->name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}
