//! With the `tch` feature, the binary, its tests and examples find libtorch where they were built
//! against it (`LIBTORCH/lib`, an rpath), so that `target/release/propulate-rs` runs without
//! LD_LIBRARY_PATH.

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if std::env::var_os("CARGO_FEATURE_TCH").is_some()
        && let Ok(dir) = std::env::var("LIBTORCH")
    {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}/lib");
    }
}
