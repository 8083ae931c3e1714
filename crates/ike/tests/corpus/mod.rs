//! The committed fuzz inputs (fuzz/seeds/TARGET, fuzz/corpus/TARGET)
//! for the tests that replay a target on stable Rust.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// fuzz/KIND/TARGET (KIND: `seeds` or `corpus`).
pub fn dir(target: &str, kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join(target)
}

/// The files of fuzz/KIND/TARGET, sorted; none if it does not exist.
pub fn files(target: &str, kind: &str) -> Vec<PathBuf> {
    let Ok(d) = fs::read_dir(dir(target, kind)) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = d
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Every seed (at least `min_seeds` of them) and corpus file of `target`
/// through `body`, the function libFuzzer calls.
pub fn replay(target: &str, min_seeds: usize, body: impl Fn(&[u8])) {
    let seeds = files(target, "seeds");
    assert!(
        seeds.len() >= min_seeds,
        "{} seeds under {}",
        seeds.len(),
        dir(target, "seeds").display()
    );
    for f in seeds.iter().chain(files(target, "corpus").iter()) {
        body(&fs::read(f).unwrap());
    }
}
