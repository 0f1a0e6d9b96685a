//! Paths as raw bytes, so a non-UTF-8 file name survives every trip:
//! [`WirePath`] (any path, as a client names it) and [`RelPath`] (a
//! checked project-relative path, the only kind that reaches the
//! filesystem). Both serialize through [`bytes`].

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A path (absolute or project-relative) as raw bytes. Serialized as a JSON
/// string when it is UTF-8, else as an array of bytes, so JSON stays readable
/// and no name is ever mangled.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct WirePath(pub Vec<u8>);

impl WirePath {
    pub fn as_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.0))
    }

    pub fn to_path_buf(&self) -> PathBuf {
        self.as_path().to_path_buf()
    }

    /// A printable form (lossy for non-UTF-8 names).
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    /// The name for a line of text output, quoted as git quotes it when it
    /// holds a control character, a quote, a backslash or a byte that is not UTF-8
    /// (`"a\nb"`, `"caf\351"`), so one name is always one line; readable
    /// UTF-8 stays as it is (git's `core.quotePath=false`).
    pub fn quoted(&self) -> String {
        let text = String::from_utf8_lossy(&self.0);
        let plain = matches!(text, std::borrow::Cow::Borrowed(_))
            && !text
                .chars()
                .any(|c| c.is_control() || c == '"' || c == '\\');
        if plain {
            return text.into_owned();
        }
        let mut out = String::from("\"");
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\x07' => out.push_str("\\a"),
                    '\x08' => out.push_str("\\b"),
                    '\t' => out.push_str("\\t"),
                    '\n' => out.push_str("\\n"),
                    '\x0b' => out.push_str("\\v"),
                    '\x0c' => out.push_str("\\f"),
                    '\r' => out.push_str("\\r"),
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if c.is_control() => {
                        let mut buf = [0; 4];
                        for b in c.encode_utf8(&mut buf).bytes() {
                            out.push_str(&format!("\\{b:03o}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            for b in chunk.invalid() {
                out.push_str(&format!("\\{b:03o}"));
            }
        }
        out.push('"');
        out
    }
}

impl From<&Path> for WirePath {
    fn from(p: &Path) -> Self {
        WirePath(p.as_os_str().as_bytes().to_vec())
    }
}

impl From<PathBuf> for WirePath {
    fn from(p: PathBuf) -> Self {
        WirePath(p.into_os_string().into_vec())
    }
}

use std::os::unix::ffi::OsStringExt;

impl std::fmt::Debug for WirePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.display())
    }
}

impl std::fmt::Display for WirePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

impl serde::Serialize for WirePath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        bytes::serialize(&self.0, s)
    }
}

impl<'de> serde::Deserialize<'de> for WirePath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        bytes::deserialize(d).map(WirePath)
    }
}

/// The one serialized form of a path (or a link target): a JSON string when
/// it is UTF-8, else an array of bytes, so JSON stays readable and no name
/// is ever mangled.
pub mod bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(b) {
            Ok(text) => s.serialize_str(text),
            Err(_) => s.serialize_bytes(b),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Bytes(Vec<u8>),
        }
        Ok(match Repr::deserialize(d)? {
            Repr::Text(t) => t.into_bytes(),
            Repr::Bytes(b) => b,
        })
    }
}

/// A path refused as a [`RelPath`], and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsafePath {
    pub path: String,
    pub reason: &'static str,
}

impl std::fmt::Display for UnsafePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unsafe path {:?}: {}", self.path, self.reason)
    }
}

impl std::error::Error for UnsafePath {}

/// A validated, normalized path relative to a project root, as raw bytes
/// (Linux file names need not be UTF-8). Components are separated by `/`.
/// Every path that comes from the database or a client is untrusted:
/// [`RelPath::new`] is the only way to make one, and it rejects anything
/// that could leave the project root or reach into `.git`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(Vec<u8>);

impl RelPath {
    /// Validates `bytes`: not empty, not absolute, no empty, `.` or `..`
    /// components, no component named `.git`, no NUL byte.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<RelPath, UnsafePath> {
        let bytes = bytes.into();
        let bad = |reason| UnsafePath {
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
                crate::names::GIT_DIR => return Err(bad("path inside .git")),
                _ => {}
            }
        }
        Ok(RelPath(bytes))
    }

    /// The relative path of `path` under `root`, if it is strictly inside it.
    pub fn from_abs(root: &Path, path: &Path) -> Result<RelPath, UnsafePath> {
        let rel = path.strip_prefix(root).map_err(|_| UnsafePath {
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
    pub fn join(&self, name: &[u8]) -> Result<RelPath, UnsafePath> {
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

    /// The name for a line of text output (see [`WirePath::quoted`]).
    pub fn quoted(&self) -> String {
        WirePath(self.0.clone()).quoted()
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

impl serde::Serialize for RelPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        bytes::serialize(&self.0, s)
    }
}

impl<'de> serde::Deserialize<'de> for RelPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RelPath::new(bytes::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl From<&RelPath> for WirePath {
    fn from(p: &RelPath) -> Self {
        WirePath(p.0.clone())
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
        assert_eq!(
            RelPath::new("a/../b").unwrap_err().to_string(),
            r#"unsafe path "a/../b": relative path component"#
        );
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

    #[test]
    fn a_relpath_has_the_wire_form_and_is_checked_when_read() {
        let p = RelPath::new(b"src/\xffx".to_vec()).unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, serde_json::to_string(&WirePath::from(&p)).unwrap());
        assert_eq!(serde_json::from_str::<RelPath>(&json).unwrap(), p);
        assert_eq!(
            serde_json::to_string(&RelPath::new("a b").unwrap()).unwrap(),
            r#""a b""#
        );
        assert!(serde_json::from_str::<RelPath>(r#""../x""#).is_err());
        assert!(serde_json::from_str::<RelPath>(r#"".git/config""#).is_err());
    }

    #[test]
    fn quoted_names_are_one_line_as_git_writes_them() {
        let q = |b: &[u8]| WirePath(b.to_vec()).quoted();
        assert_eq!(q(b"src/a.rs"), "src/a.rs");
        assert_eq!(q("café/ü.txt".as_bytes()), "café/ü.txt");
        assert_eq!(q(b"a\nb"), r#""a\nb""#);
        assert_eq!(q(b"tab\there"), r#""tab\there""#);
        assert_eq!(q(b"q\"uote"), r#""q\"uote""#);
        assert_eq!(q(b"back\\slash"), r#""back\\slash""#);
        assert_eq!(q(b"esc\x1b[31m"), r#""esc\033[31m""#);
        assert_eq!(q(b"caf\xe9"), r#""caf\351""#);
    }

    #[test]
    fn utf8_is_a_string_and_other_bytes_survive() {
        let p = WirePath(b"src/a.css".to_vec());
        assert_eq!(serde_json::to_string(&p).unwrap(), r#""src/a.css""#);
        let odd = WirePath(b"bad\xff\xfename".to_vec());
        let json = serde_json::to_string(&odd).unwrap();
        assert!(json.starts_with('['), "{json}");
        let back: WirePath = serde_json::from_str(&json).unwrap();
        assert_eq!(back, odd);
    }
}
