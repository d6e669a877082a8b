/*
 * gen job: what a shardrun job file says about the model it trained, for generation -- the task
 * ([shardrun] task: gpt2, bloom or llama, a name or a path to its .so) and the [task] keys that
 * size it and name its tokenizer, as the task read them (a relative path: from the job file's
 * folder, as shardrun takes it).
 *
 * Lifecycle: gen_job_read() once, before the model is opened, with the --set overrides the
 * training command had; the strings live in the gen_job.
 * The command's own flags win over the job's values (generate.c).
 */
#ifndef GEN_JOB_H
#define GEN_JOB_H

#include <stddef.h>

typedef struct gen_job {
    char family[32];                /* "" when [shardrun] task is none of the decoder tasks */
    char size[64];                  /* [task] size */
    char config[8200];              /* [task] config (the Llama family's config.json) */
    char vocab[8200], merges[8200]; /* [task] vocab_json, merges_txt */
    char tokenizer[8200];           /* [task] tokenizer_json */
    int n_head, n_kv_head;          /* [task] n_head or num_attention_heads; num_key_value_heads */
    int resized; /* a [task] key changes one of size's widths (n_layer, ...): the size no longer describes
                    the model, its shapes do */
} gen_job;

/* The job file, then nsets overrides "SECTION.KEY=VALUE" as shardrun's --set takes them (the
   training command's own, repeated: the last value of a key wins; a relative path in one is from
   the current folder).  0; -1 with a message in err (an unreadable file, a line that is not INI, an
   override not of that form, a head count that is no positive integer). */
int gen_job_read(const char *path, const char *const *sets, int nsets, gen_job *j, char *err, size_t errlen);

#endif
