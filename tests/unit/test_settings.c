/* A worker's settings read from a given environment (config/worker_settings.h), the FSDP variables
   with accelerate's rules (config/fsdp_settings.h) and the one table of enumerations
   (config/enums.h): torch's strategy numbers, names both ways, the key tables' choices (the
   [shardrun] table's and the trainer's [task] table's). */
#include <string.h>

#include "check.h"
#include "config/enums.h"
#include "config/env_table.h"
#include "config/value.h"
#include "config/worker_settings.h"
#include "trainer/train_args.h"

/* the environment a test gives: NAME=VALUE strings, NULL-terminated */
static const char *const *ENV;
static const char *get(const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = ENV; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

static int parse(const char *const *env, int model, sr__worker_settings *s, sr__diag *d) {
    ENV = env;
    return sr__worker_settings_parse(s, get, model, d);
}

/* whether the diag's first message contains `what` */
static int says(const sr__diag *d, const char *what) { return d->kept && strstr(d->msgs[0], what) != NULL; }

int main(void) {
    sr__worker_settings s;
    sr__diag d = {0};

    /* an empty environment: the defaults, no error */
    const char *const none[] = {NULL};
    CHECK(parse(none, 1, &s, &d) == 0 && d.n == 0);
    CHECK(!s.fsdp.enabled && s.fsdp.precision == SR__PRECISION_NO && s.fsdp.param_dtype == SR_FLOAT32);
    CHECK(s.fsdp.sync_module_states == 1 && s.omp_threads == 0 && !s.profile && !s.kill_at.set);
    CHECK_STR(s.job_id, "");
    sr__worker_settings_free(&s);

    /* torch's numbers 1..5 as accelerate writes FSDP_SHARDING_STRATEGY, and the names in any case */
    const char *digits[] = {"1", "2", "3", "4", "5"};
    const sr__strategy want[] = {SR__FULL_SHARD, SR__SHARD_GRAD_OP, SR__NO_SHARD, SR__HYBRID_SHARD,
                                 SR__HYBRID_SHARD_ZERO2};
    for (int i = 0; i < 5; i++) {
        char var[64];
        snprintf(var, sizeof var, "FSDP_SHARDING_STRATEGY=%s", digits[i]);
        const char *const env[] = {"ACCELERATE_USE_FSDP=true", var, NULL};
        CHECK(parse(env, 1, &s, &d) == 0 && s.fsdp.strategy == want[i]);
        sr__worker_settings_free(&s);
        CHECK(sr__enum_index(SR__STRATEGY_CHOICES, SR_KEY_ENUM_DIGITS, sr__strategy_name(want[i])) == (int)want[i]);
    }
    CHECK_STR(sr__strategy_name(SR__HYBRID_SHARD_ZERO2), "HYBRID_SHARD_ZERO2");
    CHECK_STR(sr__strategy_name((sr__strategy)9), "?");
    const char *const v1[] = {"ACCELERATE_USE_FSDP=TRUE",
                              "FSDP_SHARDING_STRATEGY=shard_grad_op",
                              "FSDP_BACKWARD_PREFETCH=BACKWARD_POST",
                              "FSDP_STATE_DICT_TYPE=sharded_state_dict",
                              "ACCELERATE_MIXED_PRECISION=bf16",
                              "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP",
                              "FSDP_TRANSFORMER_CLS_TO_WRAP=Block,Head",
                              NULL};
    CHECK(parse(v1, 1, &s, &d) == 0 && d.n == 0);
    CHECK(s.fsdp.enabled && s.fsdp.strategy == SR__SHARD_GRAD_OP && !s.fsdp.reshard_after_forward);
    CHECK(s.fsdp.backward_prefetch == SR__PREFETCH_POST && s.fsdp.state_dict == SR__SD_SHARDED);
    CHECK(s.fsdp.precision == SR__PRECISION_BF16 && s.fsdp.param_dtype == SR_BFLOAT16);
    CHECK_STR(s.fsdp.enabled_spelling, "TRUE"); /* the engine warns: accelerate takes only `true` */
    CHECK(s.fsdp.wrap == SR__WRAP_TRANSFORMER && s.fsdp.wrap_classes && !strcmp(s.fsdp.wrap_classes[1], "Head"));
    sr__worker_settings_free(&s);

    /* bad values: one message each, naming the variable, its value and what is accepted */
    const char *const bad[] = {"ACCELERATE_USE_FSDP=true", "FSDP_SHARDING_STRATEGY=6", NULL};
    CHECK(parse(bad, 1, &s, &d) == -1 && d.n == 1);
    CHECK(says(&d, "FSDP_SHARDING_STRATEGY=6: expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, "
                   "HYBRID_SHARD_ZERO2"));
    sr__diag_clear(&d), sr__worker_settings_free(&s);
    const char *const upper[] = {"ACCELERATE_MIXED_PRECISION=BF16", NULL};
    CHECK(parse(upper, 1, &s, &d) == -1 &&
          says(&d, "ACCELERATE_MIXED_PRECISION=BF16: expected no, fp16 or bf16, lowercase"));
    sr__diag_clear(&d), sr__worker_settings_free(&s);
    const char *const fp8[] = {"ACCELERATE_MIXED_PRECISION=fp8", NULL};
    CHECK(parse(fp8, 1, &s, &d) == -1 && says(&d, "fp8 is not supported"));
    sr__diag_clear(&d), sr__worker_settings_free(&s);
    /* a main task's worker reads no FSDP variable */
    CHECK(parse(bad, 0, &s, &d) == 0 && d.n == 0 && !s.fsdp.enabled);
    sr__worker_settings_free(&s);

    /* the rest of the contract, typed */
    const char *const rest[] = {"SHARDRUN_JOB_ID=abc",
                                "SLURM_RESTART_COUNT=3",
                                "OMP_NUM_THREADS=4,2",
                                "SHARDRUN_PROFILE=1",
                                "SHARDRUN_DEBUG_KILL_AT=1:7:stop",
                                "SHARDRUN_DEBUG_PAUSE_AT=0:3:every",
                                "SHARDRUN_DEBUG_SAVE_DELAY_MS=250",
                                "GLOO_SOCKET_IFNAME=eth1",
                                NULL};
    CHECK(parse(rest, 0, &s, &d) == 0);
    CHECK_STR(s.job_id, "abc");
    CHECK(s.slurm_restarts == 3 && s.omp_threads == 4 && s.profile == 1 && s.save_delay_ms == 250);
    CHECK(s.kill_at.set && s.kill_at.rank == 1 && s.kill_at.step == 7 && s.kill_at.stop && !s.kill_at.every);
    CHECK(s.npause == 0); /* PAUSE_AT takes no suffix but an attempt */
    CHECK(s.gloo_iface && !strcmp(s.gloo_iface, "eth1") && !s.pg_fault);
    sr__worker_settings_free(&s);

    /* PAUSE_AT: a list, each in the first attempt or the one after '@' */
    const char *pauses[] = {"SHARDRUN_DEBUG_PAUSE_AT=0:7,1:12@2", NULL};
    CHECK(parse(pauses, 0, &s, &d) == 0);
    CHECK(s.npause == 2 && s.pause_at[0].rank == 0 && s.pause_at[0].step == 7 && s.pause_at[0].attempt == 0);
    CHECK(s.pause_at[1].rank == 1 && s.pause_at[1].step == 12 && s.pause_at[1].attempt == 2);
    sr__worker_settings_free(&s);

    /* the [shardrun] key table takes log_level's choices from the one table */
    const sr_key *lvl = sr__find_key(sr__shardrun_keys, "log_level");
    CHECK(lvl && !strcmp(lvl->choices, "error|warn|info|debug"));
    CHECK(sr__enum_index(SR__LOG_LEVEL_CHOICES, 0, "debug") == SR_LOG_DEBUG);
    CHECK(!strcmp(SR__STATE_DICT_CHOICES, "FULL_STATE_DICT|LOCAL_STATE_DICT|SHARDED_STATE_DICT"));

    /* the trainer's [task] keys take their choices from the one table, as they always read */
    const struct {
        const char *key, *choices;
    } task[] = {
        {"lr_scheduler_type", "linear|cosine|constant|constant_with_warmup"},
        {"logging_strategy", "no|steps|epoch"},
        {"save_strategy", "no|steps|epoch|best"},
        {"eval_strategy", "no|steps|epoch"},
        {"metric_for_best_model", "loss|eval_loss"},
        {"nan_policy", "stop|skip_step|warn"},
    };
    for (size_t i = 0; i < sizeof task / sizeof *task; i++) {
        const sr_key *k = sr__find_key(sr__trainer_keys, task[i].key);
        CHECK(k && k->type == SR_KEY_ENUM && !strcmp(k->choices, task[i].choices));
        if (k && k->def) CHECK(sr__enum_index(k->choices, k->flags, k->def) >= 0); /* the default is a member */
    }
    CHECK(!strcmp(SR__SCHEDULE_CHOICES, "linear|cosine|constant|constant_with_warmup"));
    CHECK(!strcmp(SR__METRIC_CHOICES, "loss|eval_loss"));
    /* a value's number and a number's name, both ways, through every member */
    for (int i = SR__SCHED_LINEAR; i <= SR__SCHED_CONSTANT_WARMUP; i++) {
        char name[32];
        sr__enum_choice(SR__SCHEDULE_CHOICES, i, name, sizeof name);
        CHECK(sr__enum_index(SR__SCHEDULE_CHOICES, 0, name) == i);
    }
    CHECK(sr__enum_index(SR__SCHEDULE_CHOICES, 0, "Constant_With_Warmup") == SR__SCHED_CONSTANT_WARMUP);
    for (int i = SR__EVERY_NEVER; i <= SR__EVERY_BEST; i++)
        CHECK(sr__enum_index(SR__SAVE_STRATEGY_CHOICES, 0, sr__every_name((sr__every)i)) == i);
    /* logging_strategy and eval_strategy are save_strategy's first members, with the same numbers */
    CHECK(sr__enum_index(SR__INTERVAL_CHOICES, 0, "epoch") == SR__EVERY_EPOCH);
    CHECK(sr__enum_index(SR__INTERVAL_CHOICES, 0, "no") == SR__EVERY_NEVER);
    CHECK(sr__enum_index(SR__INTERVAL_CHOICES, 0, "best") == -1);
    CHECK(sr__enum_index(SR__INTERVAL_CHOICES, 0, "2") == -1); /* no digits */
    CHECK_STR(sr__every_name(SR__EVERY_STEPS), "steps");
    CHECK_STR(sr__every_name(SR__EVERY_BEST), "best");
    CHECK_STR(sr__every_name((sr__every)4), "?");
    for (int i = SR__NAN_STOP; i <= SR__NAN_WARN; i++)
        CHECK(sr__enum_index(SR__NAN_POLICY_CHOICES, 0, sr__nan_policy_name((sr__nan_policy)i)) == i);
    CHECK_STR(sr__nan_policy_name(SR__NAN_SKIP_STEP), "skip_step");
    CHECK_STR(sr__nan_policy_name((sr__nan_policy)-1), "?");
    CHECK(sr__enum_index(SR__METRIC_CHOICES, 0, "EVAL_LOSS") == SR__METRIC_EVAL_LOSS);
    /* a zeroed sr__train_args evaluates never (tests and probes build them so) */
    CHECK(SR__EVERY_NEVER == 0);
    return CHECK_DONE();
}
