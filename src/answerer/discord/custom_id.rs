//! custom_id encoding (being written).
