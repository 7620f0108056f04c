//! The engine's thread never waits on the outside world: a warehouse, an orchestrator,
//! a subprocess. Whatever runs the engine's one thread marks it ([`mark_engine_thread`]);
//! the places that read a warehouse or an orchestrator for a poll say so
//! ([`outside_world`]), and a debug build stops at once when one is asked on the engine's
//! thread, so the demo and the tests find a read that slipped back onto it.

use std::cell::Cell;

thread_local! {
    static ENGINE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// This thread is the engine's: from now on it may not wait on the outside world.
pub fn mark_engine_thread() {
    ENGINE_THREAD.with(|marked| marked.set(true));
}

/// Whether this thread is the engine's.
pub fn on_engine_thread() -> bool {
    ENGINE_THREAD.with(Cell::get)
}

/// About to wait on the outside world for `what`: never on the engine's thread (checked
/// in debug builds; a release build carries on).
pub fn outside_world(what: &str) {
    debug_assert!(
        !on_engine_thread(),
        "{what} was read on the engine's thread: it belongs on a worker"
    );
}
