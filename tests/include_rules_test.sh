#!/usr/bin/env bash
# The include-rule checker itself (tests/include_rules.sh, docs/ARCHITECTURE.md "What may
# include what"), on small trees made in a temporary directory: a clean tree passes, each
# planted violation fails naming its file, line and rule, and a folder that is not a
# benchfleet tree is refused. ctest: house.include_rules_checker.
#
# Usage: tests/include_rules_test.sh [CHECKER]   (default: include_rules.sh beside this file)
set -uo pipefail

CHECKER=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/include_rules.sh}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/include_rules_test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# put TREE FILE LINES...: writes FILE in TREE, one argument per line.
put() {
  local tree=$1 file=$2
  shift 2
  mkdir -p "$tree/$(dirname "$file")"
  printf '%s\n' "$@" > "$tree/$file"
}

# A tree that keeps every rule, with the includes each rule allows.
clean_tree() {
  local t=$1
  put "$t" server/main.cc '#include "server/benchd.h"' '#include <grpcpp/grpcpp.h>'
  put "$t" server/benchd.h '#pragma once' '#include "server/core/job_manager.h"'
  put "$t" server/benchd.cc '#include "server/benchd.h"' '#include <grpcpp/grpcpp.h>' \
    '#include "server/rpc/service.h"' '#include "server/http/api.h"' '#include "httpd/http_server.h"'
  put "$t" server/rpc/service.h '#pragma once' '#include <grpcpp/grpcpp.h>' \
    '#include "benchfleet/v1/controller.grpc.pb.h"' '#include "common/grpc_status.h"'
  put "$t" server/http/api.h '#pragma once' '#include "benchfleet/v1/types.pb.h"' \
    '#include "google/protobuf/util/json_util.h"' '#include "httpd/http_server.h"' \
    '#include "server/core/job_manager.h"'
  put "$t" server/core/job_manager.h '#pragma once' '#include "server/store/store.h"' \
    '#include "server/results/results.h"' '#include "absl/status/status.h"'
  put "$t" server/store/store.h '#pragma once' '#include "server/core/job.h"'
  put "$t" server/results/results.h '#pragma once' '#include <vector>'
  put "$t" server/diagnosis/stragglers.h '#pragma once' '#include <vector>' '#include <cstdint>' \
    '#include "common/configuration_key.h"' '#include "absl/strings/str_format.h"' \
    '#include "server/diagnosis/inputs.h"'
  put "$t" server/diagnosis/stragglers_test.cc '#include "server/diagnosis/stragglers.h"' \
    '#include "gtest/gtest.h"'
  put "$t" httpd/http_server.h '#pragma once' '#include <string>' '#include "absl/status/status.h"'
  put "$t" httpd/http_server.cc '#include "httpd/http_server.h"' '#include "common/log.h"'
  put "$t" worker/agent/agent.cc '#include "common/subprocess.h"' '#include <grpcpp/grpcpp.h>'
  put "$t" worker/train/trainer.h '// Runs one rank. Torch-free.' '#pragma once' '#include <string>' \
    '#include "common/names.h"'
  put "$t" worker/sim/sim.cc '#include <sys/socket.h>' '#include "common/names.h"'
  put "$t" worker/sim/sim_test.cc '#include "worker/agent/trainer_event_parser.h"'
  put "$t" worker/train/trainer.cc '#include "worker/train/trainer.h"' '#include <torch/torch.h>'
  put "$t" ctl/main.cc '#include "common/log.h"' '#include "report/grid.h"'
  put "$t" common/names.h '#pragma once' '#include <string>'
  put "$t" common/log.h '#pragma once' '#include <string>'
  put "$t" report/grid.h '#pragma once' '#include "benchfleet/v1/types.pb.h"'
}

# run_checker TREE: sets out and rc.
run_checker() {
  out=$(bash "$CHECKER" "$1" 2>&1)
  rc=$?
}

clean="$WORK/clean"
clean_tree "$clean"
run_checker "$clean"
if [ "$rc" -ne 0 ] || [[ $out != "include_rules: OK:"* ]]; then
  fail "a clean tree: expected exit 0 and 'include_rules: OK', got exit $rc: $out"
fi

# plant RULE FILE LINE_TEXT: the clean tree with LINE_TEXT appended to FILE (made if new)
# must fail with exactly that file, that line and that rule, and nothing else.
n=0
plant() {
  local rule=$1 file=$2 text=$3
  n=$((n + 1))
  local tree="$WORK/v$n"
  clean_tree "$tree"
  mkdir -p "$tree/$(dirname "$file")"
  printf '%s\n' "$text" >> "$tree/$file"
  run_checker "$tree"
  local want="$file:$(wc -l < "$tree/$file"): rule ($rule): "
  if [ "$rc" -ne 1 ]; then
    fail "rule ($rule) planted in $file ($text): expected exit 1, got $rc: $out"
  elif ! grep -qF -- "$want" <<< "$out"; then
    fail "rule ($rule) planted in $file ($text): no line starting '$want' in: $out"
  elif [ "$(grep -c ': rule (' <<< "$out")" -ne 1 ]; then
    fail "rule ($rule) planted in $file ($text): expected one violation, got: $out"
  fi
}
plant a server/core/bad.cc '#include "benchfleet/v1/types.pb.h"'
plant a server/benchd.cc '#include "google/protobuf/message.h"'
plant a2 server/store/bad.cc '#include <grpcpp/grpcpp.h>'
plant a2 server/http/bad.cc '#include "common/grpc_status.h"'
plant a3 server/core/bad.cc '#include "server/rpc/service.h"'
plant a3 server/results/bad.h '#include "server/http/api.h"'
plant a3 server/auth/bad.cc '#include "server/benchd.h"'
plant i server/diagnosis/bad.cc '#include "server/store/store.h"'
plant i server/diagnosis/bad.h '#include <sqlite3.h>'
plant i server/diagnosis/bad.cc '#include "gtest/gtest.h"'
plant h httpd/bad.cc '#include "server/core/job.h"'
plant h httpd/bad.h '#include <grpcpp/grpcpp.h>'
plant b worker/train/bad.cc '#include "absl/status/status.h"'
plant b3 worker/sim/bad.cc '#include "absl/status/status.h"'
plant b3 worker/sim/bad.cc '#include "worker/train/trainer.h"'
plant b3 worker/sim/bad.cc '#include "worker/agent/trainer_event_parser.h"'
plant b3 worker/sim/bad_test.cc '#include "worker/agent/agent.h"'
plant b2 common/names.h '#include "common/subprocess.h"'
plant c worker/train/trainer.h '#include <torch/torch.h>'
plant d common/bad.cc '#include "server/core/job.h"'
plant e ctl/bad.cc '#include "../server/core/job.h"'
plant e ctl/bad.cc '#include "worker/agent/agent.h"'
plant f worker/agent/bad.cc '#include "worker/train/trainer.h"'
plant g report/bad.cc '#include <grpcpp/grpcpp.h>'

# Not a benchfleet tree: exit 2 naming the missing folder.
notree="$WORK/notree"
mkdir -p "$notree/server"
run_checker "$notree"
if [ "$rc" -ne 2 ] || [[ $out != *"has no httpd/"* ]]; then
  fail "a tree without httpd/: expected exit 2 naming httpd/, got exit $rc: $out"
fi

if [ "$failures" -gt 0 ]; then
  echo "include_rules_test: $failures failure(s)"
  exit 1
fi
echo "include_rules_test: OK: a clean tree passes, $n planted violations fail with their rule, a non-tree is refused"
