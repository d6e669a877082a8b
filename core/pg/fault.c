/* SHARDRUN_DEBUG_PG_FAULT (see fault.h). */
#include "pg/fault.h"

#include <string.h>

/* set once, by the world's creation, before any collective runs on the communication thread */
static int fault = SR__PG_FAULT_NONE;

void sr__pg_fault_set(const char *v) {
    fault = !v                                       ? SR__PG_FAULT_NONE
            : !strcmp(v, "shm_reduce_scatter_index") ? SR__PG_FAULT_SHM_RS_INDEX
            : !strcmp(v, "gloo_avg_divisor")         ? SR__PG_FAULT_GLOO_AVG_DIVISOR
            : !strcmp(v, "stop_in_collective")       ? SR__PG_FAULT_STOP_IN_COLLECTIVE
                                                     : SR__PG_FAULT_NONE;
}

int sr__pg_fault(void) { return fault; }
