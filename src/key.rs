//! [`Key`]: the key of a metadata map or dict.
//!
//! A dump repeats a small vocabulary of keys (`comm_type`, `param_name`, `fsdp_bucket_spec`,
//! `input_shape`, ...) on every node. Stored as `String`s, each key is its own allocation,
//! and reading one field of a node's metadata follows a pointer per key it compares. Keys of
//! up to [`Key::INLINE`] bytes (nearly all in practice) are stored in place instead, so
//! finding a field reads only the map's own entries; the longer keys that dumps repeat on many
//! nodes (`autograd_backward`, `fsdp_bucket_spec`, ...) are an index into a table of them, and
//! any other longer key is boxed.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// A map key: a `str`, stored inline when short. It hashes, compares and orders exactly as
/// its `str` does, so maps keyed by it are looked up with a `&str`.
#[derive(Clone)]
pub struct Key(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]` is the text, copied from a `str` (so valid UTF-8).
    Inline { len: u8, bytes: [u8; Key::INLINE] },
    /// `KNOWN[index]`: a longer key that dumps hold on many nodes.
    Known(u8),
    /// Any other longer key. Boxed twice so that the whole `Key` stays 16 bytes.
    Boxed(Box<Box<str>>),
}

/// Keys longer than [`Key::INLINE`] that real dumps hold on many nodes (`autograd_backward`
/// on nearly half of a training graph's): stored as an index, neither copied nor allocated.
const KNOWN: &[&str] = &[
    "autograd_backward",
    "fsdp_bucket_spec",
    "fsdp_bucket_members",
    "partitioner_tag",
    "nn_module_stack",
    "source_fn_stack",
    "fwd_nn_module_stack",
    "fwd_source_fn_stack",
    "is_gradient_acc",
    "dp_replicate_degree",
    "bucketing_sources",
    "bucketing_custom_sources",
    "bucketing_stack_trace_sources",
    "bucketing_nn_module_stack_sources",
    "bucketing_fwd_nn_module_stack_sources",
];

impl Key {
    /// The longest key stored in place: the whole `Key` is 16 bytes, so a decoded metadata
    /// entry (`(Key, PyValue)`) is 48 bytes, where a `String` key made it 64.
    pub const INLINE: usize = 14;

    pub fn new(text: &str) -> Key {
        if text.len() <= Key::INLINE {
            let mut bytes = [0u8; Key::INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            Key(Repr::Inline {
                len: text.len() as u8,
                bytes,
            })
        } else if let Some(index) = KNOWN.iter().position(|k| *k == text) {
            Key(Repr::Known(index as u8))
        } else {
            Key(Repr::Boxed(Box::new(Box::from(text))))
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                let bytes = &bytes[..(*len as usize).min(Key::INLINE)];
                // SAFETY: `Key::new` copied exactly these bytes from a `str`, and nothing
                // else writes them.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            Repr::Known(index) => KNOWN.get(*index as usize).copied().unwrap_or_default(),
            Repr::Boxed(text) => text,
        }
    }
}

const _: () = assert!(std::mem::size_of::<Key>() == 16);

impl Deref for Key {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Key {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As the `str`: `Borrow<str>` lookups require it.
        self.as_str().hash(state)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Key {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Default for Key {
    fn default() -> Key {
        Key::new("")
    }
}

impl From<&str> for Key {
    fn from(text: &str) -> Key {
        Key::new(text)
    }
}

impl From<&String> for Key {
    fn from(text: &String) -> Key {
        Key::new(text)
    }
}

impl From<String> for Key {
    fn from(text: String) -> Key {
        Key::new(&text)
    }
}

impl From<Key> for String {
    fn from(key: Key) -> String {
        key.as_str().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn keys_behave_as_their_text() {
        let long = "a key that is longer than twenty-two bytes";
        for text in [
            "",
            "a",
            "comm_type",
            "fsdp_bucket_members",
            "autograd_backward",
            "exactly_14_byte",
            "exactly_15_bytes",
            "exactly_22_bytes_long_",
            long,
            "ключ·é",
        ] {
            let key = Key::from(text);
            assert_eq!(key.as_str(), text);
            assert_eq!(key, text);
            assert_eq!(hash_of(&key), hash_of(text), "{text}");
            assert_eq!(Key::from(text.to_string()), key);
            assert_eq!(format!("{key}"), text);
            assert_eq!(format!("{key:?}"), format!("{text:?}"));
        }
        assert_eq!(std::mem::size_of::<Key>(), 16);
        // `Known` holds a `u8` index; a known key is never one that fits in place.
        assert!(KNOWN.len() <= 256);
        assert!(KNOWN.iter().all(|k| k.len() > Key::INLINE));
        let (a, b) = (Key::from("a"), Key::from("b"));
        assert!(a < b);
        let mut map = indexmap::IndexMap::new();
        map.insert(Key::from("param_name"), 1);
        map.insert(Key::from(long), 2);
        assert_eq!(map.get("param_name"), Some(&1));
        assert_eq!(map.get(long), Some(&2));
    }
}
