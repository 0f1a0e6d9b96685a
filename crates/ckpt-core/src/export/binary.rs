//! Git binary patches: `literal` hunks, zlib-deflated and base85-encoded
//! the way `git apply` decodes them (git's `diff.c` `emit_binary_diff_body`).
//!
//! Only literal hunks are written (the whole new content), never deltas:
//! larger than git's own output for small edits, but always accepted.

use std::io::Write;

/// git's base85 alphabet (`base85.c`), not RFC 1924's order.
const ALPHABET: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Bytes per encoded line: the line's length is one letter, `A`–`Z` for
/// 1–26 and `a`–`z` for 27–52.
const LINE_BYTES: usize = 52;

/// Appends base85 of `data`, in groups of four bytes (the last padded with
/// zeros), five characters per group, most significant digit first.
fn base85(out: &mut Vec<u8>, data: &[u8]) {
    for group in data.chunks(4) {
        let mut word = [0u8; 4];
        word[..group.len()].copy_from_slice(group);
        let mut n = u32::from_be_bytes(word);
        let mut digits = [0u8; 5];
        for d in digits.iter_mut().rev() {
            *d = ALPHABET[(n % 85) as usize];
            n /= 85;
        }
        out.extend_from_slice(&digits);
    }
}

/// One `literal` hunk for `data`: the header, the encoded lines, and the
/// empty line that ends the hunk.
pub(crate) fn literal_hunk(out: &mut Vec<u8>, data: &[u8]) {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).expect("writing into a Vec cannot fail");
    let deflated = z.finish().expect("writing into a Vec cannot fail");
    out.extend_from_slice(format!("literal {}\n", data.len()).as_bytes());
    for line in deflated.chunks(LINE_BYTES) {
        let n = line.len() as u8;
        out.push(if n <= 26 { b'A' + n - 1 } else { b'a' + n - 27 });
        base85(out, line);
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// A whole `GIT binary patch` section: forward to `new`, and the reverse
/// hunk back to `old` so that `git apply -R` works too.
pub(crate) fn binary_patch(out: &mut Vec<u8>, old: &[u8], new: &[u8]) {
    out.extend_from_slice(b"GIT binary patch\n");
    literal_hunk(out, new);
    literal_hunk(out, old);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Decodes what `literal_hunk` wrote, the way git's `apply.c` does.
    fn decode(hunk: &[u8]) -> Vec<u8> {
        let text = std::str::from_utf8(hunk).expect("hunks are ASCII");
        let mut lines = text.split('\n');
        let header = lines.next().expect("a header line");
        let size: usize = header
            .strip_prefix("literal ")
            .expect("a literal hunk")
            .parse()
            .expect("a size");
        let mut deflated = Vec::new();
        for line in lines.take_while(|l| !l.is_empty()) {
            let b = line.as_bytes();
            let n = match b[0] {
                c @ b'A'..=b'Z' => (c - b'A' + 1) as usize,
                c => (c - b'a' + 27) as usize,
            };
            assert_eq!(
                b.len() - 1,
                n.div_ceil(4) * 5,
                "line length matches its letter"
            );
            let mut bytes = Vec::new();
            for group in b[1..].chunks(5) {
                let mut v: u32 = 0;
                for &c in group {
                    let d = ALPHABET
                        .iter()
                        .position(|&a| a == c)
                        .expect("in the alphabet");
                    v = v * 85 + d as u32;
                }
                bytes.extend_from_slice(&v.to_be_bytes());
            }
            deflated.extend_from_slice(&bytes[..n]);
        }
        let mut data = Vec::new();
        flate2::read::ZlibDecoder::new(&deflated[..])
            .read_to_end(&mut data)
            .expect("valid zlib");
        assert_eq!(data.len(), size, "the header names the inflated size");
        data
    }

    #[test]
    fn base85_matches_gits_alphabet_and_order() {
        let mut out = Vec::new();
        base85(&mut out, &[0, 0, 0, 0]);
        assert_eq!(out, b"00000");
        out.clear();
        base85(&mut out, &[0xff, 0xff, 0xff, 0xff]);
        // 2^32 - 1 = 82·85^4 + 23·85^3 + 54·85^2 + 12·85 + 0
        assert_eq!(out, b"|NsC0");
    }

    #[test]
    fn literal_hunks_decode_to_their_content() {
        let mut data: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
        data.extend_from_slice(&[0, 1, 2]);
        for content in [&b""[..], b"\0", b"abc", &data[..]] {
            let mut hunk = Vec::new();
            literal_hunk(&mut hunk, content);
            assert!(hunk.ends_with(b"\n\n"), "a hunk ends with an empty line");
            assert_eq!(decode(&hunk), content);
        }
    }
}
