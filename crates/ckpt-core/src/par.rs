//! Order-keeping parallel map on scoped threads: the caller's thread does
//! the work alone when there is too little of it to share.

/// `items.map(f)` on up to `threads` scoped threads, at least `per_thread`
/// items each, keeping the order. Each thread gets its own state from
/// `make`; on the caller's thread alone (few items, or one thread) `local`
/// is used instead.
pub(crate) fn par_map<T: Send, R: Send, S>(
    items: Vec<T>,
    threads: usize,
    per_thread: usize,
    local: S,
    make: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, T) -> R + Sync,
) -> Vec<R> {
    par_shares(items, threads, per_thread, local, make, |state, share| {
        share.into_iter().map(|t| f(state, t)).collect()
    })
}

/// Like [`par_map`], but `f` gets each thread's whole share of `items`
/// (every `threads`-th item, in order) and returns one result per item of
/// it, in the same order.
pub(crate) fn par_shares<T: Send, R: Send, S>(
    items: Vec<T>,
    threads: usize,
    per_thread: usize,
    mut local: S,
    make: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, Vec<T>) -> Vec<R> + Sync,
) -> Vec<R> {
    let threads = threads
        .clamp(1, 16)
        .min(items.len().div_ceil(per_thread.max(1)).max(1));
    if threads == 1 {
        return f(&mut local, items);
    }
    let n = items.len();
    let mut shares: Vec<Vec<T>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, item) in items.into_iter().enumerate() {
        shares[i % threads].push(item);
    }
    let (f, make) = (&f, &make);
    let mut done: Vec<std::vec::IntoIter<R>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| scope.spawn(move || f(&mut make(), share)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a par_map worker panicked").into_iter())
            .collect()
    });
    // Dealt round-robin: taken back the same way.
    (0..n)
        .map(|i| done[i % threads].next().expect("one result per item"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_item_order_from_every_thread() {
        let items: Vec<usize> = (0..100).collect();
        let out = par_map(items, 4, 1, 0usize, || 1usize, |s, i| (i * 2, *s));
        assert_eq!(
            out.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
            (0..100).map(|i| i * 2).collect::<Vec<_>>()
        );
        assert!(
            out.iter().all(|&(_, s)| s == 1),
            "each thread made its own state"
        );
    }

    #[test]
    fn too_few_items_run_on_the_callers_thread_with_its_state() {
        let out = par_map(vec![1, 2, 3], 4, 8, 7usize, || 0usize, |s, i| i + *s);
        assert_eq!(out, [8, 9, 10]);
    }
}
