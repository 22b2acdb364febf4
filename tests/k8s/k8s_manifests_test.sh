#!/usr/bin/env bash
# ctest deploy.k8s_manifests: renders every kustomization under deploy/k8s with
# `kubectl kustomize` (in CI Debian 12's kubernetes-client: kubectl 1.20, kustomize v2.0.3;
# $KUBECTL picks another) and checks each rendering with check_manifests.mjs: the
# Kubernetes API schema (npm's kubernetes-models, installed in tests/k8s/node_modules by
# deploy/install-deps.sh) and what benchfleet needs of it, against the real binaries' flags.
# Then it proves the checker can fail: broken copies of the base's rendering must each be
# refused with the problem named.
#
# Usage: k8s_manifests_test.sh SOURCE_DIR BENCHD BENCH_AGENT
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: ${0##*/} SOURCE_DIR BENCHD BENCH_AGENT" >&2; exit 2; }
SOURCE=$1
BENCHD=$2
AGENT=$3
KUBECTL=${KUBECTL:-kubectl}
HERE=$SOURCE/tests/k8s
K8S=$SOURCE/deploy/k8s

fail() { echo "k8s_manifests_test: FAIL: $*" >&2; exit 1; }
command -v "$KUBECTL" >/dev/null || fail "no kubectl ($KUBECTL); deploy/install-deps.sh installs kubernetes-client"
command -v node >/dev/null || fail "no node"
[ -d "$HERE/node_modules/kubernetes-models" ] || fail "no $HERE/node_modules (deploy/install-deps.sh runs npm ci there)"

work=$(mktemp -d /tmp/k8s-manifests.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The flags each binary has (absl's --help exits 1: its text is what counts).
"$BENCHD" --help >"$work/benchd.help" 2>&1 || true
"$AGENT" --help >"$work/bench-agent.help" 2>&1 || true
check() {  # check EXPECT RENDERED
  node "$HERE/check_manifests.mjs" --expect "$1" \
    --help benchd="$work/benchd.help" --help bench-agent="$work/bench-agent.help" "$2"
}

# The images the manifests name (check_manifests.mjs) are the ones deploy/compose builds.
grep -q '^  image: benchfleet:latest' "$SOURCE/deploy/compose/docker-compose.yml" ||
  fail "deploy/compose/docker-compose.yml no longer builds the image benchfleet"
grep -q '^    image: benchfleet-gpu:latest' "$SOURCE/deploy/compose/docker-compose.gpu.yml" ||
  fail "deploy/compose/docker-compose.gpu.yml no longer builds the image benchfleet-gpu"

# What each kustomization must be: the base a secured GPU fleet, the demo CPU only. A new
# kustomization fails here until it is given its expectation.
declare -A expected=([base]=gpu [overlays/cpu-demo]=cpu)
found=0
while IFS= read -r file; do
  dir=${file%/kustomization.yaml}
  rel=${dir#"$K8S"/}
  [ -n "${expected[$rel]:-}" ] || fail "deploy/k8s/$rel: no expectation (gpu or cpu) in ${0##*/}"
  out="$work/${rel//\//_}.yaml"
  "$KUBECTL" kustomize "$dir" >"$out" 2>"$work/kustomize.err" ||
    { cat "$work/kustomize.err" >&2; fail "kubectl kustomize deploy/k8s/$rel"; }
  check "${expected[$rel]}" "$out" || fail "deploy/k8s/$rel does not pass the checks above"
  found=$((found + 1))
done < <(find "$K8S" -name kustomization.yaml | sort)
[ "$found" -eq "${#expected[@]}" ] || fail "found $found kustomizations, expected ${#expected[@]}"
echo "k8s_manifests_test: $found kustomizations render ($("$KUBECTL" version --client --short 2>/dev/null || "$KUBECTL" version --client 2>&1 | head -1)) and pass"

# Broken copies of the base's rendering, each with the message the checker must print.
base="$work/base.yaml"
mutations=(
  '/medium: Memory/d'                                   '/dev/shm is not an emptyDir with medium: Memory'
  's/sizeLimit: 16Gi/sizeLimit: 64Mi/'                  "/dev/shm's sizeLimit 64Mi is under 1Gi"
  '/nvidia.com\/gpu: 8/d'                               'no nvidia.com/gpu resource limit'
  '/key: nvidia.com\/gpu/d'                             'no toleration of the nvidia.com/gpu:NoSchedule taint'
  's/fieldPath: spec.nodeName/fieldPath: metadata.name/' '--name must be $(VAR) with VAR from the downward API'
  's#path: /healthz#path: /health#'                     'livenessProbe asks /health, expected /healthz'
  's#path: /readyz#path: /healthz#'                     'readinessProbe asks /healthz, expected /readyz'
  '/volumeClaimTemplates:/,$d'                          'is not on a volumeClaimTemplates volume'
  's/--address=/--adress=/'                             'bench-agent has no flag --adress'
  's/\$(NODE_IP)/$(NODE_ADDRESS)/'                      'uses $(NODE_ADDRESS), which the container'"'"'s env does not define'
  's/hostNetwork: true/hostNetwork: "yes"/'             'hostNetwork must be boolean'
  's/^\( *\)dnsPolicy: \(.*\)/\1dnsPolicy: \2\n\1dnsPolcy: Default/' 'unknown field /spec/template/spec/dnsPolcy'
  '/readOnly: true/d'                                   'is not readOnly'
  's/image: benchfleet-gpu:latest/image: benchfleet-gpu-cuda:latest/' "is not deploy/compose's benchfleet-gpu"
  's#- --join-token-file=/etc/benchfleet/join/token#- --tls-key=/etc/benchfleet/join/token#' '--tls-key: an agent is given no certificate or key'
  's/- key: token/- key: node.key/'                     'mounts node.key of Secret benchfleet-agent-join: no key reaches an agent'
  's/secretName: benchfleet-agent-join/secretName: benchd-tls/' 'mounts Secret benchd-tls, which benchd mounts'
  '/--agent-signing-key=/d'                             'no --agent-signing-key'
)
for ((i = 0; i < ${#mutations[@]}; i += 2)); do
  edit=${mutations[i]}
  message=${mutations[i + 1]}
  sed "$edit" "$base" >"$work/broken.yaml"
  ! cmp -s "$base" "$work/broken.yaml" || fail "the edit '$edit' changed nothing in the base's rendering"
  if check gpu "$work/broken.yaml" >"$work/broken.out" 2>&1; then
    fail "the checker passed the base broken by '$edit'"
  fi
  grep -qF -- "$message" "$work/broken.out" ||
    { cat "$work/broken.out" >&2; fail "broken by '$edit': the checker did not say '$message'"; }
done
echo "k8s_manifests_test: $((${#mutations[@]} / 2)) broken copies of the base refused, each with its problem named"
