//! Embeds the web app (`web/dist`, committed, built by Vite) into the binary: writes a table of
//! `(path, bytes)` with one `include_bytes!` per file, so `cargo build` needs no Node and the
//! binary serves the UI from memory. A missing `web/dist` embeds nothing (the UI answers 404).
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dist = manifest.join("../web/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut files = Vec::new();
    collect(&dist, &dist, &mut files);
    files.sort();
    let mut out = String::from("/// The web app's files: (path under `/`, contents).\n");
    out.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    for (route, path) in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "    ({route:?}, include_bytes!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("ui_files.rs");
    if let Err(e) = std::fs::write(&target, out) {
        println!("cargo:warning=cannot write {}: {e}", target.display());
        std::process::exit(1);
    }
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let route = format!("/{}", rel.to_string_lossy().replace('\\', "/"));
            let abs = path.canonicalize().unwrap_or(path.clone());
            files.push((route, abs));
        }
    }
}
