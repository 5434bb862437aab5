//! A JSON object of named values that keeps its insertion order (the order
//! `serde_json::Map` keeps with `preserve_order`, which the stored files
//! were written in).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// Names to values, in insertion order; stored as a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedMap<V>(Vec<(String, V)>);

impl<V> Default for NamedMap<V> {
    fn default() -> Self {
        NamedMap(Vec::new())
    }
}

impl<V> NamedMap<V> {
    pub fn new() -> Self {
        NamedMap::default()
    }

    /// Like a map's insert: a name already present keeps its place and
    /// takes the new value.
    pub fn insert(&mut self, name: impl Into<String>, value: V) {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, slot)) => *slot = value,
            None => self.0.push((name, value)),
        }
    }

    /// Inserts unless the name is present (the first value wins).
    pub fn insert_if_absent(&mut self, name: impl Into<String>, value: V) {
        let name = name.into();
        if !self.contains(&name) {
            self.0.push((name, value));
        }
    }

    pub fn get(&self, name: &str) -> Option<&V> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<V, K: Into<String>> FromIterator<(K, V)> for NamedMap<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = NamedMap::new();
        for (name, value) in iter {
            map.insert(name, value);
        }
        map
    }
}

impl<V: Serialize> Serialize for NamedMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for NamedMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<V>(PhantomData<V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = NamedMap<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut map = NamedMap::new();
                while let Some((name, value)) = access.next_entry::<String, V>()? {
                    map.insert(name, value);
                }
                Ok(map)
            }
        }

        deserializer.deserialize_map(Entries(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    #[test]
    fn same_object_as_a_json_map_in_the_same_order() {
        let pairs = [("b", 2.0), ("a", 1.0), ("b", 3.0), ("c", f64::NAN)];
        let old: Map<String, Value> = pairs.iter().map(|(n, v)| (n.to_string(), json!(v))).collect();
        let new: NamedMap<Option<f64>> = pairs.iter().map(|&(n, v)| (n, Some(v))).collect();
        let new = serde_json::to_value(&new).unwrap();
        assert_eq!(new, Value::Object(old.clone()));
        assert_eq!(new.to_string(), Value::Object(old).to_string());
        assert_eq!(new.to_string(), r#"{"b":3.0,"a":1.0,"c":null}"#);
    }

    #[test]
    fn reads_back_in_order() {
        let stored = json!({"z": "1", "a": "2"});
        let map: NamedMap<String> = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(map.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["z", "a"]);
        assert_eq!(map.get("a").map(String::as_str), Some("2"));
        assert_eq!(serde_json::to_value(&map).unwrap().to_string(), stored.to_string());
        assert!(serde_json::from_value::<NamedMap<String>>(json!([1])).is_err());
    }

    #[test]
    fn first_value_wins_with_insert_if_absent() {
        let mut map = NamedMap::new();
        map.insert_if_absent("k", 1);
        map.insert_if_absent("k", 2);
        assert_eq!(map.get("k"), Some(&1));
        assert_eq!(map.len(), 1);
    }
}
