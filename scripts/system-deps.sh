#!/usr/bin/env bash
# Debian packages that the sandbox tests need (bubblewrap for the bwrap sandbox,
# hyperfine for the runner benchmark, g++ for C++ solutions; g++ brings gcc, which
# builds the runner's small C launcher, audits/collect/launcher.c; strace delivers a
# SIGKILL in the middle of a campaign's final write in tests/collect/test_campaign_files.py; chromium opens rendered
# reports headless in tests/report/test_clocks_page.py; valgrind counts instructions for collect --measure
# instructions and tests/collect/test_instructions.py). Installs only what is
# missing, and only when it can (root + apt-get); otherwise says what to install.
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v hyperfine >/dev/null 2>&1 || missing+=(hyperfine)
command -v strace >/dev/null 2>&1 || missing+=(strace)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "speedaudit: please install these Debian packages for the sandbox tests: ${missing[*]}" >&2
  exit 1
fi
