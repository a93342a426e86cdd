//! Two pieces of work at once, where the machine has threads: the CLI's runs use both cores
//! of a small machine (`docs/performance.md`). In wasm, and where no thread can be started,
//! the two run one after the other on this thread, with the same results.

/// `(first(), second())`: `first` on a scoped thread named `name` while this one runs
/// `second`. A panic in either is raised here, as if both had run here.
pub fn join<A: Send, B>(
    name: &str,
    first: impl FnOnce() -> A + Send,
    second: impl FnOnce() -> B,
) -> (A, B) {
    #[cfg(not(target_arch = "wasm32"))]
    {
        // Taken by the thread; left here when no thread could start.
        let first = std::sync::Mutex::new(Some(first));
        let take = || first.lock().ok().and_then(|mut f| f.take());
        std::thread::scope(|scope| {
            let started = std::thread::Builder::new()
                .name(name.into())
                .spawn_scoped(scope, || take().map(|f| f()));
            let b = second();
            let a = match started {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
                Err(_) => None,
            };
            match a.or_else(|| take().map(|f| f())) {
                Some(a) => (a, b),
                // Not reached: `first` is taken once, by the thread or here.
                None => unreachable!("the first piece of work ran nowhere"),
            }
        })
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = name;
        (first(), second())
    }
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn both_pieces_run_and_a_panic_is_raised_here() {
        let data = [1, 2, 3, 4];
        let (a, b) = join(
            "test",
            || data[..2].iter().sum::<i32>(),
            || data[2..].iter().sum::<i32>(),
        );
        assert_eq!((a, b), (3, 7));
        // wasm aborts on a panic: nothing to catch there.
        #[cfg(not(target_arch = "wasm32"))]
        {
            let raised = std::panic::catch_unwind(|| join("test", || panic!("first"), || 1));
            assert!(raised.is_err());
        }
    }
}
