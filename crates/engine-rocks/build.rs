//! Compiles the one C++ function RocksDB's C API lacks: changing a rate limiter's rate on a
//! running DB (`src/rate_limiter_shim.cc`), against the headers librocksdb-sys ships.
fn main() {
    let rocksdb_dir = std::env::var("DEP_ROCKSDB_CARGO_MANIFEST_DIR")
        .expect("librocksdb-sys exports its source directory");
    println!("cargo:rerun-if-changed=src/rate_limiter_shim.cc");
    cc::Build::new()
        .cpp(true)
        .std("c++20")
        .include(format!("{rocksdb_dir}/rocksdb/include"))
        .file("src/rate_limiter_shim.cc")
        .compile("atoll_rate_limiter_shim");
}
