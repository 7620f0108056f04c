//! The console's screens, a file each: the incident list (with the monitors pane under
//! it) and the incident detail (with the proposal body and the receipt it can show).

pub mod detail;
pub mod list;
pub mod monitors;
pub mod proposal;
pub mod receipt;
