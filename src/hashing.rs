//! The hash maps and sets keyed by the input's strings and ids ([`FastMap`], [`FastSet`]):
//! foldhash, seeded afresh for each map; and [`prefetch`], the cache hint that tables probed at
//! random (and the reports' reads of the nodes) use.
//!
//! The keys come from the dump. With a seed anyone can read in this source, names can be
//! computed to share one probe sequence, and every insert then walks it: quadratic over the
//! graph (docs/hostile-input.md). Natively foldhash seeds itself from the process's addresses
//! and the clock. In wasm neither varies from run to run, so the app hands in entropy from
//! the browser ([`seed_from_host`]) before it reads anything. Iteration order never reaches
//! output, so the seed changes nothing else.

use foldhash::fast::SeedableRandomState;
use foldhash::SharedSeed;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, MapSeed>;
pub(crate) type FastSet<K> = std::collections::HashSet<K, MapSeed>;

/// The host's seed, once given.
static HOST_SEED: OnceLock<(u64, SharedSeed)> = OnceLock::new();
/// Maps made since, so that no two share a seed.
static MAPS: AtomicU64 = AtomicU64::new(0);

/// Seeds every map made from now on from `entropy` (from the host's random source: the
/// browser's `crypto.getRandomValues`). The first call counts; later calls change nothing.
pub fn seed_from_host(entropy: u64) {
    let _ = HOST_SEED.set((entropy, SharedSeed::from_u64(entropy.rotate_left(32))));
}

/// A map's hasher state: the host's seed with a count of maps mixed in, else foldhash's own.
#[derive(Clone, Debug)]
pub struct MapSeed(SeedableRandomState);

impl Default for MapSeed {
    fn default() -> MapSeed {
        MapSeed(match HOST_SEED.get() {
            Some((entropy, shared)) => {
                let n = MAPS.fetch_add(1, Ordering::Relaxed);
                SeedableRandomState::with_seed(
                    entropy ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    shared,
                )
            }
            None => SeedableRandomState::random(),
        })
    }
}

impl BuildHasher for MapSeed {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

/// Asks the processor to bring the cache line at `at` in, ahead of a read that would otherwise
/// wait for memory: the name table's slots, and the nodes a report reads in turn. A hint
/// only: it changes nothing, and does nothing where there is no such instruction.
#[inline]
pub(crate) fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is in every x86_64 processor (the target's baseline), and a prefetch
        // neither reads into the program nor faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each map hashes with its own seed, before and after the host gives one, so no one can
    /// compute names that collide in it.
    #[test]
    fn maps_are_seeded_each_their_own() {
        let differ = || {
            let (a, b): (FastMap<&str, u32>, FastSet<&str>) = Default::default();
            a.hasher().hash_one("layers.0") != b.hasher().hash_one("layers.0")
        };
        assert!(differ());
        seed_from_host(0x0123_4567_89ab_cdef);
        assert!(differ());
        let seeded = MapSeed::default();
        assert_eq!(
            seeded.hash_one("layers.0"),
            seeded.clone().hash_one("layers.0"),
            "a map hashes one key one way"
        );
    }
}
