//! Dotted names (`a.b.w`: parameters, module paths) as paths in a tree of their segments.
//!
//! The planner asks of a name's dotted prefixes (`a`, `a.b`) which module they are, whether a
//! block owns one, whether two module plans overlap. Looked up whole, each prefix is hashed
//! from the name's start: a name of `d` levels costs `d` hashes of up to its whole length, and
//! a dump with one 20,000-level `param_name` (250 KB) took 1.25 GB and seconds. Here a prefix
//! is found from the one before it and its last segment, so every prefix of a name is found
//! in time that grows with the name's length (docs/hostile-input.md).

use crate::hashing::MapSeed;
use std::hash::{Hash, Hasher};

/// Path ids: a prefix's id is its index in the set.
pub(crate) type PathId = u32;

/// Numbered dotted paths, each found by its parent path and its last segment.
#[derive(Default)]
pub(crate) struct DottedPaths {
    paths: indexmap::IndexSet<Segment, MapSeed>,
    parent: Vec<Option<PathId>>,
}

/// A path: its parent's id (`ROOT` for a first segment) and its last segment.
struct Segment {
    parent: PathId,
    text: Box<str>,
}

/// A [`Segment`] to look up, borrowed.
struct SegmentRef<'a> {
    parent: PathId,
    text: &'a str,
}

/// The parent of a name's first segment.
const ROOT: PathId = PathId::MAX;

impl Hash for Segment {
    fn hash<H: Hasher>(&self, state: &mut H) {
        SegmentRef {
            parent: self.parent,
            text: &self.text,
        }
        .hash(state);
    }
}

impl Hash for SegmentRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u32(self.parent);
        self.text.hash(state);
    }
}

impl PartialEq for Segment {
    fn eq(&self, other: &Segment) -> bool {
        self.parent == other.parent && self.text == other.text
    }
}

impl Eq for Segment {}

impl indexmap::Equivalent<Segment> for SegmentRef<'_> {
    fn equivalent(&self, key: &Segment) -> bool {
        self.parent == key.parent && *self.text == *key.text
    }
}

impl DottedPaths {
    /// How many paths are numbered.
    pub(crate) fn len(&self) -> usize {
        self.parent.len()
    }

    /// The path above `path` (`a.b` above `a.b.c`), `None` for a first segment.
    pub(crate) fn parent(&self, path: PathId) -> Option<PathId> {
        self.parent[path as usize]
    }

    /// `path` and the paths above it, nearest first.
    pub(crate) fn up_from(&self, path: Option<PathId>) -> impl Iterator<Item = PathId> + '_ {
        std::iter::successors(path, |&id| self.parent(id))
    }

    /// The id of `segment` under `parent`, numbered when new.
    pub(crate) fn child(&mut self, parent: Option<PathId>, segment: &str) -> PathId {
        let key = SegmentRef {
            parent: parent.unwrap_or(ROOT),
            text: segment,
        };
        if let Some(id) = self.paths.get_index_of(&key) {
            return id as PathId;
        }
        self.paths.insert(Segment {
            parent: key.parent,
            text: segment.into(),
        });
        self.parent.push(parent);
        (self.paths.len() - 1) as PathId
    }

    /// The id of `segment` under `parent`, when numbered.
    fn find_child(&self, parent: Option<PathId>, segment: &str) -> Option<PathId> {
        let key = SegmentRef {
            parent: parent.unwrap_or(ROOT),
            text: segment,
        };
        self.paths.get_index_of(&key).map(|id| id as PathId)
    }

    /// The id of the whole dotted `name`, when it is numbered.
    pub(crate) fn find(&self, name: &str) -> Option<PathId> {
        let mut path = None;
        for segment in name.split('.') {
            path = Some(self.find_child(path, segment)?);
        }
        path
    }

    /// Numbers `name` and every prefix of it; the ids of its prefixes and then its own,
    /// outermost first, go to `each`. Returns `name`'s id.
    pub(crate) fn insert_each(&mut self, name: &str, mut each: impl FnMut(PathId)) -> PathId {
        let mut path = None;
        for segment in name.split('.') {
            let id = self.child(path, segment);
            each(id);
            path = Some(id);
        }
        path.expect("split gives at least one segment")
    }
}

#[cfg(test)]
mod tests {
    use super::DottedPaths;

    /// Every prefix of every name is one path, whose parent is the prefix one level up,
    /// found again by its text.
    #[test]
    fn prefixes_are_paths_under_their_parents() {
        let names = ["a.b.w", "a.b.v", "a.c", "x", "a..b", ".w", "", "a.b"];
        let mut paths = DottedPaths::default();
        for name in names {
            let mut seen = Vec::new();
            let id = paths.insert_each(name, |id| seen.push(id));
            assert_eq!(seen.last(), Some(&id));
            let dots: Vec<usize> = name.match_indices('.').map(|(at, _)| at).collect();
            assert_eq!(seen.len(), dots.len() + 1, "{name:?}");
            for (k, &at) in dots.iter().enumerate() {
                assert_eq!(paths.find(&name[..at]), Some(seen[k]), "{name:?} at {at}");
                assert_eq!(paths.parent(seen[k + 1]), Some(seen[k]));
            }
            assert_eq!(paths.find(name), Some(id));
            assert_eq!(paths.parent(seen[0]), None);
        }
        // Distinct texts, distinct paths: `a.b` was numbered once, by `a.b.w`.
        let distinct: std::collections::HashSet<&str> = names
            .iter()
            .flat_map(|n| {
                n.match_indices('.')
                    .map(move |(at, _)| &n[..at])
                    .chain([*n])
            })
            .collect();
        assert_eq!(paths.len(), distinct.len());
        assert_eq!(paths.find("a.q"), None);
        assert_eq!(paths.find("q"), None);
        let up: Vec<_> = paths.up_from(paths.find("a.b.w")).collect();
        assert_eq!(up, ["a.b.w", "a.b", "a"].map(|n| paths.find(n).unwrap()));
    }

    /// A name of 200,000 levels is numbered in time and memory that grow with its length.
    #[test]
    fn a_deep_name_is_numbered_in_one_pass() {
        let name: String = (0..200_000).map(|i| format!("m{i}.")).collect::<String>() + "w";
        let mut paths = DottedPaths::default();
        let mut count = 0;
        let id = paths.insert_each(&name, |_| count += 1);
        assert_eq!(count, 200_001);
        assert_eq!(paths.len(), 200_001);
        assert_eq!(paths.find(&name), Some(id));
        assert_eq!(paths.up_from(Some(id)).count(), 200_001);
    }
}
