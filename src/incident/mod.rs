//! Incidents: opened on a breach, deduplicated on (monitor, table), closed only after
//! verification passes. Diagnosis, receipts and timelines live beside them.

pub mod diagnosis;
pub mod receipt;
pub mod timeline;
