//! askrelay: lets AI agents ask people questions through Discord or the terminal.
//!
//! Layout: [`domain`] holds the rules and knows no platform (the core; named so as not to shadow
//! Rust's own `core`); [`store`] is the only code that touches SQL; [`server`] and [`protocol`]
//! are the socket front end; [`answerer`] holds the platforms; [`client`] and [`cli`] are the command line; [`http`], [`metrics`], [`systemd`],
//! [`retention`] and [`memory`] serve operators; [`daemon`] wires it all together.

pub mod answerer;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod config;
pub mod crash;
pub mod daemon;
pub mod domain;
pub mod front;
pub mod http;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod protocol;
pub mod retention;
pub mod server;
pub mod store;
pub mod systemd;
