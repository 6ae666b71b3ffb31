# Sourced by the command-trial benchmarks (command_overhead.sh, command_fixed_cost.sh) from the
# repository root: BIN (built without the CNN unless given), a work directory `work` removed at
# exit, and a search space of one float `x` in it ($work/space.toml).
if [ -z "${BIN:-}" ]; then
    cargo build --release --bin propulate-rs >&2
    BIN=$PWD/target/release/propulate-rs
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[params]\nx = { type = "float", low = -1.0, high = 1.0 }\n' > "$work/space.toml"
