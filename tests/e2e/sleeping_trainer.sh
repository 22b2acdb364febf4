#!/bin/sh
# A bench-train stand-in for tests that need a job to stay RUNNING without training
# (e2e.SystemdNotifyTest): it takes any arguments, prints nothing and sleeps, so its
# rank neither starts reporting nor ends. The agent stops it with SIGTERM.
exec sleep 600
