//! The value types of the configuration with rules of their own: the bot token that never
//! prints, the socket's file mode, Discord snowflakes and uids, as strings or numbers.

use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::fmt;

/// The bot token. It never appears in `Debug` output, logs or errors.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself; call only where it is handed to the platform client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A Unix file mode written in octal, like "0600".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketMode(pub u32);

impl<'de> Deserialize<'de> for SocketMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = match StringOrInt::deserialize(d)? {
            StringOrInt::S(s) => s,
            StringOrInt::I(i) => i.to_string(),
        };
        let digits = s.trim().trim_start_matches("0o");
        match u32::from_str_radix(digits, 8) {
            Ok(m) if m <= 0o777 && !digits.is_empty() => Ok(SocketMode(m)),
            _ => Err(de::Error::custom(
                "socket_mode: expected an octal file mode like \"0600\" or \"0660\"",
            )),
        }
    }
}

/// A Discord id. Config accepts numbers or strings (TOML integers, env strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Snowflake(pub u64);

impl fmt::Display for Snowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrInt {
    S(String),
    I(u64),
}

fn parse_snowflake<E: de::Error>(v: StringOrInt) -> Result<Snowflake, E> {
    match v {
        StringOrInt::I(0) => Err(E::custom("a Discord id must not be 0")),
        StringOrInt::I(i) => Ok(Snowflake(i)),
        StringOrInt::S(s) => match s.trim().parse::<u64>() {
            Ok(i) if i > 0 => Ok(Snowflake(i)),
            _ => Err(E::custom(
                "expected a Discord id (a number like \"123456789012345678\")",
            )),
        },
    }
}

impl<'de> Deserialize<'de> for Snowflake {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse_snowflake(StringOrInt::deserialize(d)?)
    }
}

/// A list of ids: an array, or (from the environment) one id or a comma-separated string.
pub(super) fn snowflakes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Snowflake>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrOne {
        List(Vec<StringOrInt>),
        One(StringOrInt),
    }
    match ListOrOne::deserialize(d)? {
        ListOrOne::List(v) => v.into_iter().map(parse_snowflake).collect(),
        ListOrOne::One(StringOrInt::S(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| parse_snowflake(StringOrInt::S(p.to_owned())))
            .collect(),
        ListOrOne::One(i) => Ok(vec![parse_snowflake(i)?]),
    }
}

/// A list of uids: an array, or (from the environment) one uid or a comma-separated string.
pub(super) fn uids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrOne {
        List(Vec<StringOrInt>),
        One(StringOrInt),
    }
    let one = |v: StringOrInt| -> Result<u32, D::Error> {
        let n = match v {
            StringOrInt::I(i) => u32::try_from(i).ok(),
            StringOrInt::S(s) => s.trim().parse().ok(),
        };
        n.ok_or_else(|| de::Error::custom("expected a uid (a number like 1000)"))
    };
    match ListOrOne::deserialize(d)? {
        ListOrOne::List(v) => v.into_iter().map(one).collect(),
        ListOrOne::One(StringOrInt::S(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| one(StringOrInt::S(p.to_owned())))
            .collect(),
        ListOrOne::One(i) => Ok(vec![one(i)?]),
    }
}

pub(super) fn opt_snowflakes<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<Snowflake>>, D::Error> {
    snowflakes(d).map(Some)
}
