/*
 * transformer lm_task: the tokenizer and the samples, from [task]: tokenizer_json, or vocab_json +
 * merges_txt, or neither (byte-level); data, split, min_chars, max_length, max_samples; eval_data or
 * validation_split_percentage.  The samples come through a data source (data_source.h): text files
 * today.
 */
#include <stdio.h>

#include "lm_state.h"

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
    char err[1024];
    g->tok = tj ? tf_tokenizer_load_json(tj, err, sizeof err) : tf_tokenizer_load(vocab, merges, err, sizeof err);
    g->tok_desc = tj ? "tokenizer.json BPE" : vocab ? "GPT-2 BPE" : "byte-level";
    if (!g->tok) {
        tf__lm_error(g, "%s\n", err);
        return -1;
    }
    return 0;
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
    if (tf__lm_config_int(g, "max_length", 128, 2, g->d.P, &g->T) ||
        tf__lm_config_int(g, "min_chars", 32, 0, 1 << 30, &o->min_chars) ||
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
        if (g->source->load(&g->eval, &o, g->tok, err, sizeof err) != 0) {
            tf__lm_error(g, "[task] eval_data: %s\n", err);
            return -1;
        }
        g->eval_from = "eval_data";
    } else if (pct) {
        long long n = g->data.n * pct / 100;
        if (tf_dataset_split_tail(&g->data, n, &g->eval, err, sizeof err) != 0) {
            tf__lm_error(g, "[task] validation_split_percentage = %d of %lld texts: %s; raise it, or add "
                            "data, or give eval_data\n", pct, g->data.n, err);
            return -1;
        }
        snprintf(g->eval_desc, sizeof g->eval_desc, "the last %d%% of the texts", pct);
        g->eval_from = g->eval_desc;
    }
    return 0;
}

int tf__lm_load_data(tf_lm *g) {
    tf_data_opts o = {0};
    char err[1024];
    if (load_tokenizer(g) != 0 || data_opts(g, &o) != 0) return -1;
    g->source = &tf_data_source_text;
    if (g->source->load(&g->data, &o, g->tok, err, sizeof err) != 0) {
        tf__lm_error(g, "%s\n", err);
        return -1;
    }
    return load_eval_data(g, &o);
}
