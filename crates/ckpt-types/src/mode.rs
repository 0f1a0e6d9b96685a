//! File modes on the wire and in every `--json` document: the permission
//! bits as an octal string (`"644"`), the notation of `ls`, `chmod` and the
//! work-copy manifests. A number (what daemons before this wrote) is read too.

use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{:o}", mode & 0o7777))
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u32),
        Octal(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Octal(s) => u32::from_str_radix(&s, 8)
            .map_err(|_| serde::de::Error::custom(format!("mode {s:?} is not octal"))),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Hash, State};

    #[test]
    fn modes_are_octal_strings_and_numbers_are_still_read() {
        let s = State::File {
            hash: Hash([1; 32]),
            size: 1,
            mode: 0o644,
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains(r#""mode":"644""#), "{text}");
        assert_eq!(serde_json::from_str::<State>(&text).unwrap(), s);
        let old = r#"{"kind":"dir","mode":493}"#;
        assert_eq!(
            serde_json::from_str::<State>(old).unwrap(),
            State::Dir { mode: 0o755 }
        );
        assert!(serde_json::from_str::<State>(r#"{"kind":"dir","mode":"9"}"#).is_err());
    }
}
