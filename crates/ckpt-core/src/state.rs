//! Computing a [`Hash`] and keeping a [`State`] in the database: the parts
//! of the path-state value (defined in `ckpt_types`) that need the core's
//! hashing and SQL.

pub use ckpt_types::{Entry, EntryKind, Hash, State};

/// SHA-256 as the store names blobs. A trait because `Hash` is defined in
/// `ckpt_types`, which links no hashing code; bring it into scope to call
/// `Hash::of`.
pub trait HashOf {
    fn of(data: &[u8]) -> Hash;
    fn of_many(datas: &[&[u8]]) -> Vec<Hash>;
}

impl HashOf for Hash {
    fn of(data: &[u8]) -> Hash {
        // ring: ~1.7x the sha2 crate's speed on CPUs without SHA extensions,
        // and hashing is half of a baseline's CPU time.
        let digest = ring::digest::digest(&ring::digest::SHA256, data);
        Hash(
            digest
                .as_ref()
                .try_into()
                .expect("SHA-256 digests are 32 bytes"),
        )
    }

    /// The hashes of many contents at once, in their order. Independent
    /// messages hash in lockstep in the SIMD lanes of one core (16 with
    /// AVX-512), about twice the rate of hashing them one by one on a CPU
    /// without SHA extensions.
    /// A lane idles once its message ends, so they go in longest first,
    /// each with the next longest ones, as long as the lanes are on
    /// average a third full (where lanes and one by one break even); a
    /// content much longer than the rest is hashed alone.
    fn of_many(datas: &[&[u8]]) -> Vec<Hash> {
        let lanes = tape_sha256::lane_width();
        let mut out = vec![Hash([0; 32]); datas.len()];
        let mut order: Vec<usize> = (0..datas.len()).collect();
        order.sort_unstable_by_key(|&i| std::cmp::Reverse(datas[i].len()));
        let mut group: Vec<&[u8]> = Vec::with_capacity(lanes);
        let mut digests = vec![[0u8; 32]; lanes];
        let mut rest = &order[..];
        while let Some(&longest) = rest.first() {
            let next = &rest[..rest.len().min(lanes)];
            let total: usize = next.iter().map(|&i| datas[i].len()).sum();
            if next.len() < 2 || total * 3 < datas[longest].len() * lanes {
                out[longest] = Hash::of(datas[longest]);
                rest = &rest[1..];
                continue;
            }
            group.clear();
            group.extend(next.iter().map(|&i| datas[i]));
            tape_sha256::hash_many(&group, &mut digests[..next.len()]);
            for (&i, d) in next.iter().zip(&digests) {
                out[i] = Hash(*d);
            }
            rest = &rest[next.len()..];
        }
        out
    }
}

/// Database encoding: (kind code, mode, data). `data` is the blob hash for
/// files, the link target for symlinks and the reason for skipped paths.
pub(crate) fn encode(s: &State) -> (i64, i64, Option<Vec<u8>>, i64) {
    match s {
        State::Absent => (0, 0, None, 0),
        State::File { hash, size, mode } => (1, *mode as i64, Some(hash.0.to_vec()), *size as i64),
        State::Dir { mode } => (2, *mode as i64, None, 0),
        State::Symlink { target } => (3, 0, Some(target.clone()), 0),
        State::Skipped { reason } => (4, 0, Some(reason.clone().into_bytes()), 0),
    }
}

/// Reads the four columns (kind, mode, data, size) starting at `at`;
/// `Ok(None)` when they do not decode (a tampered or damaged row).
pub(crate) fn from_row(row: &rusqlite::Row, at: usize) -> rusqlite::Result<Option<State>> {
    Ok(decode(
        row.get(at)?,
        row.get(at + 1)?,
        row.get(at + 2)?,
        row.get(at + 3)?,
    ))
}

pub(crate) fn decode(kind: i64, mode: i64, data: Option<Vec<u8>>, size: i64) -> Option<State> {
    Some(match kind {
        0 => State::Absent,
        1 => State::File {
            hash: Hash::from_slice(data.as_deref()?)?,
            size: size as u64,
            mode: mode as u32,
        },
        2 => State::Dir { mode: mode as u32 },
        3 => State::Symlink { target: data? },
        4 => State::Skipped {
            reason: String::from_utf8_lossy(data.as_deref()?).into_owned(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_sha256_of_the_raw_bytes() {
        assert_eq!(
            Hash::of(b"").to_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            Hash::of(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Whatever the mix of lengths (lanes full, idle, or left to one by
        /// one hashing), each content gets its own SHA-256, in place.
        #[test]
        fn hashing_many_at_once_gives_each_its_own_hash(
            lens in proptest::collection::vec(
                proptest::prop_oneof![0usize..200, 0usize..5000, 60_000usize..70_000],
                0..70,
            ),
            seed: u8,
        ) {
            let datas: Vec<Vec<u8>> = lens
                .iter()
                .enumerate()
                .map(|(i, &n)| (0..n).map(|j| (i * 31 + j) as u8 ^ seed).collect())
                .collect();
            let refs: Vec<&[u8]> = datas.iter().map(|d| d.as_slice()).collect();
            let one_by_one: Vec<Hash> = refs.iter().map(|d| Hash::of(d)).collect();
            proptest::prop_assert_eq!(Hash::of_many(&refs), one_by_one);
        }
    }

    #[test]
    fn every_state_round_trips_through_its_encoding() {
        for s in [
            State::Absent,
            State::File {
                hash: Hash::of(b"x"),
                size: 1,
                mode: 0o755,
            },
            State::Dir { mode: 0o700 },
            State::Symlink {
                target: b"\xff/../x".to_vec(),
            },
            State::Skipped {
                reason: "too big".into(),
            },
        ] {
            let (k, m, d, z) = encode(&s);
            assert_eq!(decode(k, m, d, z), Some(s));
        }
        assert_eq!(decode(9, 0, None, 0), None);
        assert_eq!(decode(1, 0, Some(vec![1, 2]), 0), None, "short hash");
    }
}
