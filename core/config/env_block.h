/*
 * The host-owned environment block of one worker: what plugins write, in order, before it is
 * applied to the process once (sr__env_block_apply) or printed by `shardrun env`.
 * A later write of the same name replaces the earlier one and remembers who wrote it.
 */
#ifndef SR__ENV_BLOCK_H
#define SR__ENV_BLOCK_H

#include <stddef.h>

typedef struct sr__env_entry {
    char *name;
    char *value;   /* NULL: unset the variable */
    char *setter;  /* plugin name */
    char *because; /* explanation for --explain */
} sr__env_entry;

typedef struct sr__env_block {
    sr__env_entry *v;
    size_t n, cap;
} sr__env_block;

/* Sets (or replaces) name.  0, or -1 when out of memory (the block as it was). */
int sr__env_block_set(sr__env_block *b, const char *name, const char *value, const char *setter, const char *because);
const sr__env_entry *sr__env_block_find(const sr__env_block *b, const char *name);
void sr__env_block_sort(sr__env_block *b);
/* setenv/unsetenv every entry; -1 (errno set) on failure. */
int sr__env_block_apply(const sr__env_block *b);
void sr__env_block_free(sr__env_block *b);

#endif
