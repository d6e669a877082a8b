/* A cheap identity of a shard set for checkpoints (shardrun/data.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/hash64.h"
#include "data/fault_guard.h"
#include "shardrun/data.h"

/* Pages hashed besides the header: at these fractions of the file (the last one ends at its end) */
#define SAMPLES 4
#define SAMPLE_BYTES 4096

typedef struct hash_job {
    const sr_shard *s;
    uint64_t h;
} hash_job;

static void hash_shard(void *arg) {
    hash_job *j = arg;
    const sr_shard *s = j->s;
    sr__hash64_state st;
    sr__hash64_init(&st, 0);
    int64_t bytes = s->bytes;
    sr__hash64_update(&st, &bytes, sizeof bytes);
    sr__hash64_update(&st, s->map, SR_SHARD_HEADER_BYTES);
    size_t body = s->map_len - SR_SHARD_HEADER_BYTES;
    for (int k = 0; k < SAMPLES; k++) {
        size_t n = body < SAMPLE_BYTES ? body : SAMPLE_BYTES;
        size_t at = SR_SHARD_HEADER_BYTES + (body - n) / (SAMPLES - 1) * (size_t)k;
        sr__hash64_update(&st, s->map + at, n);
    }
    j->h = sr__hash64_final(&st);
}

void sr_shard_set_identity(const sr_shard_set *set, char *out, size_t len,
                           void (*per_shard)(void *user, const char *name, int64_t bytes, uint64_t hash), void *user) {
    sr__hash64_state all;
    sr__hash64_init(&all, 0);
    for (int i = 0; i < set->n; i++) {
        const sr_shard *s = &set->shards[i];
        const char *slash = strrchr(s->path, '/'), *name = slash ? slash + 1 : s->path;
        hash_job j = {s, 0};
        /* a shard shrunk since it was opened hashes as its bytes and nothing else: a different identity */
        if (sr__fault_guard_run(hash_shard, &j) != 0) j.h = 0;
        sr__hash64_update(&all, name, strlen(name) + 1);
        sr__hash64_update(&all, &j.h, sizeof j.h);
        if (per_shard) per_shard(user, name, s->bytes, j.h);
    }
    char hex[17];
    snprintf(out, len, "%d shards, %lld bytes, xxh3 %s", set->n, (long long)set->bytes,
             sr__hash64_hex(sr__hash64_final(&all), hex));
}
