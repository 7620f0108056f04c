//! Effects: what dataward does to the world outside its state database, carried out on
//! workers below the engine's step and reported back to it as outcomes. The
//! orchestrators (dbt Cloud, dbt Core, Airflow, or a kind the binary registers) live
//! here; they name neither the engine nor the protocol.

pub mod orchestrator;
