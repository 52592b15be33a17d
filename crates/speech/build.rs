//! Links Debian's Flite libraries when the `flite` feature is on
//! (`apt-get install flite1-dev`; see scripts/setup-local-speech).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_FLITE").is_some() {
        for lib in [
            "flite_cmu_us_slt",
            "flite_usenglish",
            "flite_cmulex",
            "flite",
        ] {
            println!("cargo:rustc-link-lib={lib}");
        }
    }
}
