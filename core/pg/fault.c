/* SHARDRUN_DEBUG_PG_FAULT (see fault.h). */
#include "pg/fault.h"

#include <stdlib.h>
#include <string.h>

int sr__pg_fault(void) {
    static int known = -1; /* the same answer in every thread; a race only reads the variable twice */
    if (known < 0) {
        const char *v = getenv("SHARDRUN_DEBUG_PG_FAULT");
        known = !v                                       ? SR_PG_FAULT_NONE
                : !strcmp(v, "shm_reduce_scatter_index") ? SR_PG_FAULT_SHM_RS_INDEX
                : !strcmp(v, "gloo_avg_divisor")         ? SR_PG_FAULT_GLOO_AVG_DIVISOR
                : !strcmp(v, "stop_in_collective")       ? SR_PG_FAULT_STOP_IN_COLLECTIVE
                                                         : SR_PG_FAULT_NONE;
    }
    return known;
}
