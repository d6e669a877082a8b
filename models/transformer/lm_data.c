/*
 * transformer lm_task: the tokenizer and the samples, from [task]: tokenizer_json, or vocab_json +
 * merges_txt, or neither (byte-level); data, split, min_chars, max_length, max_samples; eval_data or
 * validation_split_percentage; data_format, text_field, packing.  The samples come through a data
 * source (data_source.h): text or JSON Lines files, or llm.c token shards (docs/data.md).
 */
#define _GNU_SOURCE
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lm_state.h"

/* The checkpoint or model folder this run starts from (resume_from_checkpoint naming a folder, else
   init_weights' folder) and the tokenizer it records (tokenizer_saved.h): 1 with *ck and *key, 0 when
   the run starts from none, -1 after an error */
static int start_folder(tf_lm *g, tf_saved_tok *ck, const char **key) {
    const char *resume = sr_config_path(g->ctx, "resume_from_checkpoint"),
               *init = sr_config_path(g->ctx, "init_weights");
    struct stat st;
    char dir[4200], err[9000];
    *key = resume && *resume && stat(resume, &st) == 0 && S_ISDIR(st.st_mode) ? "resume_from_checkpoint"
           : init && *init                                                    ? "init_weights"
                                                                              : NULL;
    if (!*key) return 0;
    tf_saved_dir(!strcmp(*key, "init_weights") ? init : resume, dir, sizeof dir);
    if (tf_saved_tokenizer(dir, ck, err, sizeof err) != 0) {
        tf__lm_error(g, "[task] %s: %s\n", *key, err);
        return -1;
    }
    return ck->kind != TF_SAVED_NONE;
}

/* The job's tokenizer against the one the starting checkpoint records: the same kind and the same
   bytes, else the token ids would mean other text to the trained embeddings.  0, or -1 after an
   error naming both. */
static int same_as_start(tf_lm *g, const tf_saved_tok *ck, const char *key) {
    const tf_saved_tok *mine = &g->tok_src;
    int same = mine->kind == ck->kind;
    if (same && mine->kind == TF_SAVED_JSON) same = tf_same_bytes(mine->json, ck->json);
    if (same && mine->kind == TF_SAVED_GPT2)
        same = tf_same_bytes(mine->vocab, ck->vocab) && tf_same_bytes(mine->merges, ck->merges);
    if (same) return 0;
    char a[9000], b[9000];
    tf_saved_describe(mine, a, sizeof a), tf_saved_describe(ck, b, sizeof b);
    tf__lm_error(g,
                 "the job's tokenizer (%s) is not the one %s = %s was trained with (%s): its token ids would mean "
                 "other text to the trained model. Remove the job's tokenizer keys (tokenizer_json, vocab_json, "
                 "merges_txt): the run then takes the checkpoint's; or name the very files\n",
                 a, key, sr_config_path(g->ctx, key), b);
    return -1;
}

static int load_tokenizer(tf_lm *g) {
    /* paths: relative to the job file when written there (sr_config_path) */
    const char *vocab = sr_config_path(g->ctx, "vocab_json"), *merges = sr_config_path(g->ctx, "merges_txt");
    const char *tj = sr_config_path(g->ctx, "tokenizer_json");
    if (!vocab != !merges) {
        tf__lm_error(g, "[task] vocab_json and merges_txt go together: give both (GPT-2 BPE) or "
                        "neither (byte-level tokens)\n");
        return -1;
    }
    if (tj && vocab) {
        tf__lm_error(g, "[task] tokenizer_json and vocab_json + merges_txt each name a tokenizer; keep one\n");
        return -1;
    }
    tf_saved_tok ck, *src = &g->tok_src;
    const char *key;
    int from = start_folder(g, &ck, &key);
    if (from < 0) return -1;
    memset(src, 0, sizeof *src);
    if (tj) src->kind = TF_SAVED_JSON, snprintf(src->json, sizeof src->json, "%s", tj);
    else if (vocab) {
        src->kind = TF_SAVED_GPT2;
        snprintf(src->vocab, sizeof src->vocab, "%s", vocab), snprintf(src->merges, sizeof src->merges, "%s", merges);
    } else if (from) { /* no tokenizer keys: the checkpoint's own */
        *src = ck;
        g->tok_from = key;
    } else src->kind = TF_SAVED_BYTES;
    if (from && !g->tok_from && same_as_start(g, &ck, key) != 0) return -1;
    char err[1024];
    g->tok = src->kind == TF_SAVED_JSON   ? tf_tokenizer_load_json(src->json, err, sizeof err)
             : src->kind == TF_SAVED_GPT2 ? tf_tokenizer_load(src->vocab, src->merges, err, sizeof err)
                                          : tf_tokenizer_load(NULL, NULL, err, sizeof err);
    g->tok_desc = src->kind == TF_SAVED_JSON   ? "tokenizer.json BPE"
                  : src->kind == TF_SAVED_GPT2 ? "GPT-2 BPE"
                                               : "byte-level";
    if (!g->tok) {
        tf__lm_error(g, "%s%s%s\n", g->tok_from ? g->tok_from : "", g->tok_from ? "'s tokenizer: " : "", err);
        return -1;
    }
    return 0;
}

/* Whether every whitespace-separated word of patterns ends in one of the suffixes ("|.bin|") */
static int all_end_in(const char *patterns, const char *suffixes) {
    int any = 0;
    for (const char *p = patterns; *p;) {
        p += strspn(p, " \t\n");
        size_t n = strcspn(p, " \t\n");
        if (!n) break;
        int hit = 0;
        for (const char *s = suffixes; *s && !hit;) {
            s += strspn(s, "|");
            size_t k = strcspn(s, "|");
            hit = k && n >= k && !strncmp(p + n - k, s, k);
            s += k;
        }
        if (!hit) return 0;
        any = 1;
        p += n;
    }
    return any;
}

/* Whether the first file the first pattern matches starts with a token shard's magic */
static int first_is_shard(const char *patterns, const char *base_dir) {
    char word[4096], path[8192];
    size_t n = 0;
    const char *p = patterns + strspn(patterns, " \t\n");
    for (; *p && !strchr(" \t\n", *p) && n + 1 < sizeof word; p++) {
        if (*p == '\\' && p[1]) p++;
        word[n++] = *p;
    }
    word[n] = 0;
    if (!n) return 0;
    snprintf(path, sizeof path, "%s%s%s", word[0] == '/' || !base_dir ? "" : base_dir,
             word[0] == '/' || !base_dir ? "" : "/", word);
    glob_t gl;
    int is = 0;
    if (glob(path, 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc && !is; i++) {
            struct stat st;
            unsigned char h[4];
            FILE *f = stat(gl.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode) ? fopen(gl.gl_pathv[i], "rb") : NULL;
            if (!f) continue;
            if (fread(h, 1, 4, f) == 4) {
                int32_t m =
                    (int32_t)((uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24);
                is = m == SR_SHARD_MAGIC_U16 || m == SR_SHARD_MAGIC_U32;
            }
            fclose(f);
            break; /* the first regular file decides */
        }
        globfree(&gl);
    }
    return is;
}

/* data_format for the files named by patterns: the key, or (auto) from their names: all .bin ->
   token shards, all .jsonl/.json -> JSON Lines, else text */
static int data_format(tf_lm *g, const char *key, const char *patterns, tf_format *out) {
    const char *f = sr_config(g->ctx, "data_format");
    if (!f || !strcmp(f, "auto")) {
        *out = all_end_in(patterns, "|.bin|")           ? TF_FORMAT_SHARDS
               : all_end_in(patterns, "|.jsonl|.json|") ? TF_FORMAT_JSONL
                                                        : TF_FORMAT_TEXT;
        if (*out == TF_FORMAT_TEXT && first_is_shard(patterns, sr_config_base_dir(g->ctx, key)))
            *out = TF_FORMAT_SHARDS; /* a folder glob of shards: known by their magic, not read as text */
        return 0;
    }
    if (!strcmp(f, "text")) *out = TF_FORMAT_TEXT;
    else if (!strcmp(f, "jsonl")) *out = TF_FORMAT_JSONL;
    else if (!strcmp(f, "shards")) *out = TF_FORMAT_SHARDS;
    else {
        tf__lm_error(g,
                     "[task] data_format = %s; expected auto (from the file names: .bin token shards, .jsonl "
                     "JSON Lines, else text), text, jsonl or shards (for %s)\n",
                     f, key);
        return -1;
    }
    return 0;
}

static const tf_data_source *source_of(tf_format f) {
    return f == TF_FORMAT_SHARDS ? &tf_data_source_shards : &tf_data_source_text;
}

/* The training samples' settings; sets g->T (max_length) */
static int data_opts(tf_lm *g, tf_data_opts *o) {
    long long max_samples;
    const char *split = sr_config(g->ctx, "split");
    o->patterns = sr_config(g->ctx, "data");
    o->base_dir = sr_config_base_dir(g->ctx, "data");
    if (!o->patterns || !*o->patterns) {
        tf__lm_error(g, "[task] data is missing: name the training text files, e.g. "
                        "data = /usr/share/common-licenses/*\n");
        return -1;
    }
    if (split && tf_split_parse(split, &o->split) != 0) {
        tf__lm_error(g, "[task] split = %s; expected paragraph, line or file\n", split);
        return -1;
    }
    if (!split) o->split = TF_SPLIT_PARAGRAPH;
    if (data_format(g, "data", o->patterns, &o->format) != 0) return -1;
    /* token shards are one stream: packed; texts keep today's one padded sample each unless asked */
    if (sr_config_bool(g->ctx, "packing", o->format == TF_FORMAT_SHARDS, &o->packing) != 0) return -1;
    o->text_field = sr_config(g->ctx, "text_field");
    if (!o->text_field || !*o->text_field) o->text_field = "text";
    /* the short-text filter is for paragraphs of padded text files; JSON Lines records and packed texts
       are taken whole, as run_clm does */
    int min_chars_default = o->format == TF_FORMAT_TEXT && !o->packing ? 32 : 0;
    if (tf__lm_config_int(g, "max_length", 128, 2, g->d.P, &g->T) ||
        tf__lm_config_int(g, "min_chars", min_chars_default, 0, 1 << 30, &o->min_chars) ||
        sr_config_int(g->ctx, "max_samples", 0, &max_samples))
        return -1;
    if (max_samples < 0) {
        tf__lm_error(g, "[task] max_samples = %lld; expected 0 (all) or a positive count\n", max_samples);
        return -1;
    }
    o->max_length = g->T;
    o->max_samples = max_samples;
    return 0;
}

/* The eval samples: files of their own (eval_data: the training data's preprocessing), or the last
   validation_split_percentage % of the training texts, which are then never trained on. */
static int load_eval_data(tf_lm *g, const tf_data_opts *train) {
    const char *files = sr_config(g->ctx, "eval_data");
    int pct;
    char err[1024];
    if (tf__lm_config_int(g, "validation_split_percentage", 0, 0, 99, &pct)) return -1;
    if (files && *files && pct) {
        tf__lm_error(g, "[task] eval_data and validation_split_percentage both name eval data; keep one\n");
        return -1;
    }
    if (files && *files) {
        tf_data_opts o = *train;
        o.patterns = files;
        o.base_dir = sr_config_base_dir(g->ctx, "eval_data");
        o.max_samples = 0;
        if (data_format(g, "eval_data", files, &o.format) != 0) return -1;
        /* packing follows the training data's unless set: shards are packed whatever the training data is */
        if (o.format == TF_FORMAT_SHARDS && !sr_config(g->ctx, "packing")) o.packing = 1;
        if (source_of(o.format)->load(&g->eval, &o, g->tok, err, sizeof err) != 0) {
            tf__lm_error(g, "[task] eval_data: %s\n", err);
            return -1;
        }
        g->eval_from = "eval_data";
    } else if (pct) {
        long long n = g->data.n * pct / 100;
        if (tf_dataset_split_tail(&g->data, n, &g->eval, err, sizeof err) != 0) {
            tf__lm_error(g,
                         "[task] validation_split_percentage = %d of %lld texts: %s; raise it, or add "
                         "data, or give eval_data\n",
                         pct, g->data.n, err);
            return -1;
        }
        snprintf(g->eval_desc, sizeof g->eval_desc, "the last %d%% of the %s", pct,
                 g->data.shards ? "blocks" : "texts");
        g->eval_from = g->eval_desc;
    }
    return 0;
}

/* sr_shard_set_identity's per-shard callback: "name bytes xxh3; ..." */
static void list_shard(void *user, const char *name, int64_t bytes, uint64_t hash) {
    char **s = user, *t = NULL;
    if (asprintf(&t, "%s%s%s %lld %016llx", *s ? *s : "", *s ? "; " : "", name, (long long)bytes,
                 (unsigned long long)hash) < 0)
        t = NULL;
    free(*s);
    *s = t;
}

/* Checkpoints record which shards the run trains on; a resume on other data is refused (trainer). */
static int record_identity(tf_lm *g) {
    if (!g->data.shards) return 0;
    char id[256], *files = NULL;
    sr_shard_set_identity(g->data.shards, id, sizeof id, list_shard, &files);
    int rc = sr_data_identity(g->ctx, id, files);
    free(files);
    if (rc != 0) tf__lm_error(g, "out of memory\n");
    return rc;
}

/* Token shards record which tokenizer wrote them (shardrun prepare): the train and eval shards must
   agree, and a job that names a tokenizer must name that one -- another tokenizer's ids are other
   tokens, and a model trained on them learns nonsense without a word.  A job that names none (the
   byte-level default, which shards do not use) is told in the data line (data_source.c). */
static int check_shard_tokenizer(tf_lm *g) {
    const sr_shard_set *train = g->data.shards, *eval = g->eval.owns_shards ? g->eval.shards : NULL;
    char a[256], b[256], err[1024];
    if (train && eval &&
        (train->token_bytes != eval->token_bytes || !sr_shard_tokenizer_same(&train->tokenizer, &eval->tokenizer))) {
        sr_shard_tokenizer_describe(&train->tokenizer, a, sizeof a);
        sr_shard_tokenizer_describe(&eval->tokenizer, b, sizeof b);
        tf__lm_error(g,
                     "[task] data and eval_data were written by different tokenizers: %s holds uint%d tokens, %s; "
                     "%s holds uint%d tokens, %s. Give eval shards of the training shards' tokenizer\n",
                     train->shards[0].path, 8 * train->token_bytes, a, eval->shards[0].path, 8 * eval->token_bytes, b);
        return -1;
    }
    const char *tj = sr_config_path(g->ctx, "tokenizer_json"), *vocab = sr_config_path(g->ctx, "vocab_json");
    const char *files[2] = {tj ? tj : vocab, sr_config_path(g->ctx, "merges_txt")};
    const sr_shard_set *sets[2] = {train, eval};
    sr_shard_tokenizer job;
    int have_job = 0;
    for (int k = 0; k < 2; k++) {
        if (!sets[k] || !sets[k]->tokenizer.hash || (!tj && !vocab)) continue;
        if (!have_job && sr_shard_tokenizer_of_files(&job, files, tj ? 1 : 2, tf_tokenizer_vocab_size(g->tok), err,
                                                     sizeof err) != 0) {
            tf__lm_error(g, "%s\n", err);
            return -1;
        }
        have_job = 1;
        if (sr_shard_tokenizer_same(&job, &sets[k]->tokenizer)) continue;
        sr_shard_tokenizer_describe(&sets[k]->tokenizer, a, sizeof a);
        sr_shard_tokenizer_describe(&job, b, sizeof b);
        tf__lm_error(g,
                     "[task] %s: the token shards (%s, ...) were written by %s, but the job's tokenizer (%s) is %s: "
                     "their ids would be read as other tokens. Name the tokenizer that wrote the shards, or "
                     "prepare them again with this one (shardrun prepare --job JOB.ini)\n",
                     k ? "eval_data" : "data", sets[k]->shards[0].path, a,
                     tj ? "tokenizer_json" : "vocab_json + merges_txt", b);
        return -1;
    }
    return 0;
}

int tf__lm_load_data(tf_lm *g) {
    tf_data_opts o = {0};
    char err[1024];
    if (load_tokenizer(g) != 0 || data_opts(g, &o) != 0) return -1;
    g->source = source_of(o.format);
    if (g->source->load(&g->data, &o, g->tok, err, sizeof err) != 0) {
        tf__lm_error(g, "%s\n", err);
        return -1;
    }
    if (record_identity(g) != 0 || load_eval_data(g, &o) != 0) return -1;
    return check_shard_tokenizer(g);
}

/* v[0 .. n) through the world group and the kernels' device memory (NCCL reads device memory only):
   root < 0: the MAX over the ranks (all-reduce), else root's values (broadcast).  The values come
   back as the int32s' bytes, copied as they are (floats_download is a plain copy on every device).
   0, or -1 after an error. */
static int exchange(tf_lm *g, sr_pg *world, int32_t *v, size_t n, int root) {
    int32_t *d = g->k->alloc(n * sizeof *d);
    float *back = malloc(n * sizeof *back);
    int rc = !d || !back || g->k->ids_upload(d, v, n) != 0 ||
             (root < 0 ? sr_pg_all_reduce(world, d, n, SR_INT32, SR_MAX, NULL)
                       : sr_pg_broadcast(world, d, n, SR_INT32, root, NULL)) != 0 ||
             g->k->floats_download(back, (const float *)(const void *)d, n) != 0;
    if (!rc) memcpy(v, back, n * sizeof *v);
    if (d) g->k->free(d);
    free(back);
    if (rc)
        tf__lm_error(g, "the ranks could not agree on the vocabulary check: %s\n",
                     d && back ? sr_pg_error(world) : "out of memory");
    return rc ? -1 : 0;
}

/* Every token id below the model's vocabulary, before step 0: shards are read through once (mapped,
   nothing kept); texts were tokenized by the model's tokenizer, whose ids the vocabulary covers
   (tf_lm_create checks vocab_size against it).  The ranks share the reading: each checks its
   sr_shard_set_share of each set's tokens, then they agree (an all-reduce), so the data is read
   once in all, not once per rank.  The first bad id in stream order (train data before eval data)
   is reported: its rank sends the message to every rank, and every rank fails create() with it, as
   when each rank read everything (the trainer prints one node's copy, local rank 0's). */
int tf__lm_check_vocab(tf_lm *g) {
    int32_t msg[256]; /* the message, as int32s for the exchange */
    char err[sizeof msg];
    /* the agent's dry run of create() (its key check, before any worker: no process group) has opened
       the shards and checked their headers; reading them through is for the workers, once in all */
    sr_pg *world = sr_world(g->ctx);
    if (!world) return 0;
    const tf_dataset *sets[2] = {&g->data, &g->eval};
    int rank = sr_pg_rank(world), size = sr_pg_size(world), failed = -1; /* the set a bad id is in */
    long long checked = 0;
    for (int k = 0; k < 2 && failed < 0; k++) {
        if (!sets[k]->shards || !sets[k]->owns_shards) continue;
        int64_t first, n;
        sr_shard_set_share(sets[k]->shards, rank, size, &first, &n);
        if (sr_shard_set_check_vocab_range(sets[k]->shards, g->d.V, first, n, err, sizeof err) != 0) failed = k;
        checked += n;
    }
    /* the lowest (set, rank) that failed wins: the first bad id in stream order */
    int32_t v = failed < 0 ? 0 : 2 * size - (failed * size + rank);
    if (exchange(g, world, &v, 1, -1) != 0) return -1;
    if (v == 0) {
        sr_report_int(g->ctx, "vocab_checked_tokens", checked);
        return 0;
    }
    int key = 2 * size - v, set = key / size, winner = key % size;
    memset(msg, 0, sizeof msg);
    if (rank == winner) memcpy(msg, err, sizeof err);
    if (exchange(g, world, msg, sizeof msg / sizeof *msg, winner) != 0) return -1;
    memcpy(err, msg, sizeof err);
    err[sizeof err - 1] = 0;
    tf__lm_error(g, "%s%s\n", set ? "eval_data: " : "", err);
    return -1;
}
