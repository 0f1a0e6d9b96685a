//! Paths on the wire as raw bytes, so a non-UTF-8 file name survives the trip.

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
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => s.serialize_bytes(&self.0),
        }
    }
}

impl<'de> serde::Deserialize<'de> for WirePath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Bytes(Vec<u8>),
        }
        Ok(WirePath(match Repr::deserialize(d)? {
            Repr::Text(t) => t.into_bytes(),
            Repr::Bytes(b) => b,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
