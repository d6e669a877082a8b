/* A plugin built against a (future) plugin.h whose sr_plugin gained a hook at its end: larger
   than this shardrun's, and still loaded (append-only growth). */
#include "shardrun/plugin.h"

struct grown_plugin {
    sr_plugin v1;
    void (*appended_later)(void);
};

__attribute__((visibility("default")))
const struct grown_plugin shardrun_plugin = {{.abi_version = SR_PLUGIN_ABI_VERSION,
                                              .struct_size = sizeof(struct grown_plugin),
                                              .name = "grown_struct",
                                              .version = "1",
                                              .description = "an sr_plugin with a field appended"},
                                             0};
