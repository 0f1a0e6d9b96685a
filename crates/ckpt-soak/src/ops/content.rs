//! File content of a random sort, drawn from the sequence's generator.

use crate::rng::Rng;

const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "fn main()",
    "{",
    "}",
    "let a = 1;",
    "abc",
    "banana",
    "TODO",
];

/// File content of a random sort: text (with `a`s for `sed`), binary with
/// NULs and high bytes, empty, or now and then large.
pub fn content(rng: &mut Rng) -> Vec<u8> {
    match rng.weighted(&[60, 20, 8, 2]) {
        0 => {
            let mut s = String::new();
            for _ in 0..rng.range(1, 8) {
                for _ in 0..rng.range(1, 5) {
                    s.push_str(rng.pick(WORDS).copied().unwrap_or("a"));
                    s.push(' ');
                }
                s.push('\n');
            }
            if rng.chance(20) {
                s.pop();
            }
            s.into_bytes()
        }
        1 => (0..rng.range(1, 300)).map(|_| rng.u64() as u8).collect(),
        2 => Vec::new(),
        _ => {
            let n = rng.range(70_000, 200_000);
            let seed = rng.u64();
            (0..n)
                .map(|i| b"abcdefgh \n"[((i as u64 ^ seed) % 10) as usize])
                .collect()
        }
    }
}
