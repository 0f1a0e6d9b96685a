//! One 2 MiB text file appended to in 10 turns: every pre-image restores
//! exactly, and the store stays compressed. Run with `--nocapture` to read the
//! store's growth per turn.

mod common;

use common::*;

const WORDS: &[&str] = &[
    "the", "agent", "writes", "a", "function", "that", "returns", "value", "from", "cache", "when",
    "request", "arrives", "with", "token", "error", "handler", "logs", "message", "and", "retries",
    "after", "timeout", "of", "seconds", "while", "user", "waits", "for", "response", "queue",
];

/// Text that compresses like prose or logs do, not like a repeated line.
fn text(rng: &mut Rng, bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 100);
    let mut line = 0u64;
    while out.len() < bytes {
        line += 1;
        out.extend_from_slice(format!("{:08x} ", rng.next_u64() as u32).as_bytes());
        for _ in 0..(6 + rng.below(10)) {
            out.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(format!("#{line}\n").as_bytes());
    }
    out.truncate(bytes);
    out
}

#[test]
fn two_mib_file_appended_in_ten_turns_restores_every_pre_image() {
    let clock = std::time::Instant::now();
    let fx = Fx::new();
    let mut rng = Rng::new(2024);
    let initial = text(&mut rng, 2 << 20);
    fx.write("log.txt", &initial);
    let mut p = fx.open();
    sync(&mut p);
    let base = p.status().expect("status").store_bytes;
    eprintln!(
        "baseline: {} raw bytes stored in {} bytes ({:.1}x)",
        initial.len(),
        base,
        initial.len() as f64 / base.max(1) as f64
    );
    assert!(base > 0);
    assert!(
        base < initial.len() as u64 / 2,
        "the baseline blob is stored compressed: {base} bytes for {}",
        initial.len()
    );

    let mut versions = Vec::new(); // the file as each turn started
    let mut turns = Vec::new();
    let mut raw_total = initial.len() as u64;
    let mut last = base;
    for i in 0..10 {
        versions.push(fx.read("log.txt"));
        turns.push(start(&mut p, &format!("append {i}")));
        let more = text(&mut rng, 16 << 10);
        fx.append("log.txt", &more);
        end(&mut p);
        let size = fx.read("log.txt").len() as u64;
        raw_total += size;
        let now = p.status().expect("status").store_bytes;
        eprintln!(
            "turn {i}: file {size} bytes, store {now} bytes (+{} this turn, {:.1}% of the file) [{:.1?}]",
            now - last,
            (now - last) as f64 * 100.0 / size as f64,
            clock.elapsed()
        );
        assert!(now > last, "turn {i} stored its new version");
        assert!(
            now - last < size / 2,
            "turn {i}: the new version is stored compressed ({} bytes for {size})",
            now - last
        );
        last = now;
    }
    let final_tree = fx.tree();
    let final_bytes = fx.read("log.txt");
    eprintln!(
        "after 10 turns: {raw_total} raw bytes across 11 versions stored in {last} bytes ({:.1}x)",
        raw_total as f64 / last as f64
    );
    assert!(
        last < raw_total / 2,
        "store {last} bytes for {raw_total} raw"
    );

    for (i, &t) in turns.iter().enumerate() {
        rewind(&mut p, t);
        let got = fx.read("log.txt");
        assert!(
            got == versions[i],
            "rewind to turn {i}: {} bytes, expected {}",
            got.len(),
            versions[i].len()
        );
        redo(&mut p);
        assert_tree(
            &final_tree,
            &fx.tree(),
            &format!("redo after rewinding turn {i}"),
        );
        eprintln!("rewind + redo of turn {i} [{:.1?}]", clock.elapsed());
    }
    // The oldest pre-image is the baseline content.
    rewind(&mut p, turns[0]);
    assert!(fx.read("log.txt") == initial);
    redo(&mut p);
    assert!(fx.read("log.txt") == final_bytes);
}
