//! Compiles `proto/*.proto` with protox (pure Rust: no protoc needed) and generates the
//! prost types and tonic clients and servers from them.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/pd.proto",
        "proto/dag.proto",
        "proto/kv.proto",
        "proto/raft.proto",
    ];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
