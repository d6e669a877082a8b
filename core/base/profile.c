/* The step profile's counters (base/profile.h) and the task's hook (shardrun/model.h). */
#define _POSIX_C_SOURCE 200809L
#include "base/profile.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

sr__prof_state sr__prof;

void sr__prof_enable(int on) { sr__prof.on = on; }

double sr__prof_now(void) { return sr__prof.on ? sr__now_s() : 0.0; }

void sr__prof_add_sec(int cls, double sec, double flops, double bytes) {
    if (!sr__prof.on || cls < 0 || cls >= SR__PROF_CLASSES) return;
    sr__prof.c.sec[cls] += sec;
    sr__prof.c.flops[cls] += flops;
    sr__prof.c.bytes[cls] += bytes;
    sr__prof.c.calls[cls]++;
}

void sr__prof_add(int cls, double t0, double flops, double bytes) {
    if (sr__prof.on) sr__prof_add_sec(cls, sr__now_s() - t0, flops, bytes);
}

int sr_profile_enabled(void) { return sr__prof.on; }

double sr_profile_clock(void) { return sr__now_s(); }

void sr_profile_kernel(sr_kernel_class cls, double seconds, double flops, double bytes) {
    if ((int)cls >= 0 && (int)cls < SR_KERNEL_CLASSES) sr__prof_add_sec((int)cls, seconds, flops, bytes);
}
