//! OpenLineage in: run events as Airflow's OpenLineage provider, `dbt-ol` and other
//! producers emit them, read into dataward's own types.
//!
//! - `events`: one event (a request body or a JSONL line) into a [`RunEvent`], or a
//!   refusal naming the field and what is wrong.
//! - `file_transport`: one bounded read of the JSONL file a file transport appends to,
//!   from a remembered position.
//! - `naming`: a dataset's namespace and name per the naming spec, and the monitored
//!   table it is in a configured warehouse.
//!
//! Nothing here stores, listens or decides: the engine turns events into runs, lineage
//! and incidents.

mod events;
mod file_transport;
mod naming;

pub use events::{
    parse_event, read_event, Dataset, ErrorMessage, EventError, EventType, JobName, OutputDataset,
    ParentRun, Run, RunEvent,
};
pub use file_transport::{read_from, Limits, LineError, Position, TailError, TailRead};
pub use naming::{table_in, Place, Source};
