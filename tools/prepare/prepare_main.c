/*
 * shardrun_prepare: text files or JSON Lines into llm.c token shards with a model's tokenizer, on
 * every core.  Run it with --help for the flags; docs/data.md, "Preparing shards".
 *
 * Lifecycle: parse and check every flag and input (exit 2 before any work) -> load the tokenizer
 * and start the threads (prep_pool.c) -> map or read the inputs in order and hand them out as jobs:
 * whole lines of JSON Lines, or pieces of a text file cut where the ids cannot change (prep_cut.c);
 * the threads do all the per-byte work (JSON, tokenizing, packing the ids into the shard's layout)
 * -> take the finished bytes back in input order into the shards (prep_shards.c), drawing the
 * progress (prep_progress.c) -> print the throughput.  The main thread touches each input byte
 * only where a job ends (a newline to find, a cut point) and each output byte once (a copy into the
 * shard's write buffer), so it is never what the threads wait for.
 *
 * Exit codes as shardrun's: 0 done, 2 a bad flag, tokenizer or input (a JSON Lines line that is no
 * object or lacks the field: the file and line; reported when the reader reaches it, shards
 * completed before it stay, complete), 1 a failure while running (out of memory, a full disk),
 * 128+N stopped by signal N (the shard being written is removed: no file looks complete that is not).
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ini.h>

#include "base/fs.h"
#include "shardrun/data.h"

#include "prep_cut.h"
#include "prep_pool.h"
#include "prep_prefix.h"
#include "prep_progress.h"
#include "prep_shards.h"
#include "read_file.h"

#define EXIT_FAILED 1
#define EXIT_CONFIG 2
/* a job's input: the unit of work of one thread (large enough that handing it over costs nothing);
   --chunk-bytes changes it (the tests cut documents and JSON Lines at many places with a small one) */
static size_t chunk_bytes = (size_t)1 << 18;
/* one plain-text file is one document, read whole: at most this much */
#define TEXT_FILE_MAX ((size_t)4 << 30)

static const char USAGE[] =
    " -o OUT_PREFIX [--job JOB.ini | --vocab FILE --merges FILE | --tokenizer-json FILE] [options]\n"
    "       INPUT...\n"
    "\n"
    "Tokenizes text files or JSON Lines into llm.c token shards (a 256 x int32 header, then uint16 tokens,\n"
    "or uint32 for a vocabulary above 65536): OUT_PREFIX_val_000000.bin with the first --val-tokens tokens,\n"
    "then OUT_PREFIX_train_000001.bin, ... of --shard-tokens each. Every document is preceded by the\n"
    "end-of-text token, as llm.c's data scripts write them. INPUT: a .jsonl / .json file (one JSON object\n"
    "per line, its --text-field a document) or any other file (plain text, one document).\n"
    "\n"
    "  -o, --output PREFIX     where the shards go: PREFIX_val_000000.bin ... (a missing folder is made)\n"
    "  --job JOB.ini           the tokenizer of a job's [task]: vocab_json + merges_txt, or tokenizer_json,\n"
    "                          and its text_field (paths relative to the job file, as shardrun reads them;\n"
    "                          the flags below win)\n"
    "  --vocab FILE --merges FILE\n"
    "                          GPT-2 BPE tokens: HF's vocab.json and merges.txt ([task] vocab_json, merges_txt)\n"
    "  --tokenizer-json FILE   an HF tokenizers tokenizer.json ([task] tokenizer_json)\n"
    "                          neither: byte-level tokens (one per byte, <|endoftext|> 256), the tasks' default\n"
    "  --text-field NAME       the JSON Lines field holding the text (default text)\n"
    "  --shard-tokens N        tokens per train shard (default 100000000, llm.c's)\n"
    "  --val-tokens N|auto|all tokens of the val split, the first ones (default auto: 5 percent of the\n"
    "                          tokens, at most 1000000; 0: no val split, the train shards start at 000000;\n"
    "                          all: eval-only data, every token in PREFIX_val_000000.bin, ...)\n"
    "  --threads N             tokenizing threads (default: the cores this process may use)\n"
    "  --chunk-bytes N         input per unit of work of a thread (default 262144): whole lines of JSON\n"
    "                          Lines; a longer text file is cut where the ids cannot change (\"end.\\nNext\":\n"
    "                          after the newline)\n"
    "  --format auto|text|jsonl\n"
    "                          how to read the inputs (default auto: by the file name's ending)\n"
    "  --progress auto|bar|lines|none\n"
    "                          the progress on stderr: a bar redrawn in place (auto: when stderr is a\n"
    "                          terminal) or a plain line every 10 s (auto: otherwise)\n"
    "  -h, --help              this text\n"
    "\n"
    "A shard is written under a hidden temporary name and renamed when complete: an interrupted run leaves\n"
    "no file that looks like a shard. A shard whose file already holds the same tokens is not rewritten\n"
    "(a re-run after an interruption rewrites only what changed). Prints the throughput on stdout.\n"
    "Exit: 0 done, 1 failed while running, 2 a bad flag, tokenizer or input (naming the file and line).\n";

typedef struct {
    const char *out, *text_field, *format, *job;
    prep_tokenizer_files tok;
    uint64_t shard_tokens, val_tokens;
    prep_val_mode val_mode;
    int threads;
    prep_progress_mode progress;
    char **inputs;
    int ninputs;
} opts;

/* The command as the user typed it, in every message: "shardrun prepare" (cmd_prepare.c passes it as
   argv[0]) or shardrun_prepare run directly. */
static const char *prog = "shardrun_prepare";

/* A message on stderr, after the command's name */
static int say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    int n = vfprintf(stderr, fmt, ap);
    va_end(ap);
    return n;
}

static int bad(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "%s: error: ", prog);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see %s --help)\n", prog);
    return EXIT_CONFIG;
}

/* also: what else the flag takes, for the message ("", or ", auto or all") */
static int parse_count(const char *flag, const char *v, uint64_t min, uint64_t max, const char *also, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || errno || v[0] == '-' || x < min || x > max) {
        char range[96];
        snprintf(range, sizeof range, "a whole number from %llu to %llu", (unsigned long long)min,
                 (unsigned long long)max);
        say("error: %s %s: expected %s%s (see %s --help)\n", flag, v, range, also, prog);
        return -1;
    }
    *out = x;
    return 0;
}

static int is_jsonl(const opts *o, const char *path) {
    if (!strcmp(o->format, "jsonl")) return 1;
    if (!strcmp(o->format, "text")) return 0;
    size_t n = strlen(path);
    return (n > 6 && !strcmp(path + n - 6, ".jsonl")) || (n > 5 && !strcmp(path + n - 5, ".json"));
}

/* [task] of a job file: the tokenizer keys and text_field, relative paths made relative to the
   job file's folder (as shardrun resolves them); a flag given on the command line wins. */
typedef struct {
    opts *o;
    char *vocab, *merges, *json, *field;
    const char *dir;
} job_keys;

static int on_job_key(void *user, const char *section, const char *key, const char *value) {
    job_keys *j = user;
    char **slot = NULL;
    if (strcmp(section, "task")) return 1;
    if (!strcmp(key, "vocab_json")) slot = &j->vocab;
    else if (!strcmp(key, "merges_txt")) slot = &j->merges;
    else if (!strcmp(key, "tokenizer_json")) slot = &j->json;
    else if (!strcmp(key, "text_field")) slot = &j->field;
    if (!slot) return 1;
    free(*slot);
    size_t n = strlen(j->dir) + strlen(value) + 2;
    if (!(*slot = malloc(n))) return 0;
    if (value[0] == '/' || slot == &j->field || !value[0]) snprintf(*slot, n, "%s", value);
    else snprintf(*slot, n, "%s/%s", j->dir, value);
    return 1;
}

static char *held[4]; /* the job's strings opts points to */
static void free_held(void) {
    for (int i = 0; i < 4; i++) free(held[i]), held[i] = NULL;
}

static int read_job(opts *o) {
    char dir[4096];
    const char *slash = strrchr(o->job, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - o->job) + (slash == o->job) : 1, slash ? o->job : ".");
    job_keys j = {o, NULL, NULL, NULL, NULL, dir};
    FILE *f = fopen(o->job, "r");
    if (!f) return say("error: --job %s: %s\n", o->job, strerror(errno)), -1;
    int rc = ini_parse_file(f, on_job_key, &j);
    fclose(f);
    if (rc) {
        say("error: --job %s:%d: %s\n", o->job, rc,
            rc > 0 ? "not a valid ini line (expected KEY = VALUE or [section])" : "out of memory");
        return -1;
    }
    /* the job's tokenizer only when no flag names one; the strings live until exit */
    atexit(free_held);
    if (!o->tok.vocab_json && !o->tok.merges_txt && !o->tok.tokenizer_json) {
        o->tok.vocab_json = held[0] = j.vocab, o->tok.merges_txt = held[1] = j.merges;
        o->tok.tokenizer_json = held[2] = j.json;
        j.vocab = j.merges = j.json = NULL;
    }
    if (!o->text_field && j.field) o->text_field = held[3] = j.field, j.field = NULL;
    free(j.vocab), free(j.merges), free(j.json), free(j.field);
    return 0;
}

static int parse(int argc, char **argv, opts *o) {
    memset(o, 0, sizeof *o);
    o->text_field = NULL; /* --text-field, else the job's, else "text" */
    o->format = "auto";
    o->shard_tokens = 100000000;
    o->val_mode = PREP_VAL_AUTO;
    o->progress = PREP_PROGRESS_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: %s", prog);
            fputs(USAGE, stdout);
            exit(0);
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            argv[o->ninputs++] = argv[i]; /* inputs, compacted to the front */
            continue;
        }
        if (!strcmp(a, "--")) {
            while (++i < argc) argv[o->ninputs++] = argv[i];
            break;
        }
        static const char *const with_value[] = {"-o",           "--output",         "--job",         "--vocab",
                                                 "--merges",     "--tokenizer-json", "--text-field",  "--shard-tokens",
                                                 "--val-tokens", "--threads",        "--chunk-bytes", "--format",
                                                 "--progress"};
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(a, with_value[k]);
        if (!known) return bad("unknown option %s%s", a, "");
        if (i + 1 >= argc) return bad("%s needs a value%s", a, "");
        const char *v = argv[++i];
        uint64_t x;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->out = v;
        else if (!strcmp(a, "--job")) o->job = v;
        else if (!strcmp(a, "--vocab")) o->tok.vocab_json = v;
        else if (!strcmp(a, "--merges")) o->tok.merges_txt = v;
        else if (!strcmp(a, "--tokenizer-json")) o->tok.tokenizer_json = v;
        else if (!strcmp(a, "--text-field")) o->text_field = v;
        else if (!strcmp(a, "--shard-tokens")) {
            if (parse_count(a, v, 1, (uint64_t)SR_SHARD_MAX_TOKENS, "", &o->shard_tokens)) return EXIT_CONFIG;
        } else if (!strcmp(a, "--val-tokens")) {
            o->val_mode = !strcmp(v, "auto") ? PREP_VAL_AUTO : !strcmp(v, "all") ? PREP_VAL_ALL : PREP_VAL_TOKENS;
            if (o->val_mode == PREP_VAL_TOKENS &&
                parse_count(a, v, 0, (uint64_t)SR_SHARD_MAX_TOKENS, ", auto or all", &o->val_tokens))
                return EXIT_CONFIG;
        } else if (!strcmp(a, "--threads")) {
            if (parse_count(a, v, 1, 1024, "", &x)) return EXIT_CONFIG;
            o->threads = (int)x;
        } else if (!strcmp(a, "--chunk-bytes")) {
            if (parse_count(a, v, 16, (uint64_t)1 << 30, "", &x)) return EXIT_CONFIG;
            chunk_bytes = (size_t)x;
        } else if (!strcmp(a, "--format")) {
            if (strcmp(v, "auto") && strcmp(v, "text") && strcmp(v, "jsonl"))
                return bad("--format %s: expected auto, text or jsonl%s", v, "");
            o->format = v;
        } else if (!strcmp(a, "--progress")) {
            static const char *const modes[] = {"auto", "bar", "lines", "none"};
            int m = -1;
            for (int k = 0; k < 4; k++)
                if (!strcmp(v, modes[k])) m = k;
            if (m < 0) return bad("--progress %s: expected auto, bar, lines or none%s", v, "");
            o->progress = (prep_progress_mode)m;
        }
    }
    if (o->job && read_job(o)) return EXIT_CONFIG;
    if (!o->text_field) o->text_field = "text";
    if (!o->out) return bad("no output: give -o PREFIX (the shards become PREFIX_val_000000.bin, ...)%s%s", "", "");
    if (!o->ninputs) return bad("no input: give the text or JSON Lines files to tokenize%s%s", "", "");
    if (!o->tok.vocab_json != !o->tok.merges_txt)
        return bad("%s given without %s: GPT-2 BPE needs both files", o->tok.vocab_json ? "--vocab" : "--merges",
                   o->tok.vocab_json ? "--merges" : "--vocab");
    if (o->tok.tokenizer_json && o->tok.vocab_json)
        return bad("--tokenizer-json and --vocab/--merges both given: one tokenizer%s%s", "", "");
    return 0;
}

/* Whether a text file holds a non-whitespace byte: 1, 0 (empty or only whitespace), -1 (unreadable,
   errno).  Reads only up to the first such byte: the first, in any file with text. */
static int has_text(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    char buf[1 << 16];
    ssize_t k;
    int found = 0;
    while (!found && (k = read(fd, buf, sizeof buf)) != 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) break;
        for (ssize_t i = 0; i < k && !found; i++) found = !strchr(" \t\n\r\v\f", buf[i]) || !buf[i];
    }
    int e = errno;
    close(fd);
    errno = e;
    return found ? 1 : k < 0 ? -1 : 0;
}

/* An input that holds no document, or JSON Lines bad from its first line: refused at once, before
   the inputs before it are tokenized (and, for the agent, before a large file is read whole). */
static int check_content(const opts *o, const char *path) {
    char err[1024];
    if (is_jsonl(o, path)) {
        int rc = sr_jsonl_check_start(path, o->text_field, err, sizeof err);
        if (rc < 0) return say("error: %s\n", err), EXIT_CONFIG;
        if (rc > 0) return say("error: %s; remove it from the inputs or fill it\n", err), EXIT_CONFIG;
        return 0;
    }
    int rc = has_text(path);
    if (rc < 0) return say("error: input %s: %s\n", path, strerror(errno)), EXIT_CONFIG;
    if (rc == 0)
        return say("error: input %s: no text: the file is empty or only whitespace, no "
                   "document to tokenize; remove it from the inputs or fill it\n",
                   path),
               EXIT_CONFIG;
    return 0;
}

/* The folder of an output prefix ("." when it names none) */
static void out_folder(const char *out, char *dir, size_t cap) {
    const char *slash = strrchr(out, '/');
    snprintf(dir, cap, "%.*s", slash ? (int)(slash - out) + (slash == out) : 1, slash ? out : ".");
}

/* every input a readable regular file, the output folder possible: before any work */
static int check_paths(const opts *o, uint64_t *total) {
    *total = 0;
    for (int i = 0; i < o->ninputs; i++) {
        struct stat st;
        if (stat(o->inputs[i], &st) != 0)
            return say("error: input %s: %s\n", o->inputs[i], strerror(errno)), EXIT_CONFIG;
        if (!S_ISREG(st.st_mode))
            return say("error: input %s is %s; expected a text or JSON Lines file\n", o->inputs[i],
                       tf_file_kind(st.st_mode)),
                   EXIT_CONFIG;
        *total += (uint64_t)st.st_size;
    }
    for (int i = 0; i < o->ninputs; i++) {
        int rc = check_content(o, o->inputs[i]);
        if (rc) return rc;
    }
    /* the output folder: made (mkdir -p) once the tokenizer is loaded; here, the nearest folder that
       exists must be one this process can write in */
    char dir[4096];
    out_folder(o->out, dir, sizeof dir);
    struct stat st;
    char *d = dir;
    while (stat(d, &st) != 0 && (errno == ENOENT || errno == ENOTDIR) && strcmp(d, ".") && strcmp(d, "/"))
        d = dirname(d);
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode) || access(d, W_OK) != 0)
        return say("error: -o %s: %s %s; choose another -o\n", o->out, d,
                   stat(d, &st) != 0      ? strerror(errno)
                   : !S_ISDIR(st.st_mode) ? "is not a folder"
                                          : "is not a folder this user can write in"),
               EXIT_CONFIG;
    return 0;
}

/* -o's folder, made with its missing parents: 0, or -1 after saying why not */
static int make_out_folder(const opts *o) {
    char dir[4096], failed[4096];
    out_folder(o->out, dir, sizeof dir);
    if (sr__mkdir_p(dir, failed, sizeof failed) == 0) return 0;
    say("error: -o %s: cannot make the folder %s: %s\n", o->out, failed, strerror(errno));
    return -1;
}

/* ---- the run ---------------------------------------------------------------------------------- */

/* What jobs point into: a JSON Lines file mapped, or a text file read whole.  Freed when its last
   job is taken back (jobs come back in input order, so the sources go in order too). */
typedef struct {
    char *mem;
    size_t len;
    int mapped;
    size_t pending; /* jobs handed out and not taken back */
    int complete;   /* every job of it handed out */
} source;

static void source_free(source *src) {
    if (src->mapped) munmap(src->mem, src->len);
    else free(src->mem);
    free(src);
}

/* one job of src taken back (or, with done, the last one handed out) */
static void source_put(source *src, int done) {
    if (done) src->complete = 1;
    else src->pending--;
    if (src->complete && !src->pending) source_free(src);
}

typedef struct {
    prep_pool *pool;
    const char *text_field;
    prep_shards shards;
    prep_progress progress;
    uint64_t files_before; /* input bytes of the files before the one being handed out */
    uint64_t done_bytes;   /* input bytes whose tokens were written */
    uint64_t text_bytes, docs;
    int config_error; /* the failure is the input's fault: exit 2 */
    char err[1600];   /* a job's name and its err */
} run;

static int ignore_record(void *user, const char *text, size_t len, long long line) {
    (void)user, (void)text, (void)len, (void)line;
    return 0;
}

/* A job that failed, into r->err.  A JSON Lines line's message names the line within the job: the
   job's lines are read again with their line numbers in the file (counted only now, on this error). */
static int job_failed(run *r, const prep_job *j) {
    if (j->status == PREP_FAIL_MEMORY) return snprintf(r->err, sizeof r->err, "out of memory while tokenizing"), -1;
    if (j->status == PREP_FAIL_PATTERN) r->config_error = 1; /* the tokenizer.json's pattern, named in err */
    if (j->status != PREP_FAIL_INPUT) return snprintf(r->err, sizeof r->err, "%s: %s", j->name, j->err), -1;
    r->config_error = 1;
    const source *src = j->source;
    long long line = 1;
    for (const char *p = src->mem, *end = src->mem + j->in_off; (p = memchr(p, '\n', (size_t)(end - p))); p++) line++;
    if (sr_jsonl_each(j->in, j->in_len, j->name, line, r->text_field, ignore_record, NULL, r->err, sizeof r->err) >= 0)
        snprintf(r->err, sizeof r->err, "%s", j->err); /* (not found again: the job's own message) */
    return -1;
}

/* The oldest job's tokens into the shards (waits for it); 0 also when none is in flight. */
static int take_one(run *r) {
    prep_job *j = prep_pool_next_done(r->pool);
    if (!j) return 0;
    if (j->status != PREP_OK) return job_failed(r, j);
    if (prep_shards_push(&r->shards, j->out, j->ntokens, r->err, sizeof r->err)) return -1;
    r->done_bytes = j->in_end;
    r->text_bytes += j->text_bytes;
    r->docs += j->docs;
    source_put(j->source, 0);
    prep_pool_release(r->pool);
    prep_progress_update(&r->progress, r->done_bytes, r->shards.tokens, 0);
    return 0;
}

/* src->mem[off, off + len) to a thread (once one is free: finished jobs are written meanwhile) */
static int hand_out(run *r, source *src, prep_job_kind kind, const char *name, size_t off, size_t len, int eot_first) {
    prep_job *j;
    while (!(j = prep_pool_free_slot(r->pool)))
        if (take_one(r)) return -1;
    j->kind = kind;
    j->in = src->mem + off;
    j->in_len = len;
    j->eot_first = eot_first;
    j->name = name;
    j->in_off = off;
    j->in_end = r->files_before + off + len;
    j->source = src;
    src->pending++;
    prep_pool_submit(r->pool);
    return 0;
}

/* A JSON Lines file, mapped (never copied), in jobs of whole lines of about chunk_bytes: the main
   thread only looks for the newline at each job's end.  (A single line longer than that is one
   job: its record is tokenized by one thread.) */
static int hand_out_jsonl(run *r, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(r->err, sizeof r->err, "%s: cannot open it as a JSON Lines file: %s", path,
                 fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return r->config_error = 1, -1;
    }
    source *src = calloc(1, sizeof *src);
    if (!src) return close(fd), snprintf(r->err, sizeof r->err, "out of memory"), -1;
    src->len = (size_t)st.st_size;
    if (src->len) {
        void *m = mmap(NULL, src->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            snprintf(r->err, sizeof r->err, "%s: cannot map: %s", path, strerror(errno));
            close(fd), free(src);
            return -1;
        }
        madvise(m, src->len, MADV_SEQUENTIAL);
        src->mem = m, src->mapped = 1;
    }
    close(fd);
    const char *t = src->mem;
    for (size_t at = 0; at < src->len;) {
        size_t end = src->len;
        if (src->len - at > chunk_bytes) {
            const char *nl = memchr(t + at + chunk_bytes - 1, '\n', src->len - (at + chunk_bytes - 1));
            if (nl) end = (size_t)(nl - t) + 1;
        }
        if (hand_out(r, src, PREP_JOB_JSONL, path, at, end - at, 0)) return -1;
        at = end;
    }
    r->files_before += src->len;
    source_put(src, 1);
    return 0;
}

/* A text file, one document, read whole and cut into jobs of about chunk_bytes where the ids cannot
   change (prep_cut.h); an empty file is a document too (its end-of-text token). */
static int hand_out_text(run *r, const char *path) {
    source *src = calloc(1, sizeof *src);
    if (!src) return snprintf(r->err, sizeof r->err, "out of memory"), -1;
    src->mem = tf_read_file_max(path, "text file", TEXT_FILE_MAX,
                                "the 4 GiB one text file may hold (it is one document, read whole; split it, or "
                                "write it as JSON Lines)",
                                &src->len, r->err, sizeof r->err);
    if (!src->mem) return free(src), r->config_error = 1, -1;
    for (size_t at = 0, first = 1; first || at < src->len; first = 0) {
        size_t end = src->len - at <= chunk_bytes ? src->len : prep_cut_point(src->mem, src->len, at, at + chunk_bytes);
        if (hand_out(r, src, PREP_JOB_TEXT, path, at, end - at, (int)first)) return -1;
        at = end;
    }
    r->files_before += src->len;
    source_put(src, 1);
    return 0;
}

/* the calling thread's CPU seconds in user mode (*sys: in the kernel: the shards' writes and syncs) */
static double thread_user_s(double *sys) {
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) return *sys = 0, 0;
    *sys = (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec;
}

/* What the val split holds, and a warning when it leaves little or nothing to train on */
static void report_val(const opts *o, const prep_shards *s) {
    unsigned long long all = s->tokens, val = s->val_mode == PREP_VAL_ALL ? all
                                              : s->val_tokens < all       ? s->val_tokens
                                                                          : all;
    double pct = all ? 100.0 * (double)val / (double)all : 0;
    if (s->val_mode == PREP_VAL_ALL)
        printf("val split: all %llu tokens (--val-tokens all: eval-only data, no train shard)\n", all);
    else if (s->val_auto)
        printf("val split: %llu tokens, %.1f%% of %llu (the default: %d%%, at most %d; --val-tokens N sets it)\n", val,
               pct, all, PREP_VAL_AUTO_PERCENT, PREP_VAL_AUTO_MAX);
    else if (val)
        printf("val split: %llu tokens, %.1f%% of %llu (--val-tokens %llu)\n", val, pct, all,
               (unsigned long long)o->val_tokens);
    if (s->val_mode != PREP_VAL_TOKENS || s->val_auto || !all) return;
    if (all <= o->val_tokens)
        say("warning: all %llu tokens went to the val split (--val-tokens %llu): there is no train shard; give a "
            "smaller --val-tokens, or --val-tokens all for eval-only data\n",
            all, (unsigned long long)o->val_tokens);
    else if (val * 5 > all) /* more than 20% */
        say("warning: the val split (--val-tokens %llu) holds %.0f%% of the %llu tokens: they are not trained on, "
            "and every evaluation reads them all; give a smaller --val-tokens (or leave it out: %d%%, at most %d)\n",
            (unsigned long long)o->val_tokens, pct, all, PREP_VAL_AUTO_PERCENT, PREP_VAL_AUTO_MAX);
}

static void on_signal(int sig) {
    /* the temporary of the shard being written goes; then die of the signal (128+N) */
    prep_shards_abort();
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv) {
    opts o;
    if (argc > 0 && argv[0][0]) prog = basename(argv[0]); /* (POSIX basename: argv[0] is ours to modify) */
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    o.inputs = argv;
    uint64_t total;
    if ((rc = check_paths(&o, &total))) return rc;
    if (!o.threads) {
        cpu_set_t cpus;
        long n = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : sysconf(_SC_NPROCESSORS_ONLN);
        o.threads = n > 0 ? (int)n : 1;
    }
    run r;
    memset(&r, 0, sizeof r);
    r.text_field = o.text_field;
    double t0 = prep_now();
    char err[1024];
    if (!(r.pool = prep_pool_start(&o.tok, o.threads, o.text_field, err, sizeof err)))
        return say("error: %s\n", err), EXIT_CONFIG;
    int vocab = prep_pool_vocab_size(r.pool);
    const char *eos_from; /* the tokenizer's own string: read before the pool stops */
    char eos_why[200];
    int eos = prep_pool_eos(r.pool, &eos_from);
    snprintf(eos_why, sizeof eos_why, "%s", eos_from);
    double t_load = prep_now() - t0;
    /* which tokenizer writes the shards: recorded in each, and the prefix must hold no other's */
    const char *tok_files[2] = {o.tok.tokenizer_json ? o.tok.tokenizer_json : o.tok.vocab_json, o.tok.merges_txt};
    sr_shard_tokenizer tok_id;
    if (make_out_folder(&o) != 0) _exit(EXIT_CONFIG); /* the threads wait for work: leave now */
    if (sr_shard_tokenizer_of_files(&tok_id, tok_files,
                                    o.tok.tokenizer_json ? 1
                                    : o.tok.vocab_json   ? 2
                                                         : 0,
                                    vocab, err, sizeof err) != 0 ||
        prep_prefix_check(o.out, &tok_id, sr_shard_token_bytes(vocab), err, sizeof err) != 0) {
        say("error: %s\n", err);
        _exit(EXIT_CONFIG); /* the threads wait for work: leave now */
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    prep_shards_init(&r.shards, o.out, o.shard_tokens, o.val_mode, o.val_tokens, vocab, &tok_id, err, sizeof err);
    prep_progress_init(&r.progress, o.progress, total, 10);
    double sys0, t1 = prep_now(), user0 = thread_user_s(&sys0);
    for (int i = 0; i < o.ninputs && !rc; i++) {
        const char *path = o.inputs[i];
        rc = is_jsonl(&o, path) ? hand_out_jsonl(&r, path) : hand_out_text(&r, path);
    }
    while (!rc && prep_pool_next_done(r.pool)) rc = take_one(&r);
    if (!rc) rc = prep_shards_finish(&r.shards, r.err, sizeof r.err);
    /* the prefix holds exactly the new set: this tokenizer's shards left from an earlier run go */
    int removed = 0, invalid = 0;
    char removed_first[4096] = "", invalid_first[4096] = "";
    if (!rc)
        rc = prep_prefix_clean(&r.shards, &tok_id, &removed, removed_first, &invalid, invalid_first,
                               sizeof removed_first, r.err, sizeof r.err);
    double sys2, t2 = prep_now(), main_user = thread_user_s(&sys2) - user0, main_sys = sys2 - sys0;
    /* bytes count the input files: the end is 100% */
    prep_progress_update(&r.progress, rc ? r.done_bytes : total, r.shards.tokens, 1);
    prep_progress_break(&r.progress);
    if (rc) {
        prep_shards_abort();
        say("error: %s\n", r.err);
        _exit(r.config_error ? EXIT_CONFIG : EXIT_FAILED); /* threads may still be busy: leave now */
    }
    double worker_cpu;
    prep_pool_stop(r.pool, &worker_cpu);
    double s = t2 - t1;
    printf("prepared %llu tokens from %llu documents (%.1f MB of text in %.1f MB of input) in %.2f s with %d "
           "threads: %.2f MB/s, %.2f M tokens/s (tokenizer load %.2f s)\n",
           (unsigned long long)r.shards.tokens, (unsigned long long)r.docs, (double)r.text_bytes / 1e6,
           (double)total / 1e6, s, o.threads, s > 0 ? (double)r.text_bytes / 1e6 / s : 0,
           s > 0 ? (double)r.shards.tokens / 1e6 / s : 0, t_load);
    printf("CPU: %.3f s in the tokenizing threads; the main thread (handing out input, writing shards) %.3f s user, "
           "%.3f s system\n",
           worker_cpu, main_user, main_sys);
    char desc[256];
    sr_shard_tokenizer_describe(&tok_id, desc, sizeof desc);
    printf("shards: %d written, %d already complete and identical (kept); vocabulary %d, %s tokens; %s\n",
           r.shards.written, r.shards.kept, vocab, sr_shard_token_bytes(vocab) == 2 ? "uint16" : "uint32", desc);
    printf("end of text (before each document): id %d, %s\n", eos, eos_why);
    if (removed)
        printf("shards: %d removed (%s%s), left from an earlier run with this tokenizer that wrote more; not part of "
               "this data\n",
               removed, removed_first, removed > 1 ? ", ..." : "");
    if (invalid)
        say("warning: %s%s is named like a shard of this prefix but is no valid shard (%d such file%s); it is not "
            "part of this data, and training refuses it: remove it\n",
            invalid_first, invalid > 1 ? " (and more)" : "", invalid, invalid > 1 ? "s" : "");
    report_val(&o, &r.shards);
    return 0;
}
