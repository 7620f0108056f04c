//! Reading the JSONL file that OpenLineage's file transport writes (`transport: {type:
//! file, log_file_path: ..., append: true}` in `openlineage.yml`): one event per line,
//! appended as runs move.
//!
//! [`read_from`] is one read of it: from a remembered [`Position`] to the end of the last
//! complete line, at most [`Limits`] worth. The caller keeps the position it returns and
//! passes it back next time, so nothing is read twice and nothing skipped:
//! - a last line without its newline is a write still under way: it is left for the
//!   next read, not refused;
//! - a file shorter than the position, or a different file at the same path (rotated:
//!   another inode), is read again from its start;
//! - a line that is not a valid event is refused with its line number and the reason,
//!   and reading goes on with the next line: one bad producer does not stop the rest.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::events::{parse_event, EventError, RunEvent};

/// Where the next read starts. Kept by the caller between reads (and across restarts,
/// once the engine stores it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    /// Bytes already read: always the end of a complete line (or 0).
    pub offset: u64,
    /// Lines already read, so messages name the line as an editor counts it.
    pub lines: u64,
    /// The file's identity when it was read (its inode on Unix): another file at the
    /// same path is read from its start. `None` before the first read.
    pub file_id: Option<u64>,
}

/// How much one read may take, so a flood of events costs bounded memory: what is over
/// is left in the file for the next read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// At most this many lines (events and refusals together).
    pub max_lines: usize,
    /// At most this many bytes read; also the longest line accepted.
    pub max_bytes: usize,
}

impl Default for Limits {
    /// A thousand events, 8 MiB: far above what a scheduler writes between two polls,
    /// and an event (with schema and SQL facets) is rarely over a few hundred KiB.
    fn default() -> Limits {
        Limits {
            max_lines: 1_000,
            max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// What one read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailRead {
    /// The events, in file order, each with its line number.
    pub events: Vec<(u64, RunEvent)>,
    /// The lines refused, in file order.
    pub refused: Vec<LineError>,
    /// Where the next read starts.
    pub next: Position,
    /// The file was truncated or replaced since the last read, so this read began at
    /// its start.
    pub restarted: bool,
    /// Bytes after `next.offset` not read this time: a line still being written, or
    /// lines over the limits (read them next time, without waiting for more writes).
    pub unread_bytes: u64,
    /// A limit stopped the read before the last complete line.
    pub limited: bool,
}

/// A line that is not a valid event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The file, as the path it was read by.
    pub file: String,
    /// Counted from 1.
    pub line: u64,
    /// Where the line starts in the file.
    pub offset: u64,
    pub error: EventError,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} line {}: {}", self.file, self.line, self.error)
    }
}

/// The file could not be read at all (the position is unchanged).
#[derive(Debug)]
pub struct TailError {
    pub file: String,
    pub error: io::Error,
}

impl std::fmt::Display for TailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reading OpenLineage events from {}: {}",
            self.file, self.error
        )
    }
}

impl std::error::Error for TailError {}

/// Read the complete lines of `path` after `from`, within `limits`.
pub fn read_from(path: &Path, from: Position, limits: Limits) -> Result<TailRead, TailError> {
    let failed = |error| TailError {
        file: path.display().to_string(),
        error,
    };
    let mut file = File::open(path).map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    let file_id = file_identity(&meta);
    let replaced = from.file_id.is_some() && from.file_id != file_id;
    let restarted = replaced || meta.len() < from.offset;
    let start = if restarted {
        Position {
            offset: 0,
            lines: 0,
            file_id,
        }
    } else {
        Position { file_id, ..from }
    };
    file.seek(SeekFrom::Start(start.offset)).map_err(failed)?;
    let mut buffer = Vec::new();
    (&mut file)
        .take(limits.max_bytes as u64)
        .read_to_end(&mut buffer)
        .map_err(failed)?;
    let mut read = TailRead {
        events: Vec::new(),
        refused: Vec::new(),
        next: start,
        restarted,
        unread_bytes: 0,
        limited: false,
    };
    let mut consumed = 0usize;
    while let Some(end) = buffer[consumed..].iter().position(|&b| b == b'\n') {
        if read.events.len() + read.refused.len() >= limits.max_lines {
            read.limited = true;
            break;
        }
        let line = &buffer[consumed..consumed + end];
        let number = read.next.lines + 1;
        let offset = read.next.offset;
        consumed += end + 1;
        read.next.offset += end as u64 + 1;
        read.next.lines = number;
        match read_line(line) {
            None => {}
            Some(Ok(event)) => read.events.push((number, event)),
            Some(Err(error)) => read.refused.push(LineError {
                file: path.display().to_string(),
                line: number,
                offset,
                error,
            }),
        }
    }
    let rest = buffer.len() - consumed;
    if !read.limited && consumed == 0 && rest == limits.max_bytes {
        // One line fills the whole budget and has not ended: it can never be read
        // within the limits. Refuse it and step over it, so it cannot stall the file.
        // If it has not ended yet it is a write under way: wait for its newline.
        if let Some(length) =
            skip_line(&mut file, start.offset, limits.max_bytes).map_err(failed)?
        {
            read.next.lines += 1;
            read.next.offset += length;
            read.refused.push(LineError {
                file: path.display().to_string(),
                line: read.next.lines,
                offset: start.offset,
                error: EventError {
                    json_path: "$".to_string(),
                    problem: format!(
                        "the line is {length} bytes, over the {} bytes one read takes; skipped",
                        limits.max_bytes
                    ),
                },
            });
        }
    } else if start.offset + (buffer.len() as u64) < meta.len() {
        // The byte budget ended the read with more in the file.
        read.limited = true;
    }
    read.unread_bytes = meta.len().saturating_sub(read.next.offset);
    Ok(read)
}

/// One line: blank is nothing, else an event or why not.
fn read_line(line: &[u8]) -> Option<Result<RunEvent, EventError>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return Some(Err(EventError {
                json_path: "$".to_string(),
                problem: format!("not UTF-8 text ({e})"),
            }))
        }
    };
    if text.trim().is_empty() {
        return None;
    }
    Some(parse_event(text))
}

/// The length of the line starting at `start` with its newline, read in pieces and
/// discarded; `None` if the file ends before the newline.
fn skip_line(file: &mut File, start: u64, piece: usize) -> io::Result<Option<u64>> {
    file.seek(SeekFrom::Start(start))?;
    let mut buffer = vec![0u8; piece.clamp(1, 64 * 1024)];
    let mut length = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(at) = buffer[..n].iter().position(|&b| b == b'\n') {
            return Ok(Some(length + at as u64 + 1));
        }
        length += n as u64;
    }
}

#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(meta.ino())
}

#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata) -> Option<u64> {
    None
}
