# Sourced by scripts/test.sh and scripts/fuzz.sh: the cargo arguments of
# each test build, written once so the fuzz targets run in the very test
# binaries the tiers build (the same packages and features, so the same
# hashes): CI builds each binary once, not once for fuzzing and again for
# testing.

# The in-process crates: their integration tests start no binary and no server.
core_crates=(anvil-expr anvil-evidence anvil-store anvil-tokens)
# Every feature's code is tested (`parquet`: `anvil export-data`).
features=(--features anvil/parquet)
excluded=()
for c in "${core_crates[@]}"; do excluded+=(--exclude "$c"); done
packages=()
for c in "${core_crates[@]}"; do packages+=(-p "$c"); done

# Every crate's unit tests (core tier).
build_lib=(--workspace "${features[@]}" --lib)
# The in-process crates' integration tests (core tier).
build_core_integration=("${packages[@]}" --test '*')
# Every other integration test (e2e and engines tiers).
build_integration=(--workspace "${features[@]}" "${excluded[@]}" --test '*')
