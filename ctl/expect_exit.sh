#!/bin/sh
# expect_exit.sh RC TEXT COMMAND [ARGS...]
# Runs COMMAND; passes if it exits with RC and its output (stdout and stderr) contains
# TEXT (a fixed string). Used by the ctl.cli.* tests.
rc_want=$1
text=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq "$rc_want" ] || { echo "FAIL: expected exit $rc_want, got $rc"; exit 1; }
printf '%s\n' "$out" | grep -qF -- "$text" || { echo "FAIL: output lacks: $text"; exit 1; }
