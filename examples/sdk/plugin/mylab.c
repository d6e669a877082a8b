/* mylab: a plugin built outside shardrun's tree (Makefile + pkg-config --cflags: a plugin links
   nothing of shardrun, it gets the host's functions in each hook).  It reads its section's keys,
   checks them before any worker starts, and writes the variables a lab's own scripts read into
   every worker's environment, before the task is loaded:
     [mylab]
     tag = baseline       ; -> MYLAB_TAG (also overridable by exporting MYLAB_TAG)
     seed_offset = 100    ; -> MYLAB_SEED = seed_offset + the worker's rank */
#include <stdio.h>

#include <shardrun/plugin.h>

static const sr_key keys[] = {
    {"tag", SR_KEY_STRING, "untagged", NULL, 0, 0, 0, "MYLAB_TAG", "a label for this run, handed to the task"},
    {"seed_offset", SR_KEY_INT, "0", NULL, 0, 0, 1000000, NULL, "MYLAB_SEED is this plus the worker's rank"},
    {NULL, 0, NULL, NULL, 0, 0, 0, NULL, NULL},
};
static const sr_var writes[] = {{"MYLAB_SEED", "seed_offset + rank"}, {NULL, NULL}};

static int validate(const sr_host_api *api, sr_host *h) {
    const char *tag = api->get(h, "tag");
    for (const char *c = tag; *c; c++)
        if (*c == ' ' || *c == '/') {
            api->reject(h, "tag", "\"%s\": no spaces or slashes (it names folders)", tag);
            return 1;
        }
    return 0;
}

static int write_env(const sr_host_api *api, sr_host *h) {
    char seed[32];
    long long offset;
    sscanf(api->get(h, "seed_offset"), "%lld", &offset);
    snprintf(seed, sizeof seed, "%lld", offset + api->topology(h)->rank);
    return api->env_set(h, "MYLAB_TAG", api->get(h, "tag"), "tag") != 0 ||
           api->env_set(h, "MYLAB_SEED", seed, "seed_offset");
}

__attribute__((visibility("default"))) const sr_plugin shardrun_plugin = {
    SR_PLUGIN_ABI_VERSION,
    sizeof(sr_plugin),
    "mylab",
    "1.0",
    "a lab's own variables in every worker",
    NULL,
    keys,
    writes,
    NULL,
    validate,
    write_env,
    NULL,
    NULL,
};
