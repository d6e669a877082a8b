/*
 * shardrun_generate (also installed as gpt2_generate, its first name): text from a decoder the
 * project trains -- GPT-2, BLOOM or the Llama family (Llama, Qwen2, Mistral) -- from a
 * FULL_STATE_DICT checkpoint-N folder or an HF model.safetensors.  Run it with --help for the flags.
 *
 * Lifecycle: parse the flags -> load the model (gen_model.c: the family from config.json or the
 * tensors' names, then the family's loader: its configuration from the shapes and config) and the
 * tokenizer (the one the model was trained with) -> tokenize the prompt -> run it through the
 * model once, filling the key/value cache (the family's *_infer.c) -> per new token: pick it
 * (gen_sample.c), print it, run it through the model at the next position -> free.
 *
 * Exit codes as shardrun's: 0 done, 2 a bad flag, file or prompt (one message saying what to do,
 * before any work), 1 a failure while running (out of memory, a model computing NaN or inf).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/out_file.h"

#include "dump.h"
#include "kernels.h"
#include "gen_job.h"
#include "gen_model.h"
#include "gen_sample.h"
#include "tokenizer.h"
#include "tokenizer_saved.h"

#define EXIT_CONFIG 2
#define GEN_STR_(x) #x
#define GEN_STR(x) GEN_STR_(x) /* a macro's value as text */

static const char USAGE[] =
    "usage: shardrun_generate MODEL [--prompt TEXT] [options]   (gpt2_generate: the same command)\n"
    "\n"
    "Continues a prompt with a decoder: GPT-2, BLOOM or the Llama family (Llama, Qwen2, Mistral). MODEL is\n"
    "a checkpoint-N folder a task saved with fsdp.state_dict_type = FULL_STATE_DICT, a folder holding a\n"
    "model.safetensors, or a HuggingFace model.safetensors (F32, F16 or BF16). The family comes from the\n"
    "tensors' names (or config.json's model_type, or --family); the sizes from the shapes, plus what shapes\n"
    "do not say (heads, RoPE, norms) from a config.json next to the model or --config. Runs in fp32 on\n"
    "the CPU (OMP_NUM_THREADS threads), with a key/value cache: each new token costs one token's matrix\n"
    "products and attention over the positions so far.\n"
    "\n"
    "  --prompt TEXT          the text to continue (default: none: start from the end-of-text token)\n"
    "  --prompt-ids 'I I ..'  the prompt as token ids instead of text\n"
    "  --max-new-tokens N     tokens to generate (default 50; fewer when end-of-text comes first or the\n"
    "                         context is full)\n"
    "  --temperature T        0: greedy, the most likely token every time; else (from 1e-30 to 1e6)\n"
    "                         sample from softmax(logits / T) (default 1.0)\n"
    "  --top-k K              sample among the K most likely tokens only (default 50; 0: all)\n"
    "  --top-p P              ... and among the fewest most likely whose probabilities add up to P,\n"
    "                         in (0, 1] (default 1.0: off)\n"
    "  --seed S               the sampling seed: the same seed gives the same text (default 42)\n"
    "  --ignore-eos           go on after the end-of-text token instead of stopping\n"
    "  --vocab FILE --merges FILE\n"
    "                         GPT-2 BPE tokens (the vocab_json and merges_txt the model was trained with)\n"
    "  --tokenizer FILE       an HF tokenizer.json (the tokenizer_json the model was trained with).\n"
    "                         Default: vocab.json and merges.txt next to the model when both are there,\n"
    "                         else its tokenizer.json, else byte-level tokens (one per byte, as the tasks\n"
    "                         without a tokenizer)\n"
    "  --job FILE             the job file the model was trained with: its task (the family), [task] size,\n"
    "                         config, heads and tokenizer keys, where these flags do not say otherwise\n"
    "  --set SECTION.KEY=VALUE\n"
    "                         with --job: the training command's --set overrides of that job, repeated\n"
    "                         (--set task.size=smollm2-135m); the last value of a key wins\n"
    "  --family NAME          gpt2, bloom or llama: when the file does not say\n"
    "  --config FILE          an HF config.json (the llama task's [task] config; default: config.json next\n"
    "                         to the model)\n"
    "  --size NAME            check that the model is this size of its family (GPT-2: tiny, gpt2, ...,\n"
    "                         gpt2-xl; BLOOM: tiny, bloom-560m, ...; Llama: tiny, smollm2-135m, ...) and\n"
    "                         take the heads from it\n"
    "  --n-head N             attention heads (default: --config, config.json, the file's n_head metadata,\n"
    "                         or the family's size of that width)\n"
    "  --n-kv-head N          key/value heads (the Llama family's num_key_value_heads)\n"
    "  --output text|ids      print the text (default), or the token ids of prompt and continuation\n"
    "  --no-kv-cache          recompute the whole prefix for every token (slow; to compare)\n"
    "  --logits FILE          also write the ids and every step's logits to FILE (safetensors; a file\n"
    "                         is replaced through a temporary, a FIFO or /dev/stdout written in place;\n"
    "                         never the model or its tokenizer)\n"
    "  -h, --help             this text\n"
    "\n"
    "Prints the prompt (--prompt-ids: decoded) and its continuation on stdout; the model and the speed\n"
    "on stderr.\n";

typedef struct opts {
    const char *model, *prompt, *prompt_ids, *vocab, *merges, *tokenizer, *family, *config, *size, *logits, *job;
    const char *sets[64]; /* --set, in order */
    int nsets;
    long max_new;
    double temperature;
    float top_p;
    int top_k, n_head, n_kv_head, ignore_eos, ids_out, no_cache;
    unsigned long long seed;
    int job_bytes; /* --job names no tokenizer: the model was trained on byte-level tokens */
    int tok_job;   /* the tokenizer (or job_bytes) is --job's, not a flag's */
} opts;

static const char *prog = "shardrun_generate"; /* argv[0]'s name: messages say which command it was */

/* "prog: " and the message, on stderr */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(%s --help lists the flags)\n", prog);
    va_end(ap);
    return EXIT_CONFIG;
}

/* v, all of it, as a number into *d: 0, or -1 (empty, trailing text, out of double's range) */
static int real(const char *v, double *d) {
    char *end;
    errno = 0;
    *d = strtod(v, &end);
    return *v && !*end && !errno ? 0 : -1;
}

/* a number in [lo, hi] (integer: no fraction) into *out; else -1 after saying why */
static int num(const char *flag, const char *v, double lo, double hi, int integer, double *out) {
    double d;
    if (real(v, &d) != 0 || !(d >= lo && d <= hi) || (integer && d != floor(d))) {
        usage_error("%s %s: expected %s in [%.0f, %g]", flag, v, integer ? "a whole number" : "a number", lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

enum {
    OPT_PROMPT = 256,
    OPT_PROMPT_IDS,
    OPT_MAX_NEW,
    OPT_TEMPERATURE,
    OPT_TOP_K,
    OPT_TOP_P,
    OPT_SEED,
    OPT_VOCAB,
    OPT_MERGES,
    OPT_SIZE,
    OPT_N_HEAD,
    OPT_OUTPUT,
    OPT_LOGITS,
    OPT_IGNORE_EOS,
    OPT_NO_KV_CACHE,
    OPT_TOKENIZER,
    OPT_FAMILY,
    OPT_CONFIG,
    OPT_N_KV_HEAD,
    OPT_JOB,
    OPT_SET
};

static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"prompt", required_argument, NULL, OPT_PROMPT},
    {"prompt-ids", required_argument, NULL, OPT_PROMPT_IDS},
    {"max-new-tokens", required_argument, NULL, OPT_MAX_NEW},
    {"temperature", required_argument, NULL, OPT_TEMPERATURE},
    {"top-k", required_argument, NULL, OPT_TOP_K},
    {"top-p", required_argument, NULL, OPT_TOP_P},
    {"seed", required_argument, NULL, OPT_SEED},
    {"vocab", required_argument, NULL, OPT_VOCAB},
    {"merges", required_argument, NULL, OPT_MERGES},
    {"size", required_argument, NULL, OPT_SIZE},
    {"n-head", required_argument, NULL, OPT_N_HEAD},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"logits", required_argument, NULL, OPT_LOGITS},
    {"ignore-eos", no_argument, NULL, OPT_IGNORE_EOS},
    {"no-kv-cache", no_argument, NULL, OPT_NO_KV_CACHE},
    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
    {"family", required_argument, NULL, OPT_FAMILY},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"n-kv-head", required_argument, NULL, OPT_N_KV_HEAD},
    {"job", required_argument, NULL, OPT_JOB},
    {"set", required_argument, NULL, OPT_SET},
    {NULL, 0, NULL, 0},
};

/* One flag with its value v into o; 0, or EXIT_CONFIG after saying why. */
static int take_flag(opts *o, int c, const char *flag, const char *v) {
    double d;
    switch (c) {
    case OPT_PROMPT: o->prompt = v; break;
    case OPT_PROMPT_IDS: o->prompt_ids = v; break;
    case OPT_VOCAB: o->vocab = v; break;
    case OPT_MERGES: o->merges = v; break;
    case OPT_SIZE: o->size = v; break;
    case OPT_TOKENIZER: o->tokenizer = v; break;
    case OPT_FAMILY: o->family = v; break;
    case OPT_CONFIG: o->config = v; break;
    case OPT_JOB: o->job = v; break;
    case OPT_SET:
        if (o->nsets == (int)(sizeof o->sets / sizeof o->sets[0]))
            return usage_error("--set %s: more than %d --set flags", v, (int)(sizeof o->sets / sizeof o->sets[0]));
        o->sets[o->nsets++] = v;
        break;
    case OPT_LOGITS: o->logits = v; break;
    case OPT_IGNORE_EOS: o->ignore_eos = 1; break;
    case OPT_NO_KV_CACHE: o->no_cache = 1; break;
    case OPT_OUTPUT:
        if (strcmp(v, "text") && strcmp(v, "ids")) return usage_error("--output %s: expected text or ids", v);
        o->ids_out = !strcmp(v, "ids");
        break;
    case OPT_MAX_NEW:
        if (num(flag, v, 0, 1e9, 1, &d)) return EXIT_CONFIG;
        o->max_new = (long)d;
        break;
    case OPT_TEMPERATURE:
        if (real(v, &d) != 0 || !(d == 0 || (d >= GEN_MIN_TEMPERATURE && d <= GEN_MAX_TEMPERATURE)))
            return usage_error(
                "--temperature %s: expected 0 (greedy) or a number from " GEN_STR(GEN_MIN_TEMPERATURE) " to " GEN_STR(
                    GEN_MAX_TEMPERATURE) " (below " GEN_STR(GEN_MIN_TEMPERATURE) " sampling picks "
                                                                                 "the most likely "
                                                                                 "token anyway: "
                                                                                 "use 0)",
                v);
        o->temperature = d;
        break;
    case OPT_TOP_K:
        if (num(flag, v, 0, 1e9, 1, &d)) return EXIT_CONFIG;
        o->top_k = (int)d;
        break;
    case OPT_TOP_P:
        if (real(v, &d) != 0 || !(d > 0 && d <= 1))
            return usage_error("--top-p %s: expected a number in (0, 1], above 0 and at most 1 (1 turns top-p "
                               "off)",
                               v);
        o->top_p = (float)d;
        break;
    case OPT_SEED:
        if (num(flag, v, 0, 9e15, 1, &d)) return EXIT_CONFIG;
        o->seed = (unsigned long long)d;
        break;
    case OPT_N_HEAD:
        if (num(flag, v, 1, 100000, 1, &d)) return EXIT_CONFIG;
        o->n_head = (int)d;
        break;
    case OPT_N_KV_HEAD:
        if (num(flag, v, 1, 100000, 1, &d)) return EXIT_CONFIG;
        o->n_kv_head = (int)d;
        break;
    }
    return 0;
}

/* The job file's values where the flags left a figure open (gen_job.h); 0 or EXIT_CONFIG. */
static int take_job(opts *o) {
    static gen_job j; /* o points into it */
    char err[4600];
    if (!o->job)
        return o->nsets ? usage_error("--set %s: --set changes a job file's keys; give --job too", o->sets[0]) : 0;
    if (gen_job_read(o->job, o->sets, o->nsets, &j, err, sizeof err) != 0) return usage_error("%s", err);
    if (!o->family && j.family[0]) o->family = j.family;
    if (!o->size && !o->config) { /* the job's config.json, else its size */
        if (j.config[0]) o->config = j.config;
        else if (j.size[0] && !j.resized) o->size = j.size;
    }
    if (!o->n_head && j.n_head) o->n_head = j.n_head;
    if (!o->n_kv_head && j.n_kv_head) o->n_kv_head = j.n_kv_head;
    if (!o->vocab && !o->tokenizer) {
        o->tok_job = 1;
        if (j.tokenizer[0]) o->tokenizer = j.tokenizer;
        else if (j.vocab[0] && j.merges[0]) o->vocab = j.vocab, o->merges = j.merges;
        else o->job_bytes = 1;
    }
    return 0;
}

/* getopt_long with "-": MODEL may come before or after the flags, each argument read in order;
   opterr = 0: the messages are the generator's own. */
static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.max_new = 50, .temperature = 1.0f, .top_p = 1.0f, .top_k = 50, .seed = 42};
    optind = 0, opterr = 0;
    for (;;) {
        const char *at = (optind ? optind : 1) < argc ? argv[optind ? optind : 1] : ""; /* the argument being read */
        int idx = -1, c = getopt_long(argc, argv, "-:h", long_opts, &idx);
        if (c == -1) break;
        if (c == 'h') {
            fputs(USAGE, stdout);
            exit(0);
        }
        if (c == ':') return usage_error("%s needs a value", at);
        if (c == '?') return usage_error("unknown flag %s", at);
        if (c == 1) { /* MODEL */
            if (o->model) return usage_error("one MODEL only: %s and %s", o->model, optarg);
            o->model = optarg;
            continue;
        }
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", long_opts[idx].name);
        if (take_flag(o, c, flag, optarg)) return EXIT_CONFIG;
    }
    /* "--" ends the flags: what follows is MODEL */
    for (; optind < argc; optind++) {
        if (o->model) return usage_error("one MODEL only: %s and %s", o->model, argv[optind]);
        o->model = argv[optind];
    }
    if (!o->model) return usage_error("name the MODEL: a checkpoint-N folder or a model.safetensors");
    if (o->prompt && o->prompt_ids) return usage_error("--prompt or --prompt-ids, not both");
    if (!o->vocab != !o->merges) return usage_error("--vocab and --merges go together: both (GPT-2 BPE) or neither");
    if (o->vocab && o->tokenizer)
        return usage_error(
            "--tokenizer or --vocab and --merges, not both: name the tokenizer the model was trained with");
    return take_job(o);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The tokenizer the model was trained with (tokenizer_saved.h): the one the flags or --job name, else
   the one its folder holds (a checkpoint's config.json says which, byte-level too).  A checkpoint's
   recorded tokenizer refuses another named by a flag or the job; a shardrun checkpoint that records
   none (an earlier shardrun's) is refused rather than read with a guessed one.  *what describes it
   for the banner.  NULL after the message. */
static tf_tokenizer *load_tokenizer(const opts *o, const gen_model *gm, char *what, size_t len) {
    char err[9000], a[9000], b[9000];
    tf_saved_tok saved, named = {0};
    if (tf_saved_tokenizer(gm->f.dir, &saved, err, sizeof err) != 0) {
        say("error: %s\n", err);
        return NULL;
    }
    if (o->tokenizer) named.kind = TF_SAVED_JSON, snprintf(named.json, sizeof named.json, "%s", o->tokenizer);
    else if (o->vocab) {
        named.kind = TF_SAVED_GPT2;
        snprintf(named.vocab, sizeof named.vocab, "%s", o->vocab);
        snprintf(named.merges, sizeof named.merges, "%s", o->merges);
    } else if (o->job_bytes) named.kind = TF_SAVED_BYTES;
    const tf_saved_tok *use = named.kind ? &named : &saved;
    if (named.kind && saved.recorded) { /* the checkpoint says which: another one is refused */
        int same = named.kind == saved.kind;
        if (same && named.kind == TF_SAVED_JSON) same = tf_same_bytes(named.json, saved.json);
        if (same && named.kind == TF_SAVED_GPT2)
            same = tf_same_bytes(named.vocab, saved.vocab) && tf_same_bytes(named.merges, saved.merges);
        if (!same) {
            tf_saved_describe(&named, a, sizeof a), tf_saved_describe(&saved, b, sizeof b);
            say("error: %s names %s, but %s was trained with %s (its config.json's shardrun_tokenizer): its "
                "token ids would mean other text. %s\n",
                o->tok_job ? o->job : "the command", a, gm->f.dir, b,
                !o->tok_job ? "Leave the tokenizer flags out (the checkpoint's is the default)"
                            : "Give the job file that trained it, or leave --job out (the checkpoint "
                              "records what generation needs)");
            return NULL;
        } /* the same bytes: read from the file named, which the messages then name */
    }
    if (!use->kind && gm->f.step >= 0) {
        say("error: %s does not record which tokenizer trained it (a checkpoint of an earlier shardrun: no "
            "config.json with shardrun_tokenizer, no tokenizer files); give --job with the job file it was trained "
            "with, or --tokenizer FILE, or --vocab and --merges\n",
            gm->f.dir);
        return NULL;
    }
    tf_tokenizer *t = use->kind == TF_SAVED_JSON   ? tf_tokenizer_load_json(use->json, err, sizeof err)
                      : use->kind == TF_SAVED_GPT2 ? tf_tokenizer_load(use->vocab, use->merges, err, sizeof err)
                                                   : tf_tokenizer_load(NULL, NULL, err, sizeof err);
    if (!t) {
        say("error: %s\n", err);
        return NULL;
    }
    if (use->kind == TF_SAVED_JSON) snprintf(what, len, "tokens from %.4000s", use->json);
    else if (use->kind == TF_SAVED_GPT2)
        snprintf(what, len, "GPT-2 BPE tokens from %.4000s and %.4000s", use->vocab, use->merges);
    else
        snprintf(what, len, "byte-level tokens%s",
                 use == &saved && saved.recorded ? " (as the checkpoint records)" : "");
    return t;
}

/* ids of the prompt (--prompt-ids, or --prompt through the tokenizer); an empty prompt is
   <|endoftext|>, as HF starts GPT-2 without one.  Exit code, 0 when fine. */
static int prompt_ids(const opts *o, tf_tokenizer *tok, const gen_model *w, int32_t **ids, size_t *n) {
    size_t cap = 0;
    *ids = NULL, *n = 0;
    if (o->prompt_ids) {
        for (const char *p = o->prompt_ids; *p;) {
            char *end;
            while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
            if (!*p) break;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v >= w->V) {
                say("error: --prompt-ids: \"%.20s\" is not a token id in [0, %d) (the "
                    "model's vocabulary); give ids separated by spaces or commas\n",
                    p, w->V);
                return EXIT_CONFIG;
            }
            int32_t id = (int32_t)v;
            if (*n == cap) {
                cap = cap ? 2 * cap : 64;
                int32_t *g = realloc(*ids, cap * sizeof *g);
                if (!g) return 1;
                *ids = g;
            }
            (*ids)[(*n)++] = id;
            p = end;
        }
    } else if (o->prompt && *o->prompt) {
        int rc = tf_tokenizer_encode(tok, o->prompt, strlen(o->prompt), ids, n, &cap);
        if (rc) {
            say("error: tokenizing the prompt: %s\n", tf_tokenizer_error(tok));
            return rc == TF_TOKENIZER_PATTERN_LIMIT ? EXIT_CONFIG : 1;
        }
    }
    if (*n == 0) {
        free(*ids);
        if (!(*ids = malloc(sizeof **ids))) return 1;
        (*ids)[0] = tf_tokenizer_eos(tok);
        *n = 1;
    }
    if (*n >= (size_t)w->P) {
        say("error: the prompt is %zu tokens but the model's context (n_positions of %s) is "
            "%d, which leaves no room for a new token; shorten the prompt to at most %d tokens\n",
            *n, w->f.file, w->P, w->P - 1);
        return EXIT_CONFIG;
    }
    return 0;
}

static void put_token(tf_tokenizer *tok, int32_t id, int ids_out) {
    if (ids_out) {
        printf(" %d", id);
        return;
    }
    char buf[256], *p = buf;
    int n = tf_tokenizer_decode(tok, id, buf, sizeof buf);
    if (n > (int)sizeof buf && (p = malloc((size_t)n))) /* a long added token: decode it again, whole */
        tf_tokenizer_decode(tok, id, p, (size_t)n);
    if (n > 0 && p) fwrite(p, 1, (size_t)n, stdout);
    else if (n < 0) printf("<%d>", id); /* an id the tokenizer lacks (--prompt-ids beyond its vocabulary) */
    if (p != buf) free(p);
}

/* --logits is checked before anything is read (base/out_file.h): its folder exists and takes a
   file, and it is none of the files generation reads (the model, its config.json and tokenizer). */
static int check_logits_output(const opts *o) {
    if (!o->logits) return 0;
    struct stat st;
    char dir[4096], in[6][4200], why[4600];
    snprintf(dir, sizeof dir, "%s", o->model);
    if (stat(o->model, &st) != 0 || !S_ISDIR(st.st_mode)) { /* a file: its folder */
        char *slash = strrchr(dir, '/');
        if (slash) slash[slash == dir] = 0;
        else snprintf(dir, sizeof dir, ".");
    }
    static const char *const names[] = {"model.safetensors", "config.json", "vocab.json", "merges.txt",
                                        "tokenizer.json"};
    for (int i = 0; i < 5; i++) snprintf(in[i], sizeof in[i], "%s/%s", dir, names[i]);
    const char *inputs[] = {o->model, in[0],     in[1],        in[2],     in[3], in[4],
                            o->vocab, o->merges, o->tokenizer, o->config, o->job};
    if (sr__out_check(o->logits, inputs, 11, why, sizeof why) != 0)
        return usage_error("--logits: %s (checked before the model is read)", why);
    return 0;
}

int main(int argc, char **argv) {
    const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;
    if (argc > 0) prog = slash ? slash + 1 : argv[0];
    opts o;
    int rc = parse(argc, argv, &o);
    if (!rc) rc = check_logits_output(&o);
    if (rc) return rc;

    gen_model w;
    char err[2048], tokwhat[9000];
    gen_opts wo = {o.family, o.size, o.config, o.n_head, o.n_kv_head};
    double t_load = now();
    if ((rc = gen_model_load(o.model, &wo, &w, err, sizeof err)) != 0) {
        say("error: %s\n", err);
        return rc == -2 ? 1 : EXIT_CONFIG;
    }
    t_load = now() - t_load;
    tf_tokenizer *tok = load_tokenizer(&o, &w, tokwhat, sizeof tokwhat);
    int32_t *ids = NULL;
    size_t n = 0;
    float *logits = NULL, *all = NULL;
    gen_sampler s = {0};
    rc = EXIT_CONFIG;
    if (!tok) goto out;
    int tv = tf_tokenizer_vocab_size(tok);
    if (tv > w.V) {
        say("error: the tokenizer (%s) has %d tokens but %s has embeddings for %d: the "
            "model was trained with other tokens; give the --vocab and --merges it was trained with (or none, "
            "for byte-level tokens)\n",
            tokwhat, tv, w.f.file, w.V);
        goto out;
    }
    if ((rc = prompt_ids(&o, tok, &w, &ids, &n)) != 0) goto out;

    char step[48] = "", sampling[160];
    if (w.f.step >= 0) snprintf(step, sizeof step, " (global_step %lld)", w.f.step);
    if (o.temperature == 0.0) snprintf(sampling, sizeof sampling, "greedy");
    else
        snprintf(sampling, sizeof sampling, "sampling with temperature %g, top-k %d, top-p %g, seed %llu",
                 (double)o.temperature, o.top_k, (double)o.top_p, o.seed);
    say("%s%s: %s; the %s family; %s; %s; fp32 on the CPU, %d thread%s%s\n", w.f.file, step, w.what, w.family, tokwhat,
        sampling, tf_cpu_threads(), tf_cpu_threads() == 1 ? "" : "s", o.no_cache ? ", no KV cache" : "");
    if (tv < w.V)
        say("note: the model has %d token embeddings, the tokenizer %d tokens: ids from %d "
            "on are never picked. Give the tokenizer it was trained with (--tokenizer, or --vocab and --merges)\n",
            w.V, tv, tv);

    rc = 1;
    long room = w.P - (long)n; /* new tokens that still get a position to be fed back at, plus the last */
    long max_new = o.max_new < room + 1 ? o.max_new : room + 1;
    int32_t *grown = realloc(ids, (n + (size_t)max_new + 1) * sizeof *ids);
    if (grown) ids = grown;
    /* the cache: the prompt, and the new tokens fed back (the last is not) */
    long positions = (long)n + (max_new > 0 ? max_new - 1 : 0);
    if (!grown || w.start(&w, (int)(positions < w.P ? positions : w.P)) != 0 ||
        !(logits = malloc((size_t)w.V * sizeof *logits)) ||
        gen_sampler_init(&s, o.seed, w.V, tv, o.temperature, o.top_k, o.top_p) != 0 ||
        (o.logits && !(all = malloc(((size_t)max_new + 1) * (size_t)w.V * sizeof *all)))) {
        say("error: out of memory for the model's key/value cache and buffers\n");
        goto out;
    }
    if (o.ids_out) {
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? " " : "", ids[i]);
    } else if (o.prompt) {
        fputs(o.prompt, stdout);
    } else if (o.prompt_ids) {
        for (size_t i = 0; i < n; i++) put_token(tok, ids[i], 0);
    }
    fflush(stdout);

    const size_t prompt_n = n;
    double t0 = now(), t1 = t0;
    long made = 0;
    int eos = tf_tokenizer_eos(tok), stop = 0;
    if (w.prompt(&w, ids, (int)n, logits) != 0) goto oom;
    t1 = now();
    while (made < max_new) {
        if (all) memcpy(all + (size_t)made * w.V, logits, (size_t)w.V * sizeof *all);
        int32_t id = gen_sample(&s, logits);
        if (id < 0) {
            putchar('\n');
            fflush(stdout);
            say("error: step %ld (position %zu): the logit of token %d is %g: the model "
                "computes non-finite values (its weights hold NaN or inf: a diverged training run, or a damaged "
                "file); no token was picked. Use an earlier checkpoint or a lower learning_rate\n",
                made, n, s.bad, (double)logits[s.bad]);
            rc = 1;
            goto out;
        }
        if (id == eos && !o.ignore_eos) {
            stop = 1;
            break;
        }
        ids[n++] = id;
        made++;
        put_token(tok, id, o.ids_out);
        fflush(stdout);
        if (made == max_new) break;
        int r = o.no_cache ? w.full(&w, ids, (int)n, logits) : w.next(&w, id, logits);
        if (r != 0) goto oom;
    }
    double t2 = now();
    putchar('\n');
    fflush(stdout);
    double rate = made > 0 && t2 > t1 ? (double)made / (t2 - t1) : 0.0;
    say("model read in %.3f s; prompt %zu tokens in %.3f s; %ld new tokens in %.3f s "
        "(%.1f tokens/s)%s\n",
        t_load, prompt_n, t1 - t0, made, t2 - t1, rate,
        stop               ? "; stopped at <|endoftext|>"
        : made < o.max_new ? "; stopped: the model's context is full"
                           : "");
    rc = 0;
    if (all) {
        int32_t pl = (int32_t)prompt_n;
        long steps = made + (stop ? 1 : 0); /* the logits that picked each token, and the one that picked eos */
        tf_dump_tensor t[] = {
            {"input_ids", "I32", 2, {1, (int64_t)n}, ids},
            {"prompt_length", "I32", 1, {1}, &pl},
            {"logits", "F32", 2, {steps, w.V}, all},
        };
        if (tf_dump_write(o.logits, t, 3) != 0) rc = 1;
    }
    goto out;
oom:
    say("error: out of memory running the model\n");
    rc = 1;
out:
    gen_sampler_free(&s);
    free(all);
    free(logits);
    free(ids);
    if (tok) tf_tokenizer_free(tok);
    gen_model_free(&w);
    return rc;
}
