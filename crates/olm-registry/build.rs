//! Compiles `proto/registry.proto` into the message types and the tonic service, and keeps its
//! descriptor set for gRPC reflection. The proto is parsed by `protox` (pure Rust): no `protoc`
//! on the build machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/registry.proto");
    let descriptors = protox::compile(["proto/registry.proto"], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("registry_descriptor.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
