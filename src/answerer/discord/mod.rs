//! The Discord answerer: questions become messages with components; clicks, selections and
//! modal submissions become settlements through the hub.

pub mod custom_id;
pub mod render;
