#!/usr/bin/env bash
# The include rules of docs/ARCHITECTURE.md ("What may include what"), checked with grep.
#
#   (a)  server/: generated headers (*.pb.h, *.grpc.pb.h) and the protobuf runtime
#        (google/protobuf/) only in the rooms of the adapters: server/rpc/ (the gRPC
#        adapters, the proto seam proto_convert*, the raw bytes' parser, their tests) and
#        server/http/ (benchd's HTTP handlers, which answer in the proto's JSON mapping),
#        and server/main.cc.
#   (a2) server/: the gRPC runtime (grpc/, grpcpp/, common/grpc_status.h) only in
#        server/rpc/ (with grpc_auth*: a call's principal, benchd's TLS credentials),
#        server/benchd.cc and server/main.cc. The domain (job manager, scheduler, store,
#        results, ...) knows nothing of gRPC.
#   (a3) server/'s domain rooms (core/, store/, results/, metrics/, auth/, slurm/): nothing
#        from the adapters' rooms server/rpc/, server/http/ or from server/benchd.h: the
#        domain does not know who calls it.
#   (i)  server/diagnosis/ (the diagnosis room: pure analyses over plain structs): only
#        the C++ standard library's headers (<vector>, <cstdint>: no folder, no .h, so not
#        <sqlite3.h>), common/, absl/ and server/diagnosis/
#        itself; GoogleTest (gtest/, gmock/) in its tests (*_test.cc) alone. No store, no
#        proto, no gRPC: the adapters build its inputs.
#   (h)  httpd/ (the web port's plumbing: HttpServer on civetweb, TlsFront): nothing from
#        server/, ctl/, worker/, report/, the generated API or gRPC: it knows no benchd.
#   (b)  worker/train/: nothing from gRPC, protobuf, Abseil, the generated API
#        (benchfleet/, *.pb.h, proto/), server/, ctl/, worker/agent/ or common/ -- except
#        common/'s standard-library-only headers (STD_ONLY_COMMON below: the names, the
#        spec defaults, the logger, the build info, the JSON escaper): the trainer builds
#        against libtorch alone (-DBENCH_TRAINER_ONLY=ON).
#   (b2) those headers, common/log.cc and common/build_info.cc (compiled into bench-train),
#        include only standard headers (<...> without a folder, or <sys/...>/<unistd.h>)
#        and each other.
#   (b3) worker/sim/ (bench-sim-train, the simulated trainer): as (b), and nothing from
#        worker/train/ or torch either: the standard library, POSIX and common/'s
#        standard-library-only headers (bench_fault_scenario, bench_log). Its tests
#        (*_test.cc) may also include worker/agent/trainer_event_parser.h, the parser they
#        read the events with.
#   (c)  worker/train/: a header whose contract comment (the comment block it opens with)
#        says "Torch-free" includes no torch/, ATen/, c10/ or caffe2/ header, and no
#        worker/train header that includes one (directly or further down).
#   (d)  common/: nothing from server/, ctl/ or worker/.
#   (e)  ctl/: nothing from server/ or worker/ (benchctl talks to benchd over the API only).
#   (f)  worker/agent/: nothing from server/, ctl/ or worker/train/, and no torch/, ATen/,
#        c10/ header (the agent never links libtorch; the trainer is a separate process).
#   (g)  report/: nothing from server/, ctl/, worker/ or gRPC: it renders the v1 API's
#        messages (JSON, grids, logs) for benchctl and benchd's web API alike.
#
# Usage: tests/include_rules.sh [ROOT]   (ROOT: a source tree, default this repository)
# Exit status: 0 when every rule holds; 1 with one line per broken rule,
#   FILE:LINE: rule (X): <what the rule says>: #include <...>
# 2 when ROOT does not look like a benchfleet tree. Needs only bash, grep, find and sort.
set -uo pipefail

ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$ROOT" 2>/dev/null || { echo "include_rules: cannot enter $ROOT" >&2; exit 2; }
for dir in server httpd worker/agent worker/train ctl common report; do
  if [ ! -d "$dir" ]; then
    echo "include_rules: $ROOT has no $dir/: not a benchfleet source tree" >&2
    exit 2
  fi
done

violations=0

# Every #include line of the checked folders as "FILE:LINE:PATH:OPEN" (PATH without its
# quotes or brackets; OPEN is < or "), in one grep over the tree.
SOURCE_GLOBS=(--include='*.h' --include='*.hh' --include='*.hpp' --include='*.cc'
  --include='*.cpp' --include='*.cxx' --include='*.cu' --include='*.cuh')
INCLUDE_RE='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]'
include_lines() {  # FILE-OR-DIR...
  local line file rest n text open
  while IFS= read -r line; do
    file=${line%%:*} rest=${line#*:}
    n=${rest%%:*} text=${rest#*:}
    text=${text#*include}
    text=${text#"${text%%[<\"]*}"}  # drop what precedes the opening < or "
    open=${text:0:1} text=${text:1}
    text=${text%%[>\"]*}
    printf '%s:%s:%s:%s\n' "$file" "$n" "$text" "$open"
  done < <(grep -rnE -H "${SOURCE_GLOBS[@]}" "$INCLUDE_RE" "$@" | LC_ALL=C sort -t: -k1,1 -k2,2n)
}

report() {  # FILE LINE RULE MESSAGE PATH (OPEN taken from the loop)
  if [ "${open:-}" = "<" ]; then
    echo "$1:$2: rule ($3): $4: #include <$5>"
  else
    echo "$1:$2: rule ($3): $4: #include \"$5\""
  fi
  violations=$((violations + 1))
}

# True if PATH names a project folder FOLDER ("server/x.h", "../server/x.h").
in_folder() {  # PATH FOLDER
  [[ $1 =~ ^(\./|\.\./)*$2/ ]]
}

is_generated() { [[ $1 == *.pb.h || $1 == benchfleet/* || $1 == google/protobuf/* ]]; }
is_grpc() { [[ $1 == grpc/* || $1 == grpcpp/* || $1 == grpc++/* || $1 == common/grpc_status.h ]]; }
# common/ headers worker/train may include, and the files that must stay std-only for it.
STD_ONLY_COMMON=(common/names.h common/spec_defaults.h common/log.h common/build_info.h
  common/trainer_contract.h common/json_escape.h common/fault_scenario.h)
is_std_only_common() { local h; for h in "${STD_ONLY_COMMON[@]}"; do [ "$1" = "$h" ] && return 0; done; return 1; }
# server/'s domain rooms (rule a3).
DOMAIN_ROOMS=(core store results metrics auth slurm)
is_domain_room() { local r; for r in "${DOMAIN_ROOMS[@]}"; do [ "$1" = "$r" ] && return 0; done; return 1; }
# What server/diagnosis/ may include (rule i); OPEN is the loop's.
is_diagnosis_include() {  # FILE PATH
  [[ $2 == common/* || $2 == absl/* || $2 == server/diagnosis/* ]] && return 0
  [ "${open:-}" = "<" ] && [[ $2 =~ ^[a-z_]+$ ]] && return 0  # <vector>, <cstdint>
  [[ $1 == *_test.cc ]] && [[ $2 == gtest/* || $2 == gmock/* ]] && return 0
  return 1
}
is_torch() { [[ $1 =~ ^(torch|ATen|c10|caffe2)/ ]]; }

# --- worker/train: which headers are Torch-free, and which reach torch -----------------
declare -A torch_free=()     # worker/train header -> 1 when its contract says Torch-free
declare -A direct_torch=()   # worker/train file -> "file:line: <path>" of its first torch include
declare -A local_includes=() # worker/train file -> its worker/train includes, space-separated
declare -A reaches_torch=()  # memo of trace_torch

# True if the comment block FILE opens with says Torch-free.
says_torch_free() {
  local line
  while IFS= read -r line; do
    [[ $line == //* ]] || return 1
    [[ ${line,,} == *torch-free* ]] && return 0
  done < "$1"
  return 1
}

while IFS= read -r file; do
  case "$file" in *.h | *.hh | *.hpp | *.cuh) says_torch_free "$file" && torch_free[$file]=1 ;; esac
done < <(find worker/train -type f \( -name '*.h' -o -name '*.hh' -o -name '*.hpp' -o -name '*.cuh' \))
if [ ${#torch_free[@]} -eq 0 ]; then
  echo "include_rules: no worker/train header says Torch-free in its contract comment;" \
    "rule (c) would check nothing (did the marker change?)"
  violations=$((violations + 1))
fi

TRAIN_INCLUDES=$(include_lines worker/train)
while IFS=: read -r file n path open; do
  [ -z "$file" ] && continue
  if is_torch "$path" && [ -z "${direct_torch[$file]+set}" ]; then
    direct_torch[$file]="$file:$n: <$path>"
  fi
  if in_folder "$path" worker/train; then local_includes[$file]+="$path "; fi
done <<< "$TRAIN_INCLUDES"

# Sets reaches_torch[FILE] to the first torch include reachable from FILE through
# worker/train headers ("" if none). A cycle counts as reaching nothing.
trace_torch() {  # FILE
  local file=$1 next
  [ -n "${reaches_torch[$file]+set}" ] && return
  reaches_torch[$file]=${direct_torch[$file]:-}
  [ -n "${reaches_torch[$file]}" ] && return
  for next in ${local_includes[$file]:-}; do
    trace_torch "$next"
    if [ -n "${reaches_torch[$next]}" ]; then reaches_torch[$file]=${reaches_torch[$next]}; return; fi
  done
}

# --- The rules, one include line at a time -------------------------------------------
# worker/sim/ where the tree has it (the checker's own small test trees may not).
SIM_DIRS=()
[ -d worker/sim ] && SIM_DIRS=(worker/sim)
while IFS=: read -r file n path open; do
  [ -z "$file" ] && continue
  case "$file" in
    server/*)
      room=${file#server/}
      case "$room" in */*) room=${room%%/*} ;; *) room= ;; esac  # "" at server/'s top
      if ! { [ "$room" = rpc ] || [ "$room" = http ] || [ "$file" = server/main.cc ]; } &&
         is_generated "$path"; then
        report "$file" "$n" a "in server/ only the adapters' rooms (server/rpc/, server/http/) and server/main.cc include generated or protobuf headers" "$path"
      fi
      if ! { [ "$room" = rpc ] || [ "$file" = server/benchd.cc ] || [ "$file" = server/main.cc ]; } &&
         is_grpc "$path"; then
        report "$file" "$n" a2 "in server/ only the RPC layer (server/rpc/, server/benchd.cc, server/main.cc) includes gRPC" "$path"
      fi
      if [ "$room" = diagnosis ] && ! is_diagnosis_include "$file" "$path"; then
        report "$file" "$n" i "server/diagnosis/ is pure: standard headers, common/, absl/ and server/diagnosis/ only (GoogleTest in its tests)" "$path"
      fi
      if is_domain_room "$room" &&
         { in_folder "$path" server/rpc || in_folder "$path" server/http || [ "$path" = server/benchd.h ]; }; then
        report "$file" "$n" a3 "server/$room/ is the domain: nothing from the adapters (server/rpc/, server/http/) or server/benchd.h" "$path"
      fi
      ;;
    httpd/*)
      if in_folder "$path" server || in_folder "$path" ctl || in_folder "$path" worker ||
         in_folder "$path" report || is_generated "$path" || is_grpc "$path"; then
        report "$file" "$n" h "httpd/ is the web port's plumbing, apart from benchd: nothing from server/, ctl/, worker/, report/, the generated API or gRPC" "$path"
      fi
      ;;
    worker/train/*)
      if [[ $path =~ ^(grpc|grpcpp|grpc\+\+|google/protobuf|absl|benchfleet|proto)/ ]] ||
         [[ $path == *.pb.h ]] ||
         in_folder "$path" server || in_folder "$path" ctl || in_folder "$path" worker/agent ||
         { in_folder "$path" common && ! is_std_only_common "$path"; }; then
        report "$file" "$n" b "worker/train builds against libtorch alone: nothing from gRPC, protobuf, Abseil, the generated API, server/, ctl/, worker/agent/ or common/ (but ${STD_ONLY_COMMON[*]})" "$path"
      fi
      if [ -n "${torch_free[$file]+set}" ]; then
        if is_torch "$path"; then
          report "$file" "$n" c "$file says Torch-free in its contract comment, so it includes no torch/ATen/c10 header" "$path"
        elif in_folder "$path" worker/train; then
          trace_torch "$path"
          if [ -n "${reaches_torch[$path]}" ]; then
            report "$file" "$n" c "$file says Torch-free, but $path reaches torch (${reaches_torch[$path]})" "$path"
          fi
        fi
      fi
      ;;
    common/*)
      if in_folder "$path" server || in_folder "$path" ctl || in_folder "$path" worker; then
        report "$file" "$n" d "common/ is shared by every binary: nothing from server/, ctl/ or worker/" "$path"
      fi
      if { is_std_only_common "$file" || [ "$file" = common/log.cc ] ||
           [ "$file" = common/build_info.cc ] || [ "$file" = common/fault_scenario.cc ]; } &&
         ! is_std_only_common "$path" && [ "$path" != common/log.h ] &&
         ! { [ "$open" = "<" ] && [[ $path =~ ^([a-z_]+|sys/[a-z_]+\.h|unistd\.h)$ ]]; }; then
        report "$file" "$n" b2 "$file is built into bench-train (libtorch alone): standard headers and ${STD_ONLY_COMMON[*]} only" "$path"
      fi
      ;;
    ctl/*)
      if in_folder "$path" server || in_folder "$path" worker; then
        report "$file" "$n" e "ctl/ talks to benchd through the v1 API only: nothing from server/ or worker/" "$path"
      fi
      ;;
    report/*)
      if in_folder "$path" server || in_folder "$path" ctl || in_folder "$path" worker || is_grpc "$path"; then
        report "$file" "$n" g "report/ renders the v1 API's messages for benchctl and benchd alike: nothing from server/, ctl/, worker/ or gRPC" "$path"
      fi
      ;;
    worker/sim/*)
      if [[ $path =~ ^(grpc|grpcpp|grpc\+\+|google/protobuf|absl|benchfleet|proto)/ ]] ||
         [[ $path == *.pb.h ]] || is_torch "$path" ||
         in_folder "$path" server || in_folder "$path" ctl || in_folder "$path" worker/train ||
         { in_folder "$path" worker/agent &&
           ! { [[ $file == *_test.cc ]] && [ "$path" = worker/agent/trainer_event_parser.h ]; }; } ||
         { in_folder "$path" common && ! is_std_only_common "$path"; }; then
        report "$file" "$n" b3 "worker/sim is the simulated trainer: standard library, POSIX and ${STD_ONLY_COMMON[*]} only (its tests may include worker/agent/trainer_event_parser.h)" "$path"
      fi
      ;;
    worker/agent/*)
      if in_folder "$path" server || in_folder "$path" ctl || in_folder "$path" worker/train ||
         is_torch "$path"; then
        report "$file" "$n" f "the agent talks to benchd over the API and runs bench-train as a process: nothing from server/, ctl/, worker/train/ or torch" "$path"
      fi
      ;;
  esac
done < <(include_lines server httpd ctl common report worker/agent "${SIM_DIRS[@]}"; printf '%s\n' "$TRAIN_INCLUDES")

files_checked=$(find server httpd worker/agent worker/train "${SIM_DIRS[@]}" ctl common report -type f \( -name '*.h' -o -name '*.hh' \
  -o -name '*.hpp' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cxx' -o -name '*.cu' -o -name '*.cuh' \) |
  grep -c .)

if [ "$violations" -gt 0 ]; then
  echo "include_rules: $violations violation(s) of the include rules (docs/ARCHITECTURE.md," \
    "\"What may include what\"; the rules are listed at the top of tests/include_rules.sh)"
  exit 1
fi
echo "include_rules: OK: $files_checked files in server/, httpd/, worker/, ctl/, common/, report/;" \
  "${#torch_free[@]} Torch-free headers in worker/train (rules a, a2, a3, b, b2, b3, c, d, e, f, g, h, i)"
exit 0
