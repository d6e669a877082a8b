#!/usr/bin/env bash
# Regenerates the generated part of docs/environment.md: everything between its
# `<!-- reference:begin -->` and `<!-- reference:end -->` markers becomes what
# `shardrun reference` prints now (the [shardrun] and trainer tables of core/config/env_table.c,
# and the keys and variables each plugin declares).  The hand-written text around the markers
# is kept.  The environment_doc test fails while the page is stale.
# Usage: docs/update_environment.sh BUILD_DIR      (e.g. docs/update_environment.sh build)
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR (the build folder holding the shardrun executable)}
page=$(cd "$(dirname "$0")" && pwd)/environment.md
[ -x "$build/shardrun" ] || { echo "$0: no shardrun executable in $build; build it first" >&2; exit 1; }
for marker in '<!-- reference:begin -->' '<!-- reference:end -->'; do
    n=$(grep -cxF -- "$marker" "$page" || true)
    [ "$n" = 1 ] || { echo "$0: $page must hold the line $marker exactly once (found $n)" >&2; exit 1; }
done
ref=$(mktemp)
trap 'rm -f "$ref" "$ref.new"' EXIT
"$build/shardrun" reference >"$ref"
awk -v ref="$ref" '
    $0 == "<!-- reference:begin -->" { print; while ((getline line < ref) > 0) print line; skip = 1; next }
    $0 == "<!-- reference:end -->" { skip = 0 }
    !skip' "$page" >"$ref.new"
cat "$ref.new" >"$page"
echo "updated $page from $build/shardrun reference"
