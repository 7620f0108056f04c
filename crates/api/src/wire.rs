//! Frames on the engine's Unix socket: a 4-byte big-endian length, then that many bytes
//! of JSON (one `ClientMessage` or `ServerMessage`). Lengths are bounded both ways, so a
//! client that sends garbage or a huge length costs the server a few bytes and a
//! closed connection, never its memory.

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A client's frames are commands and presence: small.
pub const MAX_CLIENT_FRAME: usize = 64 * 1024;
/// A server's frames carry whole snapshots (thousands of incidents with their blast
/// radius and diffs).
pub const MAX_SERVER_FRAME: usize = 256 * 1024 * 1024;

#[derive(Debug)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    Closed,
    Io(io::Error),
    TooLarge {
        length: usize,
        max: usize,
    },
    /// Not a message of this protocol.
    Malformed(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Closed => write!(f, "the connection closed"),
            FrameError::Io(e) => write!(f, "{e}"),
            FrameError::TooLarge { length, max } => {
                write!(f, "a frame of {length} bytes is over the limit of {max}")
            }
            FrameError::Malformed(e) => write!(f, "not a dataward message: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Encodes one message as a whole frame, length included.
pub fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("protocol messages serialize");
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

pub fn send<T: Serialize>(writer: &mut impl Write, message: &T) -> io::Result<()> {
    writer.write_all(&encode(message))?;
    writer.flush()
}

/// Reads one frame of at most `max` bytes and decodes it.
pub fn receive<T: DeserializeOwned>(reader: &mut impl Read, max: usize) -> Result<T, FrameError> {
    let mut length = [0u8; 4];
    match reader.read_exact(&mut length) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let length = u32::from_be_bytes(length) as usize;
    if length > max {
        return Err(FrameError::TooLarge { length, max });
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            FrameError::Closed
        } else {
            FrameError::Io(e)
        }
    })?;
    serde_json::from_slice(&body).map_err(|e| FrameError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientMessage, Command, Request};

    #[test]
    fn a_frame_round_trips() {
        let message = ClientMessage::Request(Request {
            id: 7,
            command: Command::LiftStop,
            client_request: Some("0123456789abcdef".into()),
        });
        let frame = encode(&message);
        let back: ClientMessage = receive(&mut frame.as_slice(), MAX_CLIENT_FRAME).unwrap();
        assert_eq!(back, message);
    }

    #[test]
    fn a_huge_length_is_refused_before_anything_is_allocated() {
        let frame = u32::MAX.to_be_bytes();
        let err = receive::<ClientMessage>(&mut frame.as_slice(), MAX_CLIENT_FRAME).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn garbage_and_cut_frames_are_errors_not_panics() {
        let mut garbage = 5u32.to_be_bytes().to_vec();
        garbage.extend_from_slice(b"hello");
        let err = receive::<ClientMessage>(&mut garbage.as_slice(), MAX_CLIENT_FRAME).unwrap_err();
        assert!(matches!(err, FrameError::Malformed(_)), "{err}");
        let cut = &encode(&ClientMessage::Hello {
            protocol: 1,
            read_only: false,
        })[..6];
        let err = receive::<ClientMessage>(&mut &cut[..], MAX_CLIENT_FRAME).unwrap_err();
        assert!(matches!(err, FrameError::Closed), "{err}");
    }
}
