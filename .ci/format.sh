#!/usr/bin/env bash
# The sources are formatted as .clang-format says: every tracked C, C++ and CUDA file, checked with
# the clang-format Debian ships (its output differs between versions: format with the same one).
# To fix what this reports:  git ls-files '*.c' '*.h' '*.cc' '*.cu' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
    echo ".ci/format.sh: clang-format is not installed (apt-get install clang-format); it checks the sources' format" >&2
    exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cc' '*.cu')
bad=()
for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
    echo ".ci/format.sh: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says ($(clang-format --version)):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "format them with: clang-format -i <file>..., then commit" >&2
    exit 1
fi
echo ".ci/format.sh: ${#files[@]} files formatted as .clang-format says ($(clang-format --version))"
