//! The console's screens, each a component that owns its state, handles its keys
//! (`handle`, the actions the registry in `keys.rs` gives them) and draws itself: the
//! incident list with the monitors pane under it (`list.rs`, `monitors.rs`), and the
//! incident detail (`detail/`: its state and keys, its deciding keys, its drawing),
//! with the proposal body and the receipt it can show.

pub mod detail;
pub mod list;
pub mod monitors;
pub mod proposal;
pub mod receipt;
