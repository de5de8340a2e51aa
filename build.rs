//! Links the Linux binary as a position-dependent executable (`-no-pie`), as Go links kubectl.
//! A PIE of this size carries ~19,000 relative relocations that the dynamic loader applies, and
//! the pages it writes fault in, on every start: about a tenth of an offline `validate`
//! (bench/run.sh section 1; `LD_DEBUG=statistics` shows the count). The objects stay PIC; only
//! the final link changes, and only for the binary (tests and the library are unchanged).
//! Not for musl: its targets link a static PIE whose start code (`rcrt1.o`) relocates itself,
//! and `-no-pie` on that link gave a binary that crashed at its first instruction.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=kubectl-tfjob=-no-pie");
    }
}
