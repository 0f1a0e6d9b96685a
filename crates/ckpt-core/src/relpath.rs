//! Project-relative paths. Every path that comes from the database or a client
//! is untrusted: `RelPath::new` is the only way to make one, and it rejects
//! anything that could leave the project root or reach into `.git`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::error::Error;

type Result<T> = std::result::Result<T, Error>;

/// A validated, normalized path relative to a project root, as raw bytes
/// (Linux file names need not be UTF-8). Components are separated by `/`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(Vec<u8>);

impl RelPath {
    /// Validates `bytes`: not empty, not absolute, no empty, `.` or `..`
    /// components, no component named `.git`, no NUL byte.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<RelPath> {
        let bytes = bytes.into();
        let bad = |reason| Error::UnsafePath {
            path: String::from_utf8_lossy(&bytes).into_owned(),
            reason,
        };
        if bytes.is_empty() {
            return Err(bad("empty path"));
        }
        if bytes[0] == b'/' {
            return Err(bad("absolute path"));
        }
        if bytes.contains(&0) {
            return Err(bad("NUL byte in path"));
        }
        for comp in bytes.split(|&b| b == b'/') {
            match comp {
                b"" => return Err(bad("empty path component")),
                b"." | b".." => return Err(bad("relative path component")),
                b".git" => return Err(bad("path inside .git")),
                _ => {}
            }
        }
        Ok(RelPath(bytes))
    }

    /// A path read back from the store: one that fails [`RelPath::new`]'s
    /// checks means the store is damaged, not that a caller asked badly.
    pub(crate) fn stored(bytes: impl Into<Vec<u8>>) -> Result<RelPath> {
        RelPath::new(bytes).map_err(|e| Error::Corrupt(format!("the store holds {e}")))
    }

    /// The relative path of `path` under `root`, if it is strictly inside it.
    pub fn from_abs(root: &Path, path: &Path) -> Result<RelPath> {
        let rel = path.strip_prefix(root).map_err(|_| Error::UnsafePath {
            path: path.display().to_string(),
            reason: "outside the project root",
        })?;
        RelPath::new(rel.as_os_str().as_bytes())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn as_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.0))
    }

    /// The file name (last component).
    pub fn file_name(&self) -> &OsStr {
        let start = self.0.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        OsStr::from_bytes(&self.0[start..])
    }

    /// The parent path, or `None` for a top-level entry.
    pub fn parent(&self) -> Option<RelPath> {
        let i = self.0.iter().rposition(|&b| b == b'/')?;
        Some(RelPath(self.0[..i].to_vec()))
    }

    /// `self/name`, validated.
    pub fn join(&self, name: &[u8]) -> Result<RelPath> {
        let mut v = self.0.clone();
        v.push(b'/');
        v.extend_from_slice(name);
        RelPath::new(v)
    }

    /// Whether `self` is `other` or lies below it.
    pub fn starts_with(&self, other: &RelPath) -> bool {
        self.0 == other.0
            || (self.0.starts_with(&other.0) && self.0.get(other.0.len()) == Some(&b'/'))
    }

    /// The components, as raw names.
    pub fn components(&self) -> impl Iterator<Item = &OsStr> {
        self.0.split(|&b| b == b'/').map(OsStr::from_bytes)
    }

    /// A printable form (lossy for non-UTF-8 names).
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

/// The byte range of the paths strictly below `dir` (relative or
/// absolute, as bytes): from `dir/` up to `dir0`, since `0` follows `/`.
/// In byte order a subtree is that one range; `dir-x` and `dirx` fall
/// outside it.
pub fn below_range(dir: &[u8]) -> std::ops::Range<Vec<u8>> {
    [dir, b"/"].concat()..[dir, b"0"].concat()
}

impl std::fmt::Debug for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.display())
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

/// Serialized as a string when the name is UTF-8, else as raw bytes, so JSON
/// stays readable and no name is ever mangled.
impl serde::Serialize for RelPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => s.serialize_bytes(&self.0),
        }
    }
}

impl<'de> serde::Deserialize<'de> for RelPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Bytes(Vec<u8>),
        }
        let bytes = match Repr::deserialize(d)? {
            Repr::Text(t) => t.into_bytes(),
            Repr::Bytes(b) => b,
        };
        RelPath::new(bytes).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_escapes_and_git() {
        for bad in [
            &b""[..],
            b"/etc/passwd",
            b"../escape",
            b"a/../../b",
            b"a//b",
            b"a/./b",
            b"a/",
            b".git",
            b".git/config",
            b"sub/.git/HEAD",
            b"a\0b",
        ] {
            assert!(
                RelPath::new(bad).is_err(),
                "{:?} accepted",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn accepts_odd_but_safe_names() {
        for good in [
            &b"a"[..],
            b"-rf",
            b"with space/x",
            b"new\nline",
            b"\xff\xfe",
            b".gitignore",
            b"..hidden",
            b"a/.github/x",
        ] {
            assert!(
                RelPath::new(good).is_ok(),
                "{:?} refused",
                String::from_utf8_lossy(good)
            );
        }
    }

    #[test]
    fn parent_and_prefix() {
        let p = RelPath::new("a/b/c").unwrap();
        assert_eq!(p.parent().unwrap().as_bytes(), b"a/b");
        assert!(p.starts_with(&RelPath::new("a/b").unwrap()));
        assert!(!p.starts_with(&RelPath::new("a/bc").unwrap()));
        assert!(!RelPath::new("a/bc")
            .unwrap()
            .starts_with(&RelPath::new("a/b").unwrap()));
    }
}
