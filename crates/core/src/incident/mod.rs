//! Incidents: opened on a breach, deduplicated on (monitor, table), closed only after
//! verification passes. Diagnosis and receipts live beside them.

pub mod access_receipt;
pub mod diagnosis;
pub mod failed_run;
pub mod migration_receipt;
pub mod receipt;
