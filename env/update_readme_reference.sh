#!/usr/bin/env bash
# Regenerates the README's env reference from the tables (env/table.c and each plugin's keys):
# replaces everything between the reference markers with `shardrun reference`.
# Usage: env/update_readme_reference.sh BUILD_DIR      (the readme_reference test checks it)
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
readme=$(dirname "$0")/../README.md
ref=$(mktemp)
trap 'rm -f "$ref" "$ref.new"' EXIT
"$build/shardrun" reference >"$ref"
awk -v ref="$ref" '
    /<!-- reference:begin -->/ { print; while ((getline line < ref) > 0) print line; skip = 1; next }
    /<!-- reference:end -->/ { skip = 0 }
    !skip' "$readme" >"$ref.new"
mv "$ref.new" "$readme"
