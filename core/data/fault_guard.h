/*
 * Reads of a mapped file that survive the file shrinking underneath: touching a mapped page past
 * the file's end raises SIGBUS, which would kill the worker mid-step with no word about which file.
 * sr__fault_guard_run() runs fn(arg) with a SIGBUS handler that returns from it (-1) instead; a
 * SIGBUS outside a guarded call goes to the handler that was there before (or the default action).
 */
#ifndef SR__DATA_FAULT_GUARD_H
#define SR__DATA_FAULT_GUARD_H

/* 0 after fn(arg) ran to its end; -1 when it touched a page the file no longer holds. */
int sr__fault_guard_run(void (*fn)(void *arg), void *arg);

#endif
