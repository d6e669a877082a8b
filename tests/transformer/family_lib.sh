# Sourced first by the decoder families' shared scripts (vs_torch.sh, parity.sh, checkpoint.sh) with
# their arguments: the family (gpt2, bloom or llama) in $family, and its lib.sh (the integration-test
# helpers, the family's job writer and PyTorch reference) sourced.
family=${1:-}
case $family in
gpt2 | bloom | llama) ;;
*) echo "FAIL: usage: bash $0 gpt2|bloom|llama" >&2 && exit 2 ;;
esac
. "$(dirname "${BASH_SOURCE[0]}")/../$family/lib.sh"
