/*
 * The selftest task's checks, one file each.  Every check writes one line per entry point and
 * dtype (over all its sizes), naming the first failing size and element.
 */
#ifndef SELFTEST_CHECKS_H
#define SELFTEST_CHECKS_H

#include "dut.h"
#include "report.h"

/* core's device table (device.*) */
void st_check_device(st_report *r, const st_dut *d, int quick);
/* the GPT-2 kernel table (gpt2.*), and its GEMMs against cblas_sgemm (gemm.*) */
void st_check_kernels(st_report *r, const st_dut *d, int quick);
/* the math itself: the device's fp32 kernels and AdamW against float64 references (math.*) */
void st_check_math(st_report *r, const st_dut *d);
/* buffers past 2^31 bytes (n elements; chunked through the host): device.cast, gpt2.add */
void st_check_large(st_report *r, const st_dut *d, size_t n);
/* the world group: every collective x dtype x op (collective.*), bus bandwidth (bandwidth.*).
   Collective: every rank calls it.  Returns -1 when the group failed (it is unusable then). */
int st_check_pg(st_report *r, const st_dut *d, sr_pg *pg, int quick);

#endif
