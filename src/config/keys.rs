//! Every key the daemon accepts, walked from the `Config` type itself: a deserializer that
//! answers each struct with all of its fields (and each list with one element) and writes down
//! every key it was asked for. The example config is checked against that list, so a new key
//! cannot be added without the example mentioning it (README: "every key is in
//! config/askrelay.example.toml").

use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;

/// Every key path `Config` accepts: `discord.token`, `routes.channel_id` (a list's entries
/// share their list's path), `routes.expiry.after_secs`.
pub(super) fn accepted() -> BTreeSet<String> {
    let keys = RefCell::new(BTreeSet::new());
    let probe = Probe {
        path: "",
        keys: &keys,
    };
    // A failure deep inside stops only that branch's walk; the keys found so far are kept.
    let _ = <super::Config as serde::Deserialize>::deserialize(probe);
    keys.into_inner()
}

#[derive(Debug)]
struct Stop(String);

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Stop(msg.to_string())
    }
}

#[derive(Clone, Copy)]
struct Probe<'a> {
    path: &'a str,
    keys: &'a RefCell<BTreeSet<String>>,
}

// `path` is borrowed, so each level owns its path in a String and lends it down.
impl<'a> Probe<'a> {
    fn at<'b>(&'b self, path: &'b str) -> Probe<'b>
    where
        'a: 'b,
    {
        Probe {
            path,
            keys: self.keys,
        }
    }
}

struct Fields<'a> {
    probe: Probe<'a>,
    fields: std::slice::Iter<'static, &'static str>,
    current: Option<String>,
}

impl<'de, 'a> MapAccess<'de> for Fields<'a> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        let Some(field) = self.fields.next() else {
            return Ok(None);
        };
        let path = if self.probe.path.is_empty() {
            (*field).to_owned()
        } else {
            format!("{}.{field}", self.probe.path)
        };
        self.probe.keys.borrow_mut().insert(path.clone());
        self.current = Some(path);
        seed.deserialize((*field).into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        let path = self.current.take().unwrap_or_default();
        seed.deserialize(self.probe.at(&path))
    }
}

struct One<'a> {
    probe: Probe<'a>,
    done: bool,
}

impl<'de, 'a> SeqAccess<'de> for One<'a> {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        seed.deserialize(self.probe).map(Some)
    }
}

struct Empty;

impl<'de> MapAccess<'de> for Empty {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _: K) -> Result<Option<K::Value>, Stop> {
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, _: V) -> Result<V::Value, Stop> {
        Err(Stop("no value".into()))
    }
}

impl<'de, 'a> Deserializer<'de> for Probe<'a> {
    type Error = Stop;

    // A value of a type of its own (ids, modes, lists of ids): a small number fits them all.
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_u64(1)
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_bool(false)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_i64(1)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_i64(1)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_i64(1)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_i64(1)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_u64(1)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_u64(1)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_u64(1)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_u64(1)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_f64(1.0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_f64(1.0)
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_char('a')
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_str("1")
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_str("1")
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_bytes(b"1")
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_bytes(b"1")
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_some(self)
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Stop> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Stop> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_seq(One {
            probe: self,
            done: false,
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, v: V) -> Result<V::Value, Stop> {
        v.visit_seq(One {
            probe: self,
            done: false,
        })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        v: V,
    ) -> Result<V::Value, Stop> {
        v.visit_seq(One {
            probe: self,
            done: false,
        })
    }
    // A map of free keys (a route's `match`): its keys are the user's, not the daemon's.
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_map(Empty)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Stop> {
        v.visit_map(Fields {
            probe: self,
            fields: fields.iter(),
            current: None,
        })
    }
    // An enum's unit variants are values (`on_expire = "fail"`): the first one will do.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Stop> {
        v.visit_enum(variants.first().copied().unwrap_or("").into_deserializer())
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_str("")
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Stop> {
        v.visit_unit()
    }
}

/// The keys a TOML text mentions, set or in a comment (`# approvals = 2`, `# [[identities]]`),
/// by the table they are under; the keys of an inline table count too
/// (`expiry = { after_secs = 60 }` mentions `expiry.after_secs`).
pub(super) fn mentioned(toml: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut table = String::new();
    for raw in toml.lines() {
        let line = raw.trim().trim_start_matches('#').trim();
        if let Some(header) = line
            .strip_prefix("[[")
            .and_then(|l| l.split("]]").next())
            .or_else(|| line.strip_prefix('[').and_then(|l| l.split(']').next()))
        {
            let header = header.trim();
            if !header.is_empty()
                && header
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.".contains(c))
            {
                table = header.to_owned();
                out.insert(table.clone());
                continue;
            }
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.".contains(c))
        {
            continue;
        }
        let path = if table.is_empty() {
            key.to_owned()
        } else {
            format!("{table}.{key}")
        };
        out.insert(path.clone());
        // An inline table's own keys.
        if let Some(inner) = value.trim().strip_prefix('{') {
            for part in inner.split(',') {
                if let Some((k, _)) = part.split_once('=') {
                    let k = k.trim().trim_start_matches('{').trim();
                    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        out.insert(format!("{path}.{k}"));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README and docs/contract.md promise that the example config has every key: a key the
    /// daemon accepts and the example does not mention (set, or in a comment) fails here.
    #[test]
    fn the_example_config_mentions_every_key_the_daemon_accepts() {
        let accepted = accepted();
        // The walk itself reaches the corners (a list's entries, an inline table, a nested
        // list of tables), or this test would prove nothing.
        for key in [
            "socket_path",
            "discord.token",
            "routes.channel_id",
            "routes.expiry.after_secs",
            "routes.escalate.after_secs",
            "identities.hosts",
            "cluster.node_id",
        ] {
            assert!(
                accepted.contains(key),
                "the walk missed {key}: {accepted:?}"
            );
        }
        let example = include_str!("../../config/askrelay.example.toml");
        let mentioned = mentioned(example);
        let missing: Vec<&String> = accepted
            .iter()
            .filter(|k| !mentioned.contains(*k))
            .collect();
        assert!(
            missing.is_empty(),
            "config/askrelay.example.toml does not mention these keys the daemon accepts:\n{}",
            missing
                .iter()
                .map(|k| format!("  {k}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    #[test]
    fn mentions_are_read_from_comments_tables_and_inline_tables() {
        let m = mentioned(
            "a = 1\n# [[routes]]\n# name = \"x\"\nexpiry = { after_secs = 60, on_expire = \"fail\" }\n[discord]\n#token = \"\"\n",
        );
        for k in [
            "a",
            "routes",
            "routes.name",
            "routes.expiry",
            "routes.expiry.after_secs",
            "routes.expiry.on_expire",
            "discord.token",
        ] {
            assert!(m.contains(k), "{k}: {m:?}");
        }
    }
}
