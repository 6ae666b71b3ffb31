//! With the `tch` feature, the binaries, tests and examples find libtorch where they were built
//! against it (`LIBTORCH/lib`, an rpath), so that `target/release/propulate-rs-cnn` runs without
//! LD_LIBRARY_PATH; with `PROPULATE_LINK_TORCH_CUDA=1` (set by scripts/libtorch-env.sh for a CUDA
//! torch given by PROPULATE_LIBTORCH) the CNN executable, tests and examples also keep
//! libtorch_cuda linked.

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-env-changed=PROPULATE_LINK_TORCH_CUDA");
    if std::env::var_os("CARGO_FEATURE_TCH").is_some()
        && let Ok(dir) = std::env::var("LIBTORCH")
    {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}/lib");
        if std::env::var("PROPULATE_LINK_TORCH_CUDA").as_deref() == Ok("1") {
            // rustc links with --as-needed, which drops libtorch_cuda (no symbol of ours names it),
            // and tch then reports no CUDA (tch-rs issues #907, #964). Link arguments of this build
            // script reach only this package's binaries, tests and examples; in RUSTFLAGS they would
            // also reach every build script, which cannot load libtorch_cuda where CUDA is missing.
            // Not for `propulate-rs` itself, which hands CNN runs over to `propulate-rs-cnn` and so
            // starts without libtorch.
            for target in ["-bin=propulate-rs-cnn=", "-tests=", "-examples=", "-benches="] {
                println!("cargo:rustc-link-arg{target}-L{dir}/lib");
                println!("cargo:rustc-link-arg{target}-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
                // libtorch_cuda's own libraries (cuBLAS, cuDNN, ...) may live only on the GPU machine.
                println!("cargo:rustc-link-arg{target}-Wl,--allow-shlib-undefined");
            }
        }
    }
}
