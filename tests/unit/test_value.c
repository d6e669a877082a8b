/* Typed values with accelerate's semantics, the key -> variable rule, "did you mean". */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "config/value.h"

static char *norm(const sr_key *k, const char *in) {
    char *out = NULL, err[256];
    return sr__value_normalize(k, in, &out, err, sizeof err) == 0 ? out : NULL;
}

int main(void) {
    int b = -1;
    const char *yes[] = {"y", "YES", "t", "True", "on", "1"}, *no[] = {"n", "No", "F", "false", "OFF", "0"};
    for (int i = 0; i < 6; i++) {
        CHECK(sr__parse_bool(yes[i], &b) == 0 && b == 1);
        CHECK(sr__parse_bool(no[i], &b) == 0 && b == 0);
    }
    CHECK(sr__parse_bool("", &b) < 0);
    CHECK(sr__parse_bool("2", &b) < 0);
    CHECK(sr__parse_bool("yess", &b) < 0);

    long long v;
    CHECK(sr__parse_int("42", &v) == 0 && v == 42);
    CHECK(sr__parse_int("-3", &v) == 0 && v == -3);
    CHECK(sr__parse_int("1e8", &v) < 0);
    CHECK(sr__parse_int(" 4", &v) < 0);
    CHECK(sr__parse_int("99999999999999999999", &v) < 0);

    const char *strat = "FULL_SHARD|SHARD_GRAD_OP|NO_SHARD|HYBRID_SHARD|HYBRID_SHARD_ZERO2";
    CHECK(sr__enum_index(strat, SR_KEY_ENUM_DIGITS, "full_shard") == 0);
    CHECK(sr__enum_index(strat, SR_KEY_ENUM_DIGITS, "5") == 4);
    CHECK(sr__enum_index(strat, SR_KEY_ENUM_DIGITS, "6") < 0);
    CHECK(sr__enum_index(strat, SR_KEY_ENUM_DIGITS, "0") < 0);
    CHECK(sr__enum_index(strat, 0, "2") < 0);
    CHECK(sr__enum_index(strat, 0, "FULL") < 0);

    sr_key kb = {"b", SR_KEY_BOOL, NULL, NULL, 0, 0, 0, NULL, ""};
    sr_key ke = {"e", SR_KEY_ENUM, NULL, strat, SR_KEY_ENUM_DIGITS, 0, 0, NULL, ""};
    sr_key kl = {"l", SR_KEY_LIST, NULL, NULL, 0, 0, 0, NULL, ""};
    sr_key ki = {"i", SR_KEY_INT, NULL, NULL, 0, 1, 8, NULL, ""};
    char *s;
    s = norm(&kb, "YES");
    CHECK_STR(s, "true");
    free(s);
    s = norm(&kb, "off");
    CHECK_STR(s, "false");
    free(s);
    CHECK(norm(&kb, "") == NULL);
    s = norm(&ke, "2");
    CHECK_STR(s, "SHARD_GRAD_OP");
    free(s);
    s = norm(&ke, "hybrid_shard");
    CHECK_STR(s, "HYBRID_SHARD");
    free(s);
    s = norm(&kl, " GPT2Block , BertLayer ");
    CHECK_STR(s, "GPT2Block,BertLayer");
    free(s);
    CHECK(norm(&kl, "A,,B") == NULL);
    CHECK(norm(&kl, "A B") == NULL);
    s = norm(&ki, "8");
    CHECK_STR(s, "8");
    free(s);
    CHECK(norm(&ki, "9") == NULL);
    CHECK(norm(&ki, "0") == NULL);

    char err[256], *out = NULL;
    CHECK(sr__value_normalize(&ke, "FULL", &out, err, sizeof err) < 0);
    CHECK(strstr(err, "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or 1-5") != NULL);

    char var[128];
    sr__key_env_name("accelerate", "fsdp.sharding_strategy", var, sizeof var);
    CHECK_STR(var, "SHARDRUN_ACCELERATE_FSDP_SHARDING_STRATEGY");
    sr__key_env_name("shardrun", "nproc_per_node", var, sizeof var);
    CHECK_STR(var, "SHARDRUN_NPROC_PER_NODE");
    sr__key_env_name("task", "learning-rate", var, sizeof var);
    CHECK_STR(var, "SHARDRUN_TASK_LEARNING_RATE");

    const char *keys[] = {"fsdp.sharding_strategy", "fsdp.state_dict_type", "mixed_precision"};
    CHECK_STR(sr__closest("fsdp.sharding_stratgy", keys, 3), "fsdp.sharding_strategy");
    CHECK_STR(sr__closest("mixed_precison", keys, 3), "mixed_precision");
    CHECK(sr__closest("zzz", keys, 3) == NULL);
    CHECK(sr__edit_distance("kitten", "sitting") == 3);

    /* doubles: the shortest spelling that reads back the same; JSON's null for NaN and inf */
    char num[40];
    CHECK_STR(sr__fmt_double(0.011761408, num, sizeof num), "0.011761408");
    CHECK_STR(sr__fmt_double(0.1, num, sizeof num), "0.1");
    CHECK_STR(sr__fmt_double(1e300, num, sizeof num), "1e+300");
    CHECK_STR(sr__fmt_double(3, num, sizeof num), "3");
    CHECK_STR(sr__fmt_double(NAN, num, sizeof num), "null");
    CHECK_STR(sr__fmt_double(-INFINITY, num, sizeof num), "null");
    double tricky[] = {0.1 + 0.2, 1.0 / 3, 2.0 / 3, 5e-324, 1.7976931348623157e308, 123456789.123456789, -0.0};
    for (size_t i = 0; i < sizeof tricky / sizeof *tricky; i++) {
        sr__fmt_double(tricky[i], num, sizeof num);
        CHECK(strtod(num, NULL) == tricky[i]);
    }
    CHECK_STR(sr__fmt_double(0.1 + 0.2, num, sizeof num), "0.30000000000000004"); /* needs all 17 */

    CHECK(sr__valid_env_name("FSDP_X1"));
    CHECK(!sr__valid_env_name("1X"));
    CHECK(!sr__valid_env_name("A-B"));
    return CHECK_DONE();
}
