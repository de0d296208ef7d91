// SPDX-License-Identifier: GPL-2.0
// rust_sites - a Rust program whose allocations the naming tests must
// attribute to its own functions, demangled without hashes.
use std::hint::black_box;

#[inline(never)]
fn build_rust_sites(n: usize) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(vec![i as u8; 1024]);
    }
    v
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20000);
    let v = build_rust_sites(n);
    black_box(&v);
    // Still in use at exit, as a leak would be: the in-use view shows it.
    std::mem::forget(v);
}
