/* The members' texts of config/enums.h's lists, for messages and logs. */
#include "config/enums.h"

#include "shardrun/plugin.h"

/* [shardrun] log_level's number is the logger's level */
_Static_assert(SR__LEVEL_ERROR == (int)SR_LOG_ERROR && SR__LEVEL_WARN == (int)SR_LOG_WARN &&
                   SR__LEVEL_INFO == (int)SR_LOG_INFO && SR__LEVEL_DEBUG == (int)SR_LOG_DEBUG,
               "SR__LOG_LEVEL_LIST is in sr_log_level's order");

#define SR__ENUM_TEXT(id, text) text,
#define COUNT(a) (int)(sizeof a / sizeof *a)

static const char *const STRATEGIES[] = {SR__STRATEGY_LIST(SR__ENUM_TEXT)};
static const char *const PREFETCHES[] = {SR__PREFETCH_LIST(SR__ENUM_TEXT)};
static const char *const STATE_DICTS[] = {SR__STATE_DICT_LIST(SR__ENUM_TEXT)};
static const char *const PRECISIONS[] = {SR__PRECISION_LIST(SR__ENUM_TEXT)};
static const char *const EVERIES[] = {SR__SAVE_STRATEGY_LIST(SR__ENUM_TEXT)};
static const char *const NAN_POLICIES[] = {SR__NAN_POLICY_LIST(SR__ENUM_TEXT)};

static const char *nth(const char *const *names, int n, int i) { return i >= 0 && i < n ? names[i] : "?"; }

const char *sr__strategy_name(sr__strategy s) { return nth(STRATEGIES, COUNT(STRATEGIES), (int)s); }
const char *sr__prefetch_name(sr__prefetch p) { return nth(PREFETCHES, COUNT(PREFETCHES), (int)p); }
const char *sr__state_dict_name(sr__state_dict s) { return nth(STATE_DICTS, COUNT(STATE_DICTS), (int)s); }
const char *sr__precision_name(sr__precision p) { return nth(PRECISIONS, COUNT(PRECISIONS), (int)p); }
const char *sr__every_name(sr__every e) { return nth(EVERIES, COUNT(EVERIES), (int)e); }
const char *sr__nan_policy_name(sr__nan_policy p) { return nth(NAN_POLICIES, COUNT(NAN_POLICIES), (int)p); }
