//! [`Key`]: the key of a metadata map or dict.
//!
//! A dump repeats a small vocabulary of keys (`comm_type`, `param_name`, `fsdp_bucket_spec`,
//! `input_shape`, ...) on every node. Stored as `String`s, each key is its own allocation,
//! and reading one field of a node's metadata follows a pointer per key it compares. Keys of
//! up to [`Key::INLINE`] bytes (all of the dump format's, and nearly all in practice) are
//! stored in place instead, so finding a field reads only the map's own entries; longer keys
//! are boxed.

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
    Inline {
        len: u8,
        bytes: [u8; Key::INLINE],
    },
    Boxed(Box<str>),
}

impl Key {
    /// The longest key stored in place (the whole `Key` is 24 bytes, like a `String`).
    pub const INLINE: usize = 22;

    pub fn new(text: &str) -> Key {
        if text.len() <= Key::INLINE {
            let mut bytes = [0u8; Key::INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            Key(Repr::Inline {
                len: text.len() as u8,
                bytes,
            })
        } else {
            Key(Repr::Boxed(Box::from(text)))
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
            Repr::Boxed(text) => text,
        }
    }
}

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
        if text.len() <= Key::INLINE {
            Key::new(&text)
        } else {
            Key(Repr::Boxed(text.into_boxed_str()))
        }
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
        assert_eq!(std::mem::size_of::<Key>(), 24);
        let (a, b) = (Key::from("a"), Key::from("b"));
        assert!(a < b);
        let mut map = indexmap::IndexMap::new();
        map.insert(Key::from("param_name"), 1);
        map.insert(Key::from(long), 2);
        assert_eq!(map.get("param_name"), Some(&1));
        assert_eq!(map.get(long), Some(&2));
    }
}
