/* A plugin whose struct_size stops before `finish`, a field this shardrun reads: refused. */
#include <stddef.h>

#include "shardrun/plugin.h"

__attribute__((visibility("default"))) const sr_plugin shardrun_plugin = {
    .abi_version = SR_PLUGIN_ABI_VERSION, .struct_size = (uint32_t)offsetof(sr_plugin, finish), .name = "short_struct"};
