/*
 * shard_tool: the data layer's public API (shardrun/data.h) from the command line, for the tests
 * and bench/data_memory.sh; it links libshardrun.so like a user's own task would.
 *   shard_tool write PATH WIDTH        token ids (whitespace-separated) from stdin -> a shard (WIDTH 2 or 4)
 *   shard_tool read PATTERNS [VOCAB]   the set's tokens, one per line (after the vocabulary check when VOCAB > 0)
 *   shard_tool gen DIR PREFIX TOKENS PER_SHARD VOCAB SEED   shards of pseudo-random ids, PREFIX_train_NNNNNN.bin
 *   shard_tool identity PATTERNS       the set's identity line
 *   shard_tool check PATTERNS VOCAB RANK SIZE   the vocabulary check of rank's share of SIZE ranks
 *                                      (sr_shard_set_share): "checked tokens FIRST..END of N" on success
 *   shard_tool jsonl FILE FIELD        each record: LINE<TAB>BYTES<TAB>text (newlines as \n)
 *   shard_tool shrink PATH             opens the shard, cuts the file to 1100 bytes, then hashes it (a
 *                                      read of vanished pages: must not fault) and reads its last token
 * Errors: the message on stderr, exit 2.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardrun/data.h"

static char err[4096];

static int fail(void) {
    fprintf(stderr, "shard_tool: error: %s\n", err);
    return 2;
}

static int print_text(void *user, const char *text, size_t len, long long line) {
    (void)user;
    printf("%lld\t%zu\t", line, len);
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') fputs("\\n", stdout);
        else putchar(text[i]);
    }
    putchar('\n');
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "write")) {
        size_t n = 0, cap = 1024;
        int32_t *ids = malloc(cap * sizeof *ids);
        long long v;
        while (ids && scanf("%lld", &v) == 1) {
            if (n == cap) ids = realloc(ids, (cap *= 2) * sizeof *ids);
            if (ids) ids[n++] = (int32_t)v;
        }
        if (!ids) return fprintf(stderr, "shard_tool: out of memory\n"), 1;
        int rc = sr_shard_write(argv[2], atoi(argv[3]), ids, n, err, sizeof err);
        free(ids);
        return rc ? fail() : 0;
    }
    if (argc >= 3 && (!strcmp(argv[1], "read") || !strcmp(argv[1], "identity"))) {
        sr_shard_set s;
        if (sr_shard_set_open(&s, argv[2], NULL, err, sizeof err) != 0) return fail();
        if (!strcmp(argv[1], "identity")) {
            char id[256];
            sr_shard_set_identity(&s, id, sizeof id, NULL, NULL);
            printf("%s\n", id);
            sr_shard_set_close(&s);
            return 0;
        }
        if (argc >= 4 && atoll(argv[3]) > 0 && sr_shard_set_check_vocab(&s, atoll(argv[3]), err, sizeof err) != 0)
            return fail();
        int32_t buf[4096];
        for (int64_t at = 0; at < s.ntokens; at += 4096) {
            int64_t k = s.ntokens - at < 4096 ? s.ntokens - at : 4096;
            if (sr_shard_set_read(&s, at, k, buf, err, sizeof err) != 0) return fail();
            for (int64_t i = 0; i < k; i++) printf("%d\n", buf[i]);
        }
        sr_shard_set_close(&s);
        return 0;
    }
    if (argc >= 8 && !strcmp(argv[1], "gen")) {
        long long total = atoll(argv[4]), per = atoll(argv[5]), vocab = atoll(argv[6]);
        unsigned long long x = strtoull(argv[7], NULL, 10) * 2654435761u + 1;
        int width = sr_shard_token_bytes(vocab);
        int32_t buf[65536];
        for (long long done = 0, k = 0; done < total; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s_train_%06lld.bin", argv[2], argv[3], k);
            sr_shard_writer *w = sr_shard_writer_open(path, width, err, sizeof err);
            if (!w) return fail();
            long long n = total - done < per ? total - done : per;
            for (long long i = 0; i < n; i += 65536) {
                int m = n - i < 65536 ? (int)(n - i) : 65536;
                for (int j = 0; j < m; j++) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
                    buf[j] = (int32_t)(x % (unsigned long long)vocab);
                }
                if (sr_shard_writer_append(w, buf, (size_t)m, err, sizeof err) != 0)
                    return sr_shard_writer_abort(w), fail();
            }
            if (sr_shard_writer_close(w, err, sizeof err) != 0) return fail();
            done += n;
        }
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "shrink")) {
        sr_shard_set s;
        char id[256];
        int32_t last;
        if (sr_shard_set_open(&s, argv[2], NULL, err, sizeof err) != 0) return fail();
        if (truncate(argv[2], 1100) != 0) return perror("truncate"), 1;
        sr_shard_set_identity(&s, id, sizeof id, NULL, NULL);
        printf("identity after the shrink: %s\n", id);
        fflush(stdout);
        int rc = sr_shard_set_read(&s, s.ntokens - 1, 1, &last, err, sizeof err);
        sr_shard_set_close(&s);
        return rc ? fail() : 0;
    }
    if (argc >= 6 && !strcmp(argv[1], "check")) {
        sr_shard_set s;
        int64_t first, n;
        if (sr_shard_set_open(&s, argv[2], NULL, err, sizeof err) != 0) return fail();
        sr_shard_set_share(&s, atoi(argv[4]), atoi(argv[5]), &first, &n);
        int rc = sr_shard_set_check_vocab_range(&s, atoll(argv[3]), first, n, err, sizeof err);
        if (rc == 0)
            printf("checked tokens %lld..%lld of %lld\n", (long long)first, (long long)(first + n),
                   (long long)s.ntokens);
        sr_shard_set_close(&s);
        return rc ? fail() : 0;
    }
    if (argc >= 4 && !strcmp(argv[1], "jsonl"))
        return sr_jsonl_file_each(argv[2], argv[3], print_text, NULL, err, sizeof err) ? fail() : 0;
    fprintf(stderr, "usage: shard_tool write PATH WIDTH | read PATTERNS [VOCAB] | gen DIR PREFIX TOKENS PER_SHARD "
                    "VOCAB SEED | identity PATTERNS | check PATTERNS VOCAB RANK SIZE | jsonl FILE FIELD\n");
    return 2;
}
