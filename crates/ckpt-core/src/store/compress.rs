//! zstd, as the store uses it: one frame per blob or pack, with reused
//! contexts, and deltas against an earlier version as a zstd prefix.

/// zstd's window must span the prefix and the data.
fn window_log(len: usize) -> u32 {
    (usize::BITS - len.max(1 << 10).leading_zeros()).min(30)
}

/// `data` as one zstd frame at `level`.
pub(super) fn compress(level: i32, data: &[u8]) -> Vec<u8> {
    thread_local! {
        // One compression context per thread and level: creating one per
        // blob costs more than compressing a small file.
        static COMPRESSORS: std::cell::RefCell<Vec<(i32, zstd::bulk::Compressor<'static>)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    COMPRESSORS.with(|cell| {
        let mut slots = cell.borrow_mut();
        let i = match slots.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => {
                if slots.len() >= 4 {
                    slots.clear();
                }
                let c = zstd::bulk::Compressor::new(level)
                    .expect("a zstd context with a level checked in open");
                slots.push((level, c));
                slots.len() - 1
            }
        };
        slots[i]
            .1
            .compress(data)
            .expect("zstd compresses any input into a buffer it sizes itself")
    })
}

/// `data` compressed with `base` as a zstd prefix; also returns the memory
/// the compression context used.
pub(super) fn compress_delta(
    level: i32,
    data: &[u8],
    base: &[u8],
) -> Result<(Vec<u8>, usize), usize> {
    use zstd::zstd_safe::{CCtx, CParameter};
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(level))?;
    // Sized to the data: with long-distance matching on, zstd's default
    // window is 128 MiB and its LDM table grows with it.
    cctx.set_parameter(CParameter::WindowLog(window_log(base.len() + data.len())))?;
    // Long-distance matching finds the base's content anywhere in a large
    // prefix (what `zstd --patch-from` does).
    cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))?;
    cctx.set_pledged_src_size(Some(data.len() as u64))?;
    cctx.ref_prefix(base)?;
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(data.len()));
    cctx.compress2(&mut out, data)?;
    Ok((out, cctx.sizeof()))
}

/// The `size` raw bytes of a frame made by [`compress_delta`] against `prefix`.
pub(super) fn decompress_delta(
    compressed: &[u8],
    prefix: &[u8],
    size: usize,
) -> Result<Vec<u8>, usize> {
    use zstd::zstd_safe::{DCtx, DParameter};
    let mut dctx = DCtx::create();
    dctx.set_parameter(DParameter::WindowLogMax(window_log(prefix.len() + size)))?;
    dctx.ref_prefix(prefix)?;
    let mut out = Vec::with_capacity(size);
    dctx.decompress(&mut out, compressed)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_compression_memory_is_sized_to_the_file() {
        let base: Vec<u8> = (0..150_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let data = [&base[..], b"one more line\n"].concat();
        assert!(base.len() > 1 << 20);
        let (out, cctx_bytes) = compress_delta(3, &data, &base).unwrap();
        assert!(out.len() < 1000, "{} bytes", out.len());
        assert!(
            cctx_bytes < 4 << 20,
            "a delta of a {} KiB file used {} KiB of zstd state",
            data.len() >> 10,
            cctx_bytes >> 10
        );
    }
}
