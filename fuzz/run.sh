#!/usr/bin/env bash
# Fuzz every target for SECONDS each (default 600), one after another, and
# print the CPU time each used. usage: fuzz/run.sh [SECONDS] [TARGET...]
# Needs cargo-fuzz (`cargo install cargo-fuzz`); its nightly flags are
# allowed on the stable toolchain through RUSTC_BOOTSTRAP. SANITIZER=none
# skips AddressSanitizer (faster build; Rust code is memory-safe, the C
# in liblzma is what ASan is for). Crashes land in fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(unit_file kubelet_flags kubelet_config iso_reader rules_compact ignition_check boot_eval)
export RUSTC_BOOTSTRAP=1
sanitizer=${SANITIZER:-address}
bash seed.sh
cargo fuzz build -O -s "$sanitizer" >&2
status=0
for t in "${targets[@]}"; do
  mkdir -p "artifacts/$t"
  # rss/malloc limits catch unbounded allocations; -timeout a hang.
  limits=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10)
  # The boot path's evaluation has a budget of milliseconds at boot: an
  # input taking seconds or hundreds of MB under ASan is a finding.
  [ "$t" = boot_eval ] && limits=(-rss_limit_mb=512 -malloc_limit_mb=256 -timeout=3)
  if ! /usr/bin/time -f "fuzz: $t: %U s user + %S s system CPU, exit %x" \
      cargo fuzz run -O -s "$sanitizer" "$t" "corpus/$t" -- \
      -max_total_time="$seconds" "${limits[@]}" \
      -print_final_stats=1 -artifact_prefix="artifacts/$t/"; then
    echo "fuzz: $t FOUND A CRASH (see fuzz/artifacts/$t/)" >&2
    status=1
  fi
done
exit $status
