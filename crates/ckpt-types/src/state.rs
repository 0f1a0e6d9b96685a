//! What a path is at one moment: the unit that pre-images, post-images and
//! rewind targets are made of, in the store, on the wire and in `--json`.

use serde::{Deserialize, Serialize};

/// SHA-256 of a file's raw bytes; names a blob in the store. Serialized
/// as lower-case hex. (The core computes it: `ckpt_core::HashOf`.)
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    pub fn to_hex(&self) -> String {
        // Not a `format!` per byte: that cost 5 µs per hash.
        hex::encode(self.0)
    }

    pub fn from_slice(bytes: &[u8]) -> Option<Hash> {
        Some(Hash(bytes.try_into().ok()?))
    }

    /// `None` unless `text` is 64 hex digits.
    pub fn from_hex(text: &str) -> Option<Hash> {
        let mut out = [0; 32];
        hex::decode_to_slice(text, &mut out).ok()?;
        Some(Hash(out))
    }
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", &self.to_hex()[..12])
    }
}

impl std::fmt::Display for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Hash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Hash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Hash::from_hex(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not a SHA-256 in hex")))
    }
}

/// The content-relevant state of one path.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum State {
    /// Nothing exists at the path.
    Absent,
    /// A regular file whose bytes are the blob `hash`; `mode` holds the
    /// permission bits (`0o7777` mask).
    File {
        hash: Hash,
        size: u64,
        #[serde(with = "crate::mode")]
        mode: u32,
    },
    /// A directory.
    Dir {
        #[serde(with = "crate::mode")]
        mode: u32,
    },
    /// A symbolic link with this (raw, never followed) target.
    Symlink {
        #[serde(with = "crate::path::bytes")]
        target: Vec<u8>,
    },
    /// Something exists but its content was not captured (too large,
    /// unreadable, a socket…); it cannot be restored.
    Skipped { reason: String },
}

impl State {
    pub fn is_absent(&self) -> bool {
        matches!(self, State::Absent)
    }

    pub fn is_dir(&self) -> bool {
        matches!(self, State::Dir { .. })
    }

    pub fn hash(&self) -> Option<Hash> {
        match self {
            State::File { hash, .. } => Some(*hash),
            _ => None,
        }
    }
}

/// A present path as a fingerprint names it (`docs/export.md`): what a
/// work copy records of its base and its result, checks the original
/// against, and sends with a copy-in. Derived from a [`State`] by
/// `ckpt_core::entry_of`; absent and not-captured paths have none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: EntryKind,
    /// Permission bits (`777` for a symlink).
    #[serde(with = "crate::mode")]
    pub mode: u32,
    /// SHA-256 hex of the content (of the target for a symlink); empty for
    /// a directory.
    pub sha256: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "dir",
            EntryKind::Symlink => "symlink",
        }
    }
}

impl Entry {
    pub fn is_dir(&self) -> bool {
        self.kind == EntryKind::Dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_its_wire_form() {
        let hash = Hash([0xab; 32]);
        let hex = "ab".repeat(32);
        for (state, json) in [
            (State::Absent, r#"{"kind":"absent"}"#.to_string()),
            (
                State::File {
                    hash,
                    size: 1,
                    mode: 0o644,
                },
                format!(r#"{{"kind":"file","hash":"{hex}","size":1,"mode":"644"}}"#),
            ),
            (
                State::Dir { mode: 0o755 },
                r#"{"kind":"dir","mode":"755"}"#.into(),
            ),
            (
                State::Symlink {
                    target: b"../a".to_vec(),
                },
                r#"{"kind":"symlink","target":"../a"}"#.into(),
            ),
            (
                State::Symlink {
                    target: b"\xff".to_vec(),
                },
                r#"{"kind":"symlink","target":[255]}"#.into(),
            ),
            (
                State::Skipped {
                    reason: "too big".into(),
                },
                r#"{"kind":"skipped","reason":"too big"}"#.into(),
            ),
        ] {
            assert_eq!(serde_json::to_string(&state).unwrap(), json);
            assert_eq!(serde_json::from_str::<State>(&json).unwrap(), state);
        }
    }

    #[test]
    fn an_entry_has_its_wire_form_and_reads_a_numeric_mode() {
        let e = Entry {
            kind: EntryKind::Symlink,
            mode: 0o777,
            sha256: "ab".into(),
        };
        let json = r#"{"kind":"symlink","mode":"777","sha256":"ab"}"#;
        assert_eq!(serde_json::to_string(&e).unwrap(), json);
        assert_eq!(serde_json::from_str::<Entry>(json).unwrap(), e);
        // Work-copy manifests written before the mode was octal text.
        let old = r#"{"kind":"symlink","mode":511,"sha256":"ab"}"#;
        assert_eq!(serde_json::from_str::<Entry>(old).unwrap(), e);
        assert!(serde_json::from_str::<Entry>(&json.replace("symlink", "fifo")).is_err());
    }

    #[test]
    fn a_hash_is_read_only_as_64_hex_digits() {
        let h = Hash([7; 32]);
        assert_eq!(Hash::from_hex(&h.to_hex()), Some(h));
        assert_eq!(Hash::from_hex("07"), None);
        assert!(serde_json::from_str::<Hash>(r#""zz""#).is_err());
    }
}
