//! The soak's only source of randomness: fixed by the seed, so a sequence
//! replays exactly (`--seed`).

use rand_core::{Rng as _, SeedableRng};
use rand_xorshift::XorShiftRng;

pub struct Rng(XorShiftRng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(XorShiftRng::seed_from_u64(seed))
    }

    pub fn u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            Some(&items[self.below(items.len())])
        }
    }

    /// An index into `weights`, chosen in proportion to them.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut x = self.below(total.max(1) as usize) as u32;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

/// The seed of sequence `i` of a run with master seed `master`
/// (splitmix64, so neighbouring sequences are unrelated).
pub fn sequence_seed(master: u64, i: u64) -> u64 {
    let mut z = master.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of step `step` of the sequence with seed `seq` (step 0: the
/// set-up).
pub fn step_seed(seq: u64, step: u64) -> u64 {
    sequence_seed(seq ^ 0x5EED_57E9, step)
}
